"""``GET /search?q=…``: the caller's messages holding every word, newest first.

The store's full-text search (``Runtime.search``) over every session, each hit with its
session's title; a caller with an owner sees hits in its own sessions only. The store searches
every owner's sessions, so for an owner it is asked for more hits than shown and the others'
are dropped: an owner with few matches among many other owners' may see fewer than ``limit``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import SessionNotFoundError, UsageError
from .state import ServerState

__all__ = ["search_routes"]

_MAX = 100
#: How many hits the store is asked for per hit shown when the caller sees only its own.
_OVERSHOOT = 5


async def search(request: Request) -> Response:
    state: ServerState = request.app.state.server
    owner = state.caller(request)
    text = request.query_params.get("q", "").strip()
    if not text:
        raise UsageError("query parameter 'q' holds the words to find")
    raw = request.query_params.get("limit", "20")
    if not raw.isdecimal():
        raise UsageError(f"query parameter 'limit' must be a whole number, got {raw!r}")
    limit = min(max(int(raw), 1), _MAX)
    asked = limit if owner is None else limit * _OVERSHOOT
    hits = await state.runtime.search(text, limit=asked)
    if owner is not None:
        mine = await state.owners.owned(owner)
        hits = [hit for hit in hits if hit.session_id in mine]
    hits = hits[:limit]
    titles: dict[str, str | None] = {}
    for hit in hits:
        if hit.session_id not in titles:
            try:
                info = await state.runtime.store.get_session(hit.session_id)
                titles[hit.session_id] = info.title
            except SessionNotFoundError:  # deleted since the index was read
                titles[hit.session_id] = None
    found = [
        {
            "session_id": hit.session_id,
            "title": titles[hit.session_id],
            "seq": hit.seq,
            "role": hit.role,
            "snippet": hit.snippet,
        }
        for hit in hits
    ]
    return JSONResponse({"query": text, "hits": found})


def search_routes() -> list[Route]:
    """The search route."""
    return [Route("/search", search, methods=["GET"])]
