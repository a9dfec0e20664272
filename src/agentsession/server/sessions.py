"""Routes that manage sessions: create, list (paged), get, rename, fork, delete, export, import.

An import is stored under a new id unless the caller's token owns the id the file names.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..engine.leases import live_lease
from ..errors import SessionBusyError, UsageError
from ..log import LogEntry
from ..store.base import SessionInfo
from ..store.session_file import render_session_file
from .inspect_pool import EXPORT_MEDIA, export_headers
from .listing import decode_cursor, session_page
from .models import Settings
from .spooled_body import body_response
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
    if not raw.isdecimal():
        raise UsageError(f"query parameter {name!r} must be a whole number, got {raw!r}")
    return int(raw)


async def list_sessions(request: Request) -> Response:
    """A page of sessions (``?limit=``, ``?cursor=`` from the page before): one page read."""
    state = _state(request)
    owner = state.caller(request)
    limit = min(max(_int(request, "limit", 50), 1), 500)
    raw = request.query_params.get("cursor")
    after = decode_cursor(raw) if raw else None
    keep = None
    if owner is not None:
        mine = await state.owners.owned(owner)
        keep = mine.__contains__
    page, cursor = await session_page(state.runtime.store, limit, after, keep)
    return JSONResponse({"sessions": [info_json(info) for info in page], "next_cursor": cursor})


def _skills(state: ServerState, value: object) -> tuple[str, ...]:
    """A session's default skill selection as a client gave it (``UsageError`` when unknown)."""
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise UsageError("'skills' must be a list of skill names")
    if not value:
        return ()
    offered = state.runtime.skill_set().names()
    unknown = [name for name in value if name not in offered]
    if unknown:
        known = ", ".join(offered) or "none"
        raise UsageError(f"unknown skill {unknown[0]!r}; this server's skills: {known}")
    return tuple(dict.fromkeys(value))


async def _described(state: ServerState, session_id: str) -> dict[str, Any]:
    """A session's row with its settings: model, preset, skills, workspace."""
    info = await state.runtime.store.get_session(session_id)
    settings = await state.workspaces.settings.get(session_id)
    found = info_json(info)
    found["model"] = settings.model or state.workspaces.models.default_name
    found["skills"] = list(settings.skills)
    found["workspace"] = state.workspaces.name_of(info.project_dir)
    return found


async def create_session(request: Request) -> Response:
    """``POST``: a new session (optional: title, model, preset, skills, workspace)."""
    state = _state(request)
    owner = state.caller(request)
    body = await state.json(request, ("title", "model", "preset", "skills", "workspace"))
    title = text_field(body, "title", required=False)
    model = text_field(body, "model", required=False)
    preset = text_field(body, "preset", required=False)
    skills = _skills(state, body.get("skills", []))
    name = body.get("workspace")
    if model is not None:
        state.workspaces.models.get(model)  # 400 before anything is stored
    if preset is not None:
        state.ceiling.check(preset)  # 400 or 403 before anything is stored
    session = await state.workspaces.create(owner, None if name is None else check_name(name))
    try:
        if owner is not None:
            await state.owners.set(session.id, owner)
        if model is not None or skills:
            await state.workspaces.settings.set(session.id, Settings(model, skills))
        if preset is not None:
            session.set_permission_preset(preset)
        if title:
            await session.rename(title)
        found = await _described(state, session.id)
        found["preset"] = session.permission_preset
    except BaseException:
        await session.close()
        with contextlib.suppress(Exception):
            await state.runtime.delete_session(session.id)
        raise
    await session.close()
    return JSONResponse(found, status_code=201)


async def get_session(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    session = await state.workspaces.open(session_id)
    try:
        found = await _described(state, session_id)
        found["running_here"] = session_id in state.turns.running
        found["waiting_approvals"] = [plain(a) for a in session.pending_approvals()]
        found["preset"] = session.permission_preset
        found["permission_preset"] = session.permission_preset  # the name of earlier releases
    finally:
        await session.close()
    return JSONResponse(found)


async def update_session(request: Request) -> Response:
    """``PATCH``: a new ``title``; a new ``model`` or permission ``preset`` (idle only: 409).

    Both are recorded as the library records them: ``switch_model`` (a ``model_switched``
    entry, a new epoch) and ``set_permission_preset`` (a ``permission_changed`` entry); the
    next request tells the model.
    """
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    body = await state.json(request, ("title", "preset", "model"))
    title = text_field(body, "title", required=False)
    preset = text_field(body, "preset", required=False)
    name = text_field(body, "model", required=False)
    if title is None and preset is None and name is None:
        raise UsageError("the request body needs a string field 'title', 'preset' or 'model'")
    if preset is not None:
        state.ceiling.check(preset)  # before anything changes, even the title
    model = state.workspaces.models.get(name) if name is not None else None
    # The idle pass holds the session for one call at most: a change waits for it, never 409.
    await state.turns.after_idle_pass(session_id)
    if (preset is not None or model is not None) and session_id in state.turns.running:
        raise SessionBusyError(f"session {session_id} is running a turn")
    session = await state.workspaces.open(session_id)
    try:
        if (preset is not None or model is not None) and await live_lease(
            state.runtime.store, session_id
        ):
            raise SessionBusyError(f"session {session_id} is running a turn")
        if preset is not None:
            # As the library records it: a permission_changed entry, told at the next request.
            session.set_permission_preset(preset)
        if model is not None:
            await session.switch_model(model)
            settings = await state.workspaces.settings.get(session_id)
            settings.model = name
            await state.workspaces.settings.set(session_id, settings)
        if title is not None:
            await session.rename(title)
        found = await _described(state, session_id)
        found["preset"] = session.permission_preset
    finally:
        await session.close()
    return JSONResponse(found)


async def delete_session(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    await state.runtime.delete_session(session_id)
    await state.owners.forget(session_id)
    await state.workspaces.settings.forget(session_id)
    return Response(status_code=204)


async def fork_session(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    owner = await state.allowed(request, session_id)
    at = (await state.json(request, ("at",))).get("at")
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
    # A fork talks to the model its session talked to, with the same default skills.
    await state.workspaces.settings.set(fork.id, await state.workspaces.settings.get(session_id))
    return JSONResponse(info_json(await state.runtime.store.get_session(fork.id)), status_code=201)


async def export_session(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    store = state.runtime.store
    # The folder is the server's own path (its workspace root, the owner's digest): a client
    # gets the log, not the server's layout. An import here gets a workspace of its own anyway.
    info = dataclasses.replace(await store.get_session(session_id), project_dir=None)
    if state.inspections.takes(info):
        sent = await state.inspections.answer("export", info)  # in another process
        if sent is not None:
            status, body = sent
            if status != 200:
                return body_response(status, body, media_type="application/json")
            headers = export_headers(session_id)
            return body_response(status, body, media_type=EXPORT_MEDIA, headers=headers)
    entries: list[LogEntry] = []
    for start in range(0, info.next_seq, _PAGE):
        page = await store.read(session_id, start, min(start + _PAGE, info.next_seq))
        entries.extend(record.entry for record in page)
    return Response(
        await asyncio.to_thread(render_session_file, info, entries),  # off the event loop
        media_type=EXPORT_MEDIA,
        headers=export_headers(session_id),
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
