"""The steps of a turn, each taking and returning references and idempotent against the log.

A durable execution engine runs a turn as its own workflow of four kinds of step, and keeps in
its history only what they take and return (``refs``):

- ``admit_prompt`` — the user's text admitted at expected seq N, with the first request's
  dispatch record (one transaction, as a prompt's admission always is);
- ``model_step`` — the model asked after seq N and its answer committed (write-ahead: before
  any of its calls runs);
- ``run_tool`` — one call of a committed answer run and its result committed;
- ``settle_turn`` — the turn's result read back from the log;
- ``paused_turn`` — where a turn paused for approvals continues: ``run_tool`` with the user's
  ``ApprovalAnswer`` commits the answer right before the call runs, as ``retry()`` does.

Every step first looks in the log for its own effect: a retried step whose effect committed
before its worker died returns what was committed, so the model is never asked twice for an
answer that was stored and a tool never runs again for a result that was stored. A tool whose
step started before and left no result is never run again either: the engine says so
(``first_attempt=False``) and the call is closed with the package's "may have run" result, as
crash recovery closes it. A step that finds another live worker driving the session, or the log
moved past what it expected, raises ``StaleStepError`` having stored nothing.

A call waiting for approval pauses the turn (``ToolRan.paused``); the answer travels into the
tool step as a reference, never through a process's memory, so any worker can resume the turn.
A provider's context-overflow error in a model step compacts once (with automatic compaction)
and asks again; a retried step that finds the compaction in the log admits afresh.

The steps drive the session's own parts (the turn's admission, provider call, response commit
and toolbox) one at a time under the session's guard and lease, so a turn run by steps writes
the very entries ``Session.prompt()`` writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from ..engine.recovery import INTERRUPTED_RESULT
from ..engine.turn import Turn, refused_calls, unique_call_ids
from ..errors import ConflictError, ContextOverflowError, UsageError
from ..hygiene import prompt_content
from ..log import (
    ApprovalDecided,
    ApprovalRequested,
    AssistantEntry,
    Dispatch,
    Interrupted,
    ProviderFailed,
    Record,
    Summary,
    ToolResultEntry,
    UserEntry,
    now,
)
from ..providers.base import ModelDone, valid_reply
from ..request import Request, ToolCall, digest
from ..runtime import Runtime
from ..session import Session
from .refs import Admitted, ApprovalAnswer, Paused, Responded, Settled, StaleStepError, ToolRan

__all__ = ["admit_prompt", "last_seq", "model_step", "paused_turn", "run_tool", "settle_turn"]


async def last_seq(runtime: Runtime, session_id: str) -> int:
    """The seq of the session's last entry (-1 for an empty log): where a prompt is admitted."""
    info = await runtime.store.get_session(session_id)
    return info.next_seq - 1


@contextlib.asynccontextmanager
async def _driving(
    runtime: Runtime, session_id: str, *, paused: bool = False
) -> AsyncIterator[Session]:
    """The session opened and held (its lease taken) for one step; closed after it.

    ``paused``: the step may run while a call waits for approval (it answers one, or reads).
    """
    session = await runtime.open_session(session_id)
    try:
        async with session._guard.exclusive(allow_waiting=paused):
            yield session
    except ConflictError as exc:
        if isinstance(exc.__cause__, StaleStepError):  # the guard wraps what a step raised
            raise exc.__cause__ from None
        raise StaleStepError(
            f"session {session_id}: {exc}; the step stored nothing — retry it",
            session_id=session_id,
            holder=exc.holder,
        ) from exc
    finally:
        await session.close()


async def _turn(session: Session) -> Turn:
    """The session's turn engine, for driving one piece of it."""
    return Turn(
        session._deps,
        session._parts,
        session._writer,
        session._admitter,
        session.model,
        session.id,
        await session._writer.last_dispatch(),
    )


def _stale(session_id: str, expected: int, found: int, what: str) -> StaleStepError:
    return StaleStepError(
        f"session {session_id}: {what} expected the log to end at seq {expected}, it ends at"
        f" {found}",
        session_id=session_id,
        expected_seq=expected,
        found_seq=found,
    )


