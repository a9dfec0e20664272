"""Routes that manage sessions: create, list (paged), get, rename, fork, delete, export, import.

An import is stored under a new id unless the caller's token owns the id the file names.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import SessionBusyError, UsageError
from ..log import LogEntry
from ..store.base import SessionInfo
from ..store.session_file import render_session_file
from .state import ServerState, text_field
from .wire import plain
from .workspaces import check_name

__all__ = ["info_json", "session_routes"]

_PAGE = 500


def info_json(info: SessionInfo) -> dict[str, Any]:
    """A session's row as JSON."""
    return {
        "id": info.id,
        "title": info.title,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "entries": info.next_seq,
        "message_count": info.message_count,
        "last_model": info.last_model,
    }


def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit():
        raise UsageError(f"query parameter {name!r} must be a whole number, got {raw!r}")
    return int(raw)


async def list_sessions(request: Request) -> Response:
    state = _state(request)
    owner = state.caller(request)
    limit = min(max(_int(request, "limit", 50), 1), 500)
    offset = _int(request, "offset", 0)
    found = await state.runtime.list_sessions()
    if owner is not None:
        mine = await state.owners.owned(owner)
        found = [info for info in found if info.id in mine]
    page = found[offset : offset + limit]
    after = offset + limit
    return JSONResponse(
        {
            "sessions": [info_json(info) for info in page],
            "total": len(found),
            "next_offset": after if after < len(found) else None,
        }
    )


async def create_session(request: Request) -> Response:
    state = _state(request)
    owner = state.caller(request)
    body = await state.json(request)
    title = text_field(body, "title", required=False)
    name = body.get("workspace")
    session = await state.workspaces.create(owner, None if name is None else check_name(name))
    try:
        if owner is not None:
            await state.owners.set(session.id, owner)
        if title:
            await session.rename(title)
    finally:
        await session.close()
    info = await state.runtime.store.get_session(session.id)
    found = info_json(info)
    found["workspace"] = state.workspaces.name_of(info.project_dir)
    return JSONResponse(found, status_code=201)


async def get_session(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    session = await state.workspaces.open(session_id)
    try:
        info = await state.runtime.store.get_session(session_id)
        found = info_json(info)
        found["running_here"] = session_id in state.turns.running
        found["waiting_approvals"] = [plain(a) for a in session.pending_approvals()]
        found["permission_preset"] = session.permission_preset
        found["workspace"] = state.workspaces.name_of(info.project_dir)
    finally:
        await session.close()
    return JSONResponse(found)


async def update_session(request: Request) -> Response:
    """``PATCH``: a new ``title``, a new permission ``preset`` (idle only: 409 during a turn)."""
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    body = await state.json(request)
    title = text_field(body, "title", required=False)
    preset = text_field(body, "preset", required=False)
    if title is None and preset is None:
        raise UsageError("the request body needs a string field 'title' or 'preset'")
    if preset is not None and session_id in state.turns.running:
        raise SessionBusyError(f"session {session_id} is running a turn")
    session = await state.workspaces.open(session_id)
    try:
        if preset is not None:
            # As the library records it: a permission_changed entry, told at the next request.
            session.set_permission_preset(preset)
        if title is not None:
            await session.rename(title)
    finally:
        await session.close()
    return JSONResponse(info_json(await state.runtime.store.get_session(session_id)))


async def delete_session(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    await state.runtime.delete_session(session_id)
    await state.owners.forget(session_id)
    return Response(status_code=204)


async def fork_session(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    owner = await state.allowed(request, session_id)
    at = (await state.json(request)).get("at")
    if at is not None and (not isinstance(at, int) or isinstance(at, bool) or at < 0):
        raise UsageError("'at' must be a log seq (a whole number, 0 or more)")
    session = await state.workspaces.open(session_id)
    try:
        fork = await session.fork(at)
    finally:
        await session.close()
    await fork.close()
    if owner is not None:
        await state.owners.set(fork.id, owner)
    return JSONResponse(info_json(await state.runtime.store.get_session(fork.id)), status_code=201)


async def export_session(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    store = state.runtime.store
    info = await store.get_session(session_id)
    entries: list[LogEntry] = []
    for start in range(0, info.next_seq, _PAGE):
        page = await store.read(session_id, start, min(start + _PAGE, info.next_seq))
        entries.extend(record.entry for record in page)
    return Response(
        render_session_file(info, entries),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{session_id}.jsonl"'},
    )


async def import_session(request: Request) -> Response:
    state = _state(request)
    owner = state.caller(request)
    raw = await state.body(request)
    copy = request.query_params.get("copy") in ("1", "true", "yes")
    handle, name = tempfile.mkstemp(suffix=".jsonl")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(raw)
        keep = not copy and await _owns_file_id(state, owner, raw)
        new_id = None if keep else os.urandom(16).hex()
        session = await state.runtime.import_session(Path(name), new_id=new_id)
    finally:
        await asyncio.to_thread(Path(name).unlink, missing_ok=True)
    await session.close()
    if owner is not None:
        await state.owners.set(session.id, owner)
    return JSONResponse(
        info_json(await state.runtime.store.get_session(session.id)), status_code=201
    )


async def _owns_file_id(state: ServerState, owner: str | None, raw: bytes) -> bool:
    """Whether the caller owns the session id the file names, so the import may keep it.

    Only a token's owner owns anything: without a token (``--no-auth``) or with the run's token
    the caller owns no id, and every import gets a new one, so no page or other program can know
    the id of a session it imported in the user's name.
    """
    if owner is None:
        return False
    first = raw.split(b"\n", 1)[0]
    try:
        header = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False  # the import itself says what is wrong with the file
    named = header.get("id") if isinstance(header, dict) else None
    return isinstance(named, str) and await state.owners.get(named) == owner


def session_routes() -> list[Route]:
    """The session management routes."""
    return [
        Route("/sessions", list_sessions, methods=["GET"]),
        Route("/sessions", create_session, methods=["POST"]),
        Route("/sessions/import", import_session, methods=["POST"]),
        Route("/sessions/{id}", get_session, methods=["GET"]),
        Route("/sessions/{id}", update_session, methods=["PATCH"]),
        Route("/sessions/{id}", delete_session, methods=["DELETE"]),
        Route("/sessions/{id}/fork", fork_session, methods=["POST"]),
        Route("/sessions/{id}/export", export_session, methods=["GET"]),
    ]
