"""Routes that run and follow turns: prompt, events, approvals, resume and retry, cancel, input.

``POST /sessions/{id}/prompt`` answers with the turn's Server-Sent Events: live events (text
deltas, tool calls, results) without an id, and every log entry under its seq as the SSE id;
the last event carries the answer. ``GET /sessions/{id}/events`` replays the log after
``Last-Event-ID`` (or ``?after=N``) and then follows it live, whichever process runs the turn.
Errors before a turn's first event are answered as JSON with their status (409 while another
process drives the session, with when its lease ends).
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..engine.inbox import PendingInput
from ..engine.leases import live_lease, new_owner
from ..errors import UsageError
from ..session import Session
from .follow import follow_log
from .lease_wait import released
from .state import Decision, LogMovedError, NoTurnError, ServerState, text_field
from .turns import TurnRun
from .wire import entry_json, plain

__all__ = ["turn_routes"]

#: At most this many entries after a prompt's ``after`` come with its 409 (a turn's worth).
_MOVED_SHOWN = 100
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


def _stream(run: TurnRun) -> Response:
    return StreamingResponse(run.listen(), media_type="text/event-stream", headers=_SSE_HEADERS)


async def prompt(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    body = await state.json(request, ("text", "skills", "after"))
    text = text_field(body, "text")
    assert text is not None
    if not text.strip():
        raise UsageError("the prompt text is empty")
    given = body.get("skills")
    if given is not None and (
        not isinstance(given, list) or not all(isinstance(name, str) for name in given)
    ):
        raise UsageError("'skills' must be a list of skill names")
    # Without ``skills`` the session's default selection (``POST /sessions``), read with the
    # rest of what opening the session reads rather than one more round trip before it.
    skills: list[str] = list(given) if given is not None else []
    after = _known_end(body)

    async def opened(sid: str) -> Session:
        session, settings = await state.workspaces.open_with_settings(sid)
        if after is not None and session.next_seq != after + 1:
            try:
                moved = None
                if after + 1 < session.next_seq <= after + 1 + _MOVED_SHOWN:
                    moved = [entry_json(r) for r in await session.log(after + 1)]
            finally:
                await session.close()
            raise LogMovedError(
                f"session {sid}: the log has moved on past seq {after} (its last entry is"
                f" {session.next_seq - 1}); read it before sending the prompt again",
                moved,
            )
        if given is None:
            skills.extend(settings.skills)
        return session

    run = await state.turns.start(
        session_id, lambda session: session.stream(text, skills=skills), opener=opened
    )
    return _stream(run)


def _known_end(body: dict[str, Any]) -> int | None:
    """A prompt's ``after``: the seq of the log's last entry as the client knows it.

    The prompt is admitted only while the log still ends there: a client whose stream broke
    before it showed the prompt sends it again this way, and it can never run twice — a log
    that holds it has moved on (409, and the client reads it), and one written after the open
    refuses the admission's append (its expected seq). ``-1``: the log is empty.
    """
    after = body.get("after")
    if after is None:
        return None
    if isinstance(after, bool) or not isinstance(after, int) or after < -1:
        raise UsageError("'after' is the seq of the log's last entry you know (-1: none)")
    return after


def _after(request: Request) -> int:
    raw = request.headers.get("last-event-id") or request.query_params.get("after")
    if raw is None:
        return -1
    raw = raw.strip()
    if not (raw.isdecimal() or (raw.startswith("-") and raw[1:].isdecimal())):
        raise UsageError(f"Last-Event-ID / after must be a log seq, got {raw!r}")
    return max(int(raw), -1)


async def events(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    after = _after(request)
    info = await state.runtime.store.get_session(session_id)  # 404 before the stream starts
    if after >= info.next_seq:
        # No client saw that entry (entries go out once committed): a forged or stale id, or a
        # log restored from an older copy. Following from it would skip every entry up to it
        # in silence; the client starts again from its last real id, or from the start.
        raise UsageError(
            f"Last-Event-ID / after names seq {after}, but the log ends at seq"
            f" {info.next_seq - 1}: follow again without it (or with a seq you were sent)"
        )
    frames = follow_log(state.runtime.store, state.notifier, session_id, after)
    return StreamingResponse(frames, media_type="text/event-stream", headers=_SSE_HEADERS)


async def waiting(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    session = await state.workspaces.open(session_id)
    pending = session.pending_approvals()
    await session.close()
    answered = state.decisions.get(session_id, {})
    found = [plain(a) for a in pending if a.call_id not in answered]
    return JSONResponse({"waiting": found, "answered": sorted(answered)})


_DECISION_FIELDS = ("call_id", "approved", "always", "note")


def _decision(value: object) -> Decision:
    if not isinstance(value, dict):
        raise UsageError("a decision is an object with 'call_id' and 'approved'")
    unknown = sorted(set(value) - set(_DECISION_FIELDS))
    if unknown:
        raise UsageError(f"a decision takes only {', '.join(_DECISION_FIELDS)}; not {unknown}")
    call_id, approved = value.get("call_id"), value.get("approved")
    always, note = value.get("always", False), value.get("note", "")
    if not isinstance(call_id, str) or not isinstance(approved, bool):
        raise UsageError("a decision needs a string 'call_id' and a boolean 'approved'")
    if not isinstance(always, bool) or not isinstance(note, str):
        raise UsageError("'always' is a boolean and 'note' a string")
    return Decision(call_id, approved, always, note)


async def answer(request: Request) -> Response:
    """Answer one waiting call; kept here until ``resume`` runs the turn on."""
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    body = await state.json(request, _DECISION_FIELDS)
    decision = _decision({**body, "call_id": request.path_params["call_id"]})
    session = await state.workspaces.open(session_id)
    waiting_ids = [a.call_id for a in session.pending_approvals()]
    await session.close()
    if decision.call_id not in waiting_ids:
        raise UsageError(f"no tool call {decision.call_id!r} is waiting for approval")
    answered = state.decisions.setdefault(session_id, {})
    answered[decision.call_id] = decision
    left = [c for c in waiting_ids if c not in answered]
    return JSONResponse({"waiting": left, "answered": sorted(answered)})


async def resume(request: Request) -> Response:
    """Run the turn on: after approvals (given here or answered before) or after a failure."""
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    body = await state.json(request, ("decisions",))
    given = body.get("decisions", [])
    if not isinstance(given, list):
        raise UsageError("'decisions' is a list")
    decisions = {**state.decisions.get(session_id, {})}
    decisions.update((d.call_id, d) for d in map(_decision, given))

    async def prepare(session: Session) -> None:
        waiting = {a.call_id for a in session.pending_approvals()}
        for decision in decisions.values():
            if decision.call_id not in waiting:
                continue
            if decision.approved:
                await session.approve(decision.call_id, always=decision.always)
            else:
                await session.deny(decision.call_id, decision.note)

    run = await state.turns.start(session_id, lambda s: s.stream_retry(), prepare)
    state.decisions.pop(session_id, None)
    return _stream(run)


async def input_(request: Request) -> Response:
    """Accept input for the session: a steer for the running turn, or a queued prompt.

    While this process runs the session's turn, the input joins it (a steer at its next step,
    a queued prompt after it); while another process drives the session, it is added to the log
    beside that process's writes and that process delivers it. While the session is idle, it is
    recorded and a turn that delivers it starts here; the client follows it with ``/events``.
    """
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    body = await state.json(request, ("text", "mode"))
    text = text_field(body, "text")
    assert text is not None
    mode = body.get("mode")
    if mode not in ("steer", "queue"):
        raise UsageError("'mode' is 'steer' or 'queue'")
    live = state.turns.live(session_id)
    if live is not None:
        accepted = await (live.steer(text) if mode == "steer" else live.queue(text))
        return JSONResponse(_accepted(accepted, "running"), status_code=202)
    await state.turns.after_idle_pass(session_id)
    lease = await live_lease(state.runtime.store, session_id)
    if (
        lease is not None
        and lease.owner != new_owner()
        and await _driven(state, session_id, lease.owner)
    ):
        # Another process drives it: the input is added beside its writes; it delivers it.
        session = await state.workspaces.open(session_id)
        try:
            give = session.steer if mode == "steer" else session.queue
            accepted = await give(text, start_turn=False)
        finally:
            await session.close()
        return JSONResponse(_accepted(accepted, "elsewhere"), status_code=202)
    taken: list[PendingInput] = []

    async def record(session: Session) -> None:
        if taken:  # the start was tried again after a lease held elsewhere: recorded once
            return
        give = session.steer if mode == "steer" else session.queue
        taken.append(await give(text, start_turn=False))

    await state.turns.start(session_id, lambda s: s.stream_pending(), record)
    return JSONResponse(_accepted(taken[0], "started"), status_code=202)


async def _driven(state: ServerState, session_id: str, holder: str) -> bool:
    """Whether another process still drives the session, after waiting while it runs no turn.

    ``False`` when its idle pass let go: this process then starts the turn that delivers the
    input, which the idle pass would never deliver.
    """
    longest = state.runtime.config.lease_ttl
    return not await released(state.runtime.store, session_id, holder, longest)


def _accepted(accepted: PendingInput, turn: str) -> dict[str, Any]:
    return {"id": accepted.id, "mode": accepted.mode, "state": accepted.state, "turn": turn}


async def cancel(request: Request) -> Response:
    """Cancel the session's turn wherever it runs: here at once, elsewhere through the store.

    200 when this process ran the turn, 202 when another one does (it stops the turn as soon as
    it sees the request: at once on PostgreSQL, within a fraction of a second on SQLite), 409
    when no turn is running. The answer never says which process.
    """
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    if state.turns.cancel(session_id):
        return JSONResponse({"cancelled": True})
    lease = await live_lease(state.runtime.store, session_id)
    if lease is None or lease.owner == new_owner() or state.turns.cancels is None:
        raise NoTurnError(f"session {session_id} is not running a turn")
    info = await state.runtime.store.get_session(session_id)
    await state.turns.cancels.request(session_id, info.next_seq)
    return JSONResponse({"cancelled": True, "requested": True}, status_code=202)


def lease_details(lease_expires_at: float | None) -> dict[str, Any]:
    """When a conflicting lease ends, for a 409's body."""
    if lease_expires_at is None:
        return {}
    return {
        "lease_expires_at": lease_expires_at,
        "lease_seconds_left": max(0.0, round(lease_expires_at - time.time(), 1)),
    }


def turn_routes() -> list[Route]:
    """The routes that run and follow turns."""
    return [
        Route("/sessions/{id}/prompt", prompt, methods=["POST"]),
        Route("/sessions/{id}/events", events, methods=["GET"]),
        Route("/sessions/{id}/approvals", waiting, methods=["GET"]),
        Route("/sessions/{id}/approvals/{call_id}", answer, methods=["POST"]),
        Route("/sessions/{id}/resume", resume, methods=["POST"]),
        Route("/sessions/{id}/retry", resume, methods=["POST"]),
        Route("/sessions/{id}/cancel", cancel, methods=["POST"]),
        Route("/sessions/{id}/input", input_, methods=["POST"]),
    ]