def _admitted(
    session_id: str, records: Sequence[Record], content: object
) -> Admitted | bool | None:
    """The admission of ``content`` among ``records`` (``False``: another prompt's came first)."""
    user = next((r for r in records if isinstance(r.entry, UserEntry)), None)
    if user is None:
        return None
    if not isinstance(user.entry, UserEntry) or user.entry.content != content:
        return False
    for record in records:
        if record.seq > user.seq and isinstance(record.entry, Dispatch):
            return Admitted(session_id, record.seq, record.entry.digest)
    return False  # a user entry always commits with its dispatch


async def admit_prompt(runtime: Runtime, session_id: str, expected_seq: int, text: str) -> Admitted:
    """Admit ``text`` as the next prompt where the log ends at ``expected_seq``.

    Returns the admission already committed when a previous attempt of this step stored it.

    Raises:
        StaleStepError: Another prompt was admitted after ``expected_seq``, or a live worker
            drives the session.
        BudgetExceededError: The request cannot fit (nothing is stored).
        SessionBusyError: A tool call of the session waits for approval.
        UsageError: The text is not valid Unicode.
    """
    content = prompt_content(text)
    async with _driving(runtime, session_id) as session:
        writer = session._writer
        after = await runtime.store.read(session_id, expected_seq + 1)
        found = _admitted(session_id, after, content)
        if isinstance(found, Admitted):
            return found
        end = writer.next_seq - 1
        if found is False or any(isinstance(r.entry, AssistantEntry | Dispatch) for r in after):
            raise _stale(session_id, expected_seq, end, "admitting a prompt")
        await session._ready()
        await session._recover()  # a step a dead non-durable process left is closed first
        user = UserEntry(content, timestamp=now())
        selection = await session._parts.start_prompt(user, (), await writer.user_turns())
        turn = await _turn(session)
        request, _, _ = await turn._dispatch([user, *selection, *session._metadata()], 1, False)
        dispatch = await writer.last_dispatch()
        assert dispatch is not None  # just committed
        return Admitted(session_id, writer.next_seq - 1, digest(request))


async def _ends_at(runtime: Runtime, session_id: str, seq: int, next_seq: int) -> bool:
    """Whether the turn's log still ends at ``seq``: nothing but its own settling came after.

    A tool's result commits with what the tool changed (a skill loaded, a file found), so a
    step may end a few entries past the result it names; a prompt, a dispatch or an answer
    after it means the log moved on.
    """
    if next_seq <= seq:
        return False
    later = await runtime.store.read(session_id, seq + 1)
    return not any(isinstance(r.entry, UserEntry | Dispatch | AssistantEntry) for r in later)


def _responded(session_id: str, tail: Sequence[Record], step: int) -> Responded | None:
    """The committed answer of the step ``tail`` (from its dispatch on) belongs to, if any."""
    answers = [r for r in tail if isinstance(r.entry, AssistantEntry)]
    if not answers:
        return None
    answer = answers[-1]
    assert isinstance(answer.entry, AssistantEntry)
    done = {r.entry.call_id for r in tail if isinstance(r.entry, ToolResultEntry)}
    calls = tuple(c.id for c in answer.entry.tool_calls if c.id not in done)
    return Responded(session_id, answer.seq, step, calls)


async def model_step(runtime: Runtime, session_id: str, after_seq: int, step: int) -> Responded:
    """Ask the model for step ``step`` of the turn whose log ends at ``after_seq``; commit it.

    ``after_seq`` is the seq the previous step returned (the admission's, or the last tool
    result's). The request is dispatched here unless it was (by the admission, or by a previous
    attempt of this step, which is then re-sent unchanged). An answer already stored is returned.

    Raises:
        StaleStepError: The log moved on without this step, or a live worker drives the session.
        ProviderError: The provider failed; the failure is recorded, the engine may retry.
    """
    async with _driving(runtime, session_id) as session:
        writer = session._writer
        tail = await writer.tail_since_dispatch()
        ours = tail is not None and tail[0].seq >= after_seq
        if tail is not None and ours:
            found = _responded(session_id, tail, step)
            if found is not None:
                return found
        elif not await _ends_at(runtime, session_id, after_seq, writer.next_seq):
            raise _stale(session_id, after_seq, writer.next_seq - 1, "a model step")
        await session._ready()
        turn = await _turn(session)
        request = await _request(session, turn, tail if ours else None, step)
        try:
            return await _answer(session, turn, request, step)
        except ContextOverflowError:
            # As a turn does: compact once, admit the step afresh in the new epoch, ask again.
            if not await turn._make_room():
                raise
        request, _, _ = await turn._dispatch((), step, False)
        return await _answer(session, turn, request, step)


