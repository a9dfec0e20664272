"""``create_app(runtime)``: the ASGI application of ``agentsession serve``.

Starlette routes over one ``Runtime``: session management, turns as Server-Sent Events, the
log followed live, inspection, the OpenAPI document and a small web UI. Every failure is JSON
``{"error": {"type", "message", "retryable"}}`` with a fitting status. On shutdown running turns
get ``shutdown_grace`` seconds to finish; the rest are cancelled and recorded as cancelled.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..engine.leases import live_lease
from ..errors import AgentSessionError, ConflictError
from ..permissions import preset_table
from ..runtime import Runtime
from .access_log import AccessLog
from .auth import Tokens
from .cancels import Cancels
from .docs_page import DOCS_POLICY, docs_page
from .guard import Guard
from .health import health_routes
from .idle_pass import IdlePass
from .inspect_pool import DEFAULT_SMALLEST, InspectPool
from .inspect_routes import inspect_routes
from .models import ModelResolver, ServerModels
from .notify import Notifier
from .openapi import openapi_document
from .owners import Owners
from .preset_ceiling import PresetCeiling, PresetNotAllowedError
from .search_routes import search_routes
from .sessions import session_routes
from .state import (
    BodyTooLargeError,
    LogMovedError,
    NotAuthorizedError,
    NoTurnError,
    ServerState,
)
from .turn_routes import lease_details, turn_routes
from .turns import ObserverOf, Turns
from .ui_page import ui_routes
from .wire import error_body, status_of
from .workspaces import Workspaces

__all__ = ["create_app"]

#: Bytes a request body may hold unless ``create_app`` is told otherwise.
DEFAULT_MAX_BODY = 4 * 1024 * 1024


async def _no_route(request: Request, exc: Exception) -> Response:
    # Starlette answers an unknown path or method in plain text; a client reads JSON here.
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        kind, said = "MethodNotAllowedError", f"{request.method} is not served here"
    else:
        kind, said = "NotFoundError", "no such route (see /openapi.json)"
    if exc.status_code not in (404, 405):
        kind, said = "HTTPError", str(exc.detail)
    body = {"error": {"type": kind, "message": said, "retryable": False}}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def create_app(
    runtime: Runtime,
    *,
    tokens: Iterable[str] = (),
    open_tokens: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
    max_body: int = DEFAULT_MAX_BODY,
    shutdown_grace: float = 10.0,
    observer: ObserverOf | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
    workspaces: str | Path | None = None,
    models: ModelResolver | None = None,
    idle_interval: float | None = None,
    inspect_workers: int = 1,
    inspect_from: int = DEFAULT_SMALLEST,
    allow_presets: Iterable[str] = (),
) -> Starlette:
    """The ASGI app serving ``runtime``'s sessions over HTTP.

    ``tokens`` (plain or ``sha256:<hex>``) turn on bearer authentication: each token names an
    owner and sees only its own sessions; ``open_tokens`` authenticate without naming an owner
    and see every session (``serve`` makes one per run). Whatever the tokens, the server answers
    only requests for loopback names and ``allowed_hosts`` (``"*"``: any), from no page but its
    own, and state-changing ones only with a JSON body (``guard``). ``max_body`` caps request
    bodies (413 beyond).
    ``observer`` sees every turn (``agentsession.server.telemetry.otel_observer`` makes spans).
    ``on_shutdown`` runs last when the app shuts down (closing a runtime the app owns).
    ``workspaces``: a folder under which each session works in a folder of its own (per owner,
    then per session); without it sessions work in ``runtime.project_dir`` — give such a
    runtime no file or command tools (``agentsession serve`` does not).
    ``models`` resolves the model name a client gives a session (``POST``/``PATCH``
    ``/sessions``) to a model ready to call; without it only ``runtime.model`` is offered.
    ``idle_interval``: run the idle pass (``server.idle_pass``) every that many seconds: each
    recently used session no turn runs is given one ``tend_idle`` decision under its lease
    (it acts only with ``Config(idle_policy="auto")``); ``None``: no pass.
    ``inspect_workers``: child processes (started with the first) that answer ``/context``,
    ``/report`` and export of sessions of ``inspect_from`` entries or more, when the store is
    a SQLite file or PostgreSQL (``server.inspect_pool``); 0: always in this process.
    ``allow_presets``: permission presets clients may choose for a session beside the runtime's
    default preset (``Config.permission_preset``) and those within it (no capability more
    permissive); any other is refused with 403 (``server.preset_ceiling``). An unknown name
    here is a ``UsageError``.
    """
    ceiling = PresetCeiling.of(
        preset_table(runtime.config), runtime.config.permission_preset, allow_presets
    )
    notifier = Notifier(runtime.store)
    owners = Owners(runtime.store)
    offered = ServerModels(runtime.model, models)
    places = Workspaces(workspaces, runtime, owners, offered)
    state = ServerState(
        runtime=runtime,
        notifier=notifier,
        turns=Turns(runtime, notifier, observer, places.open, Cancels(runtime.store)),
        tokens=Tokens.of(tokens, open_tokens),
        owners=owners,
        max_body=max_body,
        workspaces=places,
        inspections=InspectPool(runtime.store, workers=inspect_workers, smallest=inspect_from),
        ceiling=ceiling,
    )

    idle = IdlePass(runtime, state.turns, idle_interval) if idle_interval else None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await notifier.start()
        if idle is not None:
            idle.start()
        try:
            yield
        finally:
            notifier.stopping = True
            if idle is not None:
                await idle.stop()
            await state.turns.close(shutdown_grace)
            await state.inspections.close()
            await notifier.close()
            await offered.close()
            if on_shutdown is not None:
                await on_shutdown()

    async def failed(request: Request, exc: Exception) -> Response:
        extra: dict[str, Any] = {}
        status = status_of(exc)
        if isinstance(exc, NotAuthorizedError):
            status = 401
        elif isinstance(exc, BodyTooLargeError):
            status = 413
        elif isinstance(exc, NoTurnError):
            status = 409
        elif isinstance(exc, LogMovedError):
            status = 409
            extra = {} if exc.entries is None else {"entries": exc.entries}
        elif isinstance(exc, PresetNotAllowedError):
            status = 403
            extra = {"allowed_presets": list(exc.allowed)}
        elif isinstance(exc, ConflictError) and "id" in request.path_params:
            with contextlib.suppress(Exception):
                lease = await live_lease(runtime.store, request.path_params["id"])
                extra = lease_details(lease.expires_at if lease else None)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse(error_body(exc, **extra), status_code=status, headers=headers)

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def docs(request: Request) -> Response:
        return HTMLResponse(docs_page(), headers={"Content-Security-Policy": DOCS_POLICY})

    routes = [
        *ui_routes(),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
        *health_routes(),
        *session_routes(),
        *turn_routes(),
        *inspect_routes(),
        *search_routes(),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(Guard, allowed_hosts=tuple(allowed_hosts))],
        lifespan=lifespan,
        exception_handlers={
            AgentSessionError: failed,
            HTTPException: _no_route,
            Exception: failed,
        },
    )
    app.add_middleware(AccessLog, owner_of=state.tokens.owner)
    app.state.server = state
    app.state.idle_pass = idle
    return app
