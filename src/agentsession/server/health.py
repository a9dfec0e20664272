"""Health: ``GET /healthz`` (the process answers), ``GET /readyz`` (it can serve sessions).

Readiness asks the store one small question — a session that does not exist — with a bound:
an answer (even "no such session") means the database is reachable and its schema is one this
release reads; a store error or no answer in time means not ready, with a short reason. The
reason never carries the database's address, user, password or file path: ``store_problem``
turns a driver's words into one of a few plain causes, and ``serve`` says the same at start.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import SessionNotFoundError, StoreError
from ..store.base import Store

__all__ = ["check_store", "health_routes", "store_problem"]

#: Seconds a readiness check waits for the store.
READY_WITHIN = 5.0
_PROBE = "readiness-probe-0000000000000000"

#: A driver's words → the cause told to a client (first match wins; the words are never shown).
_CAUSES = (
    (
        ("agentsession upgrade",),
        "the database schema is older than this release reads: run `agentsession upgrade`",
    ),
    (("newer",), "the database schema is newer than this release reads"),
    # Reachable, but every write refused: a read-only file or replica, a full disk.
    (("readonly", "read-only"), "the database refuses writes (it is read-only)"),
    (("disk is full", "no space left"), "the database's disk is full"),
    (("password", "authentication"), "the database refused the credentials"),
    (("does not exist",), "the database does not exist"),
    (("permission denied",), "the database refused access"),
    (
        ("refused", "no such file", "is the server running"),
        "the database server is not running or refuses connections",
    ),
    (("timeout", "timed out"), "the database server did not answer in time"),
)


def store_problem(exc: BaseException) -> str:
    """What is wrong with the store, in words safe to show anyone (no address, no path)."""
    if isinstance(exc, TimeoutError):
        return f"the database did not answer within {READY_WITHIN:.0f} s"
    said = " ".join(str(part) for part in (exc, exc.__cause__) if part is not None).lower()
    for words, cause in _CAUSES:
        if any(word in said for word in words):
            return cause
    return "the database cannot be reached"


async def check_store(store: Store, within: float = READY_WITHIN) -> str | None:
    """``None`` when the store answers in time, else why not (``store_problem``)."""
    try:
        await asyncio.wait_for(store.get_session(_PROBE), within)
    except SessionNotFoundError:
        return None
    except (StoreError, TimeoutError, OSError) as exc:
        return store_problem(exc)
    return None


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    problem = await check_store(request.app.state.server.runtime.store)
    if problem is None:
        return JSONResponse({"status": "ready"})
    return JSONResponse({"status": "not_ready", "reason": problem}, status_code=503)


def health_routes() -> list[Route]:
    """The health and readiness routes (they need no token: they tell nothing of sessions)."""
    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]