async def _request(
    session: Session, turn: Turn, tail: Sequence[Record] | None, step: int
) -> Request:
    """The step's request: the dispatched one re-sent when it still stands, else a new dispatch."""
    if tail is not None:
        closed = any(isinstance(r.entry, ProviderFailed | Interrupted) for r in tail)
        if closed and any(isinstance(r.entry, Summary) for r in tail):
            # An overflow compacted before the worker died: admit in the new epoch.
            request, _, _ = await turn._dispatch((), step, False)
            return request
        dispatch = tail[0].entry
        assert isinstance(dispatch, Dispatch)
        if not closed:
            request = await session._admitter.rebuild(session.model)
            if digest(request) == dispatch.digest:
                return request  # sent again exactly as admitted: nothing new to record
            await session._recover()
        request, _, _ = await turn._dispatch((), step, True)
        return request
    request, _, _ = await turn._dispatch((), step, False)
    return request


async def _answer(session: Session, turn: Turn, request: Request, step: int) -> Responded:
    """Call the model with ``request`` and commit its answer before any of its calls runs."""
    done: ModelDone | None = None
    async for item in turn._ask(request):
        if isinstance(item, ModelDone):
            done = item
    assert done is not None  # a provider call's last event is its answer
    done, replaced = valid_reply(done)
    message = unique_call_ids(done.message, await turn._used_ids(done.message))
    refused = refused_calls(done, message)
    if refused:
        emptied = [replace(c, arguments={}) if c.id in refused else c for c in message.tool_calls]
        message = replace(message, tool_calls=tuple(emptied))
    await turn._respond(step, request, done, message, refused, replaced)
    if session._writer.pending:
        session._writer.raise_pending()
    tail = await session._writer.tail_since_dispatch()
    found = _responded(session.id, tail or [], step)
    assert found is not None  # just committed
    return found


async def run_tool(
    runtime: Runtime,
    session_id: str,
    response_seq: int,
    call_id: str,
    *,
    first_attempt: bool,
    answer: ApprovalAnswer | None = None,
) -> ToolRan:
    """Run call ``call_id`` of the answer stored at ``response_seq`` and commit its result.

    A result already stored is returned. ``first_attempt`` is the engine's durable word that no
    earlier attempt of this step started: when it is ``False`` and no result is stored, the call
    may have run with its effects, so it is closed with the "may have run" result, never run
    again (the package's write-ahead rule). A call the permission preset asks about pauses
    (``ToolRan.paused``) until a step brings the user's ``answer``: it is committed right
    before the call runs, so there an answer stored without a result is the mark that the call
    started (closed as "may have run"), and no answer stored means it never did.

    Raises:
        StaleStepError: A live worker drives the session.
        UsageError: ``response_seq`` holds no answer with that call, or ``answer`` is for
            another call or for a call that does not wait for approval.
    """
    async with _driving(runtime, session_id, paused=True) as session:
        records = await runtime.store.read(session_id, response_seq)
        call = _call_of(records, response_seq, call_id)
        asked: Record | None = None
        decided = False
        for record in records:
            entry = record.entry
            if isinstance(entry, ToolResultEntry) and entry.call_id == call_id:
                return ToolRan(session_id, call_id, record.seq, entry.is_error)
            if isinstance(entry, ApprovalRequested) and entry.call_id == call_id:
                asked = record
            decided = decided or (isinstance(entry, ApprovalDecided) and entry.call_id == call_id)
        if answer is not None and (answer.call_id != call_id or asked is None):
            raise UsageError(f"tool call {answer.call_id!r} does not wait for approval here")
        if asked is not None and answer is None and not decided:
            return ToolRan(session_id, call_id, asked.seq, paused=True)
        writer = session._writer
        if decided or (not first_attempt and asked is None):
            unknown = INTERRUPTED_RESULT["process"]
            saved = await writer.append([ToolResultEntry(call.id, call.name, unknown, True, now())])
            return ToolRan(session_id, call_id, saved[0].seq, is_error=True)
        await session._ready()
        if answer is not None:
            decision = ApprovalDecided(call_id, answer.approved, answer.always, answer.note, now())
            await writer.append([decision])  # durable before the call runs
            session._parts.gate.record(decision)
        offered = await session._admitter.offered(session.model)
        result = await session._parts.toolbox.run(call, offered)
        if result.kind == "paused":
            saved = await writer.append([result.request])
            return ToolRan(session_id, call_id, saved[0].seq, paused=True)
        outcome = result.outcome
        entry = ToolResultEntry(call.id, call.name, outcome.content, outcome.is_error, now())
        saved = await writer.append([entry, *result.entries])
        return ToolRan(session_id, call_id, saved[0].seq, outcome.is_error)


