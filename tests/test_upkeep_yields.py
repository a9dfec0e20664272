"""The package's own upkeep never refuses the user: a prompt that arrives meanwhile waits for it.

``Runtime.tend_idle()``'s keep-warm call and ``prepare_compaction()``'s summary hold the session
while their one model call runs. A prompt (or a steer, a preset change, a retry) that arrives
then is not refused with ``SessionBusyError``: it waits for that call, then runs — reading the
cache the call kept warm, or adopting the summary it prepared. The model's replies are held
until the test lets go, so nothing here depends on timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.engine.idle import KEEP_WARM_QUESTION
from agentsession.log import ContextEpoch, PermissionChanged, SideCall, Summary, UserEntry
from agentsession.request import text_of

from .held import HeldCall
from .idle_clock import PRICE, REPORTING, Clock

SUMMARY = "## Goal\nPrepared while the user was away."
WARM_MARK = KEEP_WARM_QUESTION.split("{", 1)[0]


def _last_text(request: ags.Request) -> str:
    return text_of(request.messages[-1].content) if request.messages else ""


def _reply(request: ags.Request) -> str:
    if "summar" in _last_text(request).lower():
        return SUMMARY
    return f"answer {len(request.messages)}"


def held_model(held: Callable[[ags.Request], bool]) -> HeldCall:
    """The session's model; the first request ``held`` picks waits for the test."""
    return HeldCall(_reply, held, name="test-model", profile=REPORTING)


def _runtime(tmp_path: Path, clock: Clock, model: ags.ScriptedModel) -> ags.Runtime:
    config = ags.Config(
        titles=False, keep_user_turns=1, prices={"test-model": PRICE}, idle_policy="auto"
    )
    return ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        clock=clock,
        config=config,
    )


async def _used(session: ags.Session, clock: Clock) -> None:
    """Short gaps: keeping the cache warm is the idle decision's choice near its expiry."""
    await session.prompt("first")
    for n, gap in enumerate([30, 400, 400, 400]):
        clock.wait(gap)
        await session.prompt(f"prompt {n}")
    clock.wait(280)  # 20 s of the 5-minute lifetime left


#: A bound for a wait that never ends, not a measure of time.
NEVER = 120.0


async def _waiting(session: ags.Session, task: asyncio.Task[object]) -> None:
    """Return once an operation of the user's waits for the upkeep call (``task``'s own, or
    the delivery it started); a refusal ends ``task`` with its error, which is raised here."""
    guard = session._guard
    entered = asyncio.Event()
    after_upkeep = guard.after_upkeep

    async def noting() -> None:
        if guard.upkeep:
            entered.set()
        await after_upkeep()

    guard.after_upkeep = noting  # type: ignore[method-assign]
    if guard._wanted:
        return
    waiting = asyncio.ensure_future(entered.wait())
    try:
        done, _ = await asyncio.wait({task, waiting}, timeout=NEVER, return_when="FIRST_COMPLETED")
        if task in done and task.exception() is not None:
            await task  # raises what refused it
        await asyncio.wait_for(waiting, NEVER)
    finally:
        waiting.cancel()
    assert session._guard._wanted == 1


async def _during_keep_warm(
    tmp_path: Path, act: Callable[[ags.Session], Awaitable[object]]
) -> tuple[ags.Session, ags.IdleOutcome, object, list[ags.Record], HeldCall]:
    """``act`` starts while the keep-warm call is held; both are then let go."""
    clock = Clock()
    model = held_model(lambda request: _last_text(request).startswith(WARM_MARK))
    async with _runtime(tmp_path, clock, model) as runtime:
        session = await runtime.create_session()
        await _used(session, clock)
        tending = asyncio.create_task(runtime.tend_idle())
        await model.entered.wait()
        acting: asyncio.Task[object] = asyncio.create_task(act(session))  # type: ignore[arg-type]
        await _waiting(session, acting)
        assert not tending.done()  # the call is still held: the user's operation waits for it
        model.go.set()
        outcome = (await tending)[session.id]
        done = await acting
        await session.deliver_pending()
        log = await session.log()
    return session, outcome, done, log, model


async def test_a_prompt_during_a_keep_warm_call_waits_for_it_and_reads_what_it_kept(
    tmp_path: Path,
) -> None:
    _, outcome, result, log, model = await _during_keep_warm(tmp_path, lambda s: s.prompt("back"))
    assert outcome.action == "kept_warm", outcome.reason
    assert isinstance(result, ags.PromptResult) and result.text.startswith("answer")
    kinds = [
        ("side_call" if isinstance(r.entry, SideCall) else "user")
        for r in log
        if isinstance(r.entry, SideCall | UserEntry)
    ]
    assert kinds[-2:] == ["side_call", "user"]  # the refresh, then the prompt after it
    # the prompt's request is the one the refresh kept warm, with the user's message after it
    assert _last_text(model.requests[-1]) == "back"