def _call_of(records: Sequence[Record], seq: int, call_id: str) -> ToolCall:
    answer = records[0].entry if records and records[0].seq == seq else None
    if isinstance(answer, AssistantEntry):
        for call in answer.tool_calls:
            if call.id == call_id:
                return call
    raise UsageError(f"entry {seq} is no answer with a tool call {call_id!r}")


async def settle_turn(runtime: Runtime, session_id: str, admitted_seq: int) -> Settled:
    """The result of the turn admitted at ``admitted_seq``, read from the log (writes nothing).

    The stop reason is ``approval_required`` when a call waits for the user's answer (its id
    in ``Settled.waiting``), ``max_tokens`` when the last answer's calls were cut by the
    output limit, else ``end_turn``.
    """
    records = _own_turn(await runtime.store.read(session_id, admitted_seq))
    answers = [r.entry for r in records if isinstance(r.entry, AssistantEntry)]
    last = records[-1].seq if records else admitted_seq
    answered = {r.entry.call_id for r in records if isinstance(r.entry, ToolResultEntry)}
    answered |= {r.entry.call_id for r in records if isinstance(r.entry, ApprovalDecided)}
    waiting = tuple(
        r.entry.call_id
        for r in records
        if isinstance(r.entry, ApprovalRequested) and r.entry.call_id not in answered
    )
    if waiting:
        return Settled(session_id, "", "approval_required", last, waiting)
    if not answers:
        return Settled(session_id, "", "end_turn", last)
    final = answers[-1]
    reason = "max_tokens" if final.tool_calls else "end_turn"
    return Settled(session_id, final.content, reason, last)


def _own_turn(records: Sequence[Record]) -> Sequence[Record]:
    """``records`` (from a turn's admission on) cut where the session's next turn begins.

    A turn's settling reads the log after its last step; should a later turn have been admitted
    by then, its prompt and answers are not this turn's result. A later turn begins with its
    prompt, committed with the turn's first dispatch (step 1); a step-1 dispatch without a
    prompt before it is this turn's own, made again after a compaction.
    """
    prompt = None
    for i, record in enumerate(records):
        entry = record.entry
        if isinstance(entry, UserEntry):
            prompt = i
        elif isinstance(entry, Dispatch) and entry.step == 1 and prompt is not None:
            return records[:prompt]
    return records


async def paused_turn(runtime: Runtime, session_id: str) -> Paused:
    """Where the session's turn paused for approvals continues (reads only).

    The calls of the paused answer without a result, in order, go through ``run_tool`` (with
    an ``ApprovalAnswer`` for each waiting one), then ``model_step`` at ``step + 1`` after the
    last result, as in any turn; ``settle_turn`` from ``dispatch_seq``.

    Raises:
        UsageError: No call of the session waits for approval.
    """
    async with _driving(runtime, session_id, paused=True) as session:
        tail = await session._writer.tail_since_dispatch() or []
    answers = [r for r in tail if isinstance(r.entry, AssistantEntry)]
    dispatch = tail[0].entry if tail else None
    done = {r.entry.call_id for r in tail if isinstance(r.entry, ToolResultEntry)}
    decided = {r.entry.call_id for r in tail if isinstance(r.entry, ApprovalDecided)}
    asked = [r.entry.call_id for r in tail if isinstance(r.entry, ApprovalRequested)]
    waiting = tuple(c for c in asked if c not in done and c not in decided)
    if not answers or not isinstance(dispatch, Dispatch) or not waiting:
        raise UsageError(f"session {session_id}: no tool call waits for approval")
    answer = answers[-1]
    assert isinstance(answer.entry, AssistantEntry)
    calls = tuple(c.id for c in answer.entry.tool_calls if c.id not in done)
    return Paused(session_id, tail[0].seq, answer.seq, dispatch.step, calls, waiting)