async def test_a_steer_during_a_keep_warm_call_is_delivered_after_it(tmp_path: Path) -> None:
    session, outcome, accepted, log, _ = await _during_keep_warm(
        tmp_path, lambda s: s.steer("also look at the tests")
    )
    assert outcome.action == "kept_warm", outcome.reason
    assert isinstance(accepted, ags.PendingInput)
    assert session.pending_input() == []  # delivered as a turn of its own, not left waiting
    texts = [text_of(r.entry.content) for r in log if isinstance(r.entry, UserEntry)]
    assert texts[-1] == "also look at the tests"


async def test_a_preset_change_during_a_keep_warm_call_is_taken_for_the_next_request(
    tmp_path: Path,
) -> None:
    async def change_then_prompt(session: ags.Session) -> object:
        session.set_permission_preset("read-only")  # not refused by the package's upkeep
        return await session.prompt("now read only")

    _, outcome, result, log, _ = await _during_keep_warm(tmp_path, change_then_prompt)
    assert outcome.action == "kept_warm", outcome.reason
    assert isinstance(result, ags.PromptResult)
    changes = [r for r in log if isinstance(r.entry, PermissionChanged)]
    assert [c.entry.preset for c in changes] == ["read-only"]
    refresh = next(r.seq for r in log if isinstance(r.entry, SideCall))
    assert changes[0].seq > refresh  # admitted with the prompt, after the refresh


async def test_a_prompt_during_a_background_summary_waits_and_adopts_it(tmp_path: Path) -> None:
    clock = Clock()
    model = held_model(lambda request: "summar" in _last_text(request).lower())
    async with _runtime(tmp_path, clock, model) as runtime:
        session = await runtime.create_session()
        for text in ("one", "two", "three"):
            await session.prompt(text)
        epochs = len([r for r in await session.log() if isinstance(r.entry, ContextEpoch)])
        preparing = asyncio.create_task(session.prepare_compaction(min_tokens=0))
        await model.entered.wait()
        prompting = asyncio.create_task(session.prompt("four"))
        await _waiting(session, prompting)
        model.go.set()
        assert await preparing is True
        result = await prompting
        log = await session.log()
    assert result.text.startswith("answer")
    summaries = [r.seq for r in log if isinstance(r.entry, Summary)]
    texts = [e.text for e in (r.entry for r in log) if isinstance(e, Summary)]
    assert texts == [SUMMARY]  # the prepared one, adopted
    assert len([r for r in log if isinstance(r.entry, ContextEpoch)]) == epochs + 1
    (call,) = [e for e in (r.entry for r in log) if isinstance(e, SideCall)]
    assert (call.purpose, call.reason) == ("compaction", "background")  # one summary call
    users = {e.content: n for n, e in ((r.seq, r.entry) for r in log) if isinstance(e, UserEntry)}
    four = users["four"]
    assert summaries[0] < four  # the prompt runs in the summary's epoch


async def test_no_upkeep_starts_while_a_prompt_waits(tmp_path: Path) -> None:
    clock = Clock()
    model = held_model(lambda request: _last_text(request).startswith(WARM_MARK))
    async with _runtime(tmp_path, clock, model) as runtime:
        session = await runtime.create_session()
        await _used(session, clock)
        tending = asyncio.create_task(runtime.tend_idle())
        await model.entered.wait()
        prompting = asyncio.create_task(session.prompt("back"))
        await _waiting(session, prompting)
        # the upkeep ends and hands the session to the prompt, not to another upkeep call
        refused = asyncio.create_task(session.prepare_compaction(min_tokens=0))
        model.go.set()
        await tending
        try:
            prepared = await refused
        except ags.SessionBusyError as exc:
            prepared = False
            assert "running" in str(exc) or "waiting" in str(exc)
        assert prepared is False
        assert (await prompting).text.startswith("answer")
        calls = [r.entry for r in await session.log() if isinstance(r.entry, SideCall)]
    assert [c.purpose for c in calls] == ["keep_warm"]


async def test_cancel_during_a_keep_warm_call_stops_the_waiting_prompt_not_the_call(
    tmp_path: Path,
) -> None:
    # The call is billed by the provider whether or not anyone waits for it: it ends and is
    # recorded; what the user started and now cancels is the prompt waiting for it.
    clock = Clock()
    model = held_model(lambda request: _last_text(request).startswith(WARM_MARK))
    async with _runtime(tmp_path, clock, model) as runtime:
        session = await runtime.create_session()
        await _used(session, clock)
        tending = asyncio.create_task(runtime.tend_idle())
        await model.entered.wait()
        assert session.cancel() is False  # no turn runs and nothing waits: nothing to cancel
        prompting = asyncio.create_task(session.prompt("back"))
        await _waiting(session, prompting)
        assert session.cancel() is True
        with pytest.raises(asyncio.CancelledError):
            await prompting
        model.go.set()
        assert (await tending)[session.id].action == "kept_warm"
        log = await session.log()
    assert [e.purpose for e in (r.entry for r in log) if isinstance(e, SideCall)] == ["keep_warm"]
    texts = [e.content for e in (r.entry for r in log) if isinstance(e, UserEntry)]
    assert "back" not in texts
