"""``Runtime.tend_idle()``: one idle decision per session, by the runtime's clock, acted on.

Real SQLite stores, the scripted model with reported usage and a price, and a clock the test
moves. A session whose cache is about to expire before its likely next request is kept warm
(short gaps measured), compacted (a large session whose gaps are overnight) or let expire; a
session that runs or waits on an approval is left alone; ``idle_policy="off"`` does nothing.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.inspection.report import render_report
from agentsession.ledger import cost_lines
from agentsession.ledger.idle import GapPool
from agentsession.log import SideCall
from agentsession.request import text_of

from .idle_clock import PRICE, REPORTING, Clock


def answer(request: ags.Request) -> str:
    return f"answer {len(request.messages)}"


def runtime_for(tmp_path: Path, clock: Clock, policy: str = "auto", **kw: object) -> ags.Runtime:
    model = ags.ScriptedModel(answer, name="test-model", profile=REPORTING)
    config = ags.Config(
        titles=False, keep_user_turns=1, prices={"test-model": PRICE}, idle_policy=policy
    )
    return ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        clock=clock,
        config=config,
        **kw,  # type: ignore[arg-type]
    )


async def prompts(session: ags.Session, clock: Clock, gaps: list[float], text: str = "") -> None:
    await session.prompt(f"first {text}")
    for n, gap in enumerate(gaps):
        clock.wait(gap)
        await session.prompt(f"prompt {n} {text}")


async def side_calls(session: ags.Session) -> list[SideCall]:
    return [r.entry for r in await session.log() if isinstance(r.entry, SideCall)]


async def test_short_gaps_keep_the_cache_warm_with_a_billed_call(tmp_path: Path) -> None:
    clock = Clock()
    async with runtime_for(tmp_path, clock) as runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [30, 400, 400, 400])
        before = session.cost()
        clock.wait(200)
        assert (await runtime.tend_idle())[session.id].action == "nothing"  # warm for 100 s more
        clock.wait(80)  # 20 s of the 5-minute lifetime left
        outcome = (await runtime.tend_idle())[session.id]
        assert outcome.action == "kept_warm"
        assert "kept_warm expected" in outcome.reason
        assert outcome.costs["kept_warm"] < outcome.costs["let_expire"]
        (call,) = await side_calls(session)
        assert call.purpose == "keep_warm" and call.reason == outcome.reason
        after = session.cost()
        assert after.requests == before.requests + 1
        assert after.total_usd is not None and before.total_usd is not None
        assert outcome.side_call_usd is not None and outcome.side_call_usd > 0
        assert after.total_usd == pytest.approx(before.total_usd + outcome.side_call_usd)
        # cost() lists the call with its reason, and so do ``cost``'s lines and the report
        (listed,) = after.idle_calls
        assert (listed.purpose, listed.reason) == ("keep_warm", outcome.reason)
        assert listed.usd == pytest.approx(outcome.side_call_usd)
        assert any(line.startswith("idle calls 1 (keep_warm)") for line in cost_lines(after))
        page = render_report(await session.inspect(), generated="now", version="test")
        assert "id='idle-calls'" in page and "keep_warm: kept_warm expected" in page
        # the refresh restarted the lifetime: nothing to decide right after it
        assert (await runtime.tend_idle())[session.id].action == "nothing"
        # the next turn reads the cache it kept warm, and the call stays in the log when reopened
        clock.wait(60)
        await session.prompt("back")
    async with runtime_for(tmp_path, clock) as again:
        reopened = await again.open_session(session.id)
        (stored,) = await side_calls(reopened)
        assert (stored.purpose, stored.reason) == ("keep_warm", outcome.reason)
        assert reopened.cost().requests == after.requests + 1


async def test_a_large_session_with_overnight_gaps_is_compacted_while_warm(
    tmp_path: Path,
) -> None:
    clock = Clock()
    # file reads of ~25K tokens a prompt: past half the 200K budget, the floor of compaction
    bulk = "word " * 20_000
    async with runtime_for(tmp_path, clock) as runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [40_000, 40_000, 40_000, 40_000], bulk)
        clock.wait(285)
        outcome = (await runtime.tend_idle())[session.id]
        assert outcome.action == "compacted", outcome.reason
        assert outcome.costs["compacted"] < outcome.costs["let_expire"]
        (call,) = await side_calls(session)
        assert call.purpose == "compaction" and call.reason == outcome.reason
        kinds = [r.entry.kind for r in await session.log()]
        assert "summary" in kinds


async def test_a_small_session_with_long_gaps_lets_the_cache_expire(tmp_path: Path) -> None:
    clock = Clock()
    async with runtime_for(tmp_path, clock) as runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [40_000, 40_000, 40_000])
        clock.wait(290)
        outcome = (await runtime.tend_idle())[session.id]
        assert outcome.action == "let_expire"
        assert outcome.side_call_usd is None
        assert await side_calls(session) == []


async def test_off_does_nothing(tmp_path: Path) -> None:
    clock = Clock()
    async with runtime_for(tmp_path, clock, policy="off") as runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [30, 400, 400, 400])
        clock.wait(280)
        outcome = (await runtime.tend_idle())[session.id]
        assert (outcome.action, outcome.reason) == ("nothing", "idle_policy is off")
        assert await side_calls(session) == []


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ags.UsageError, match="idle_policy"):
        ags.Config(idle_policy="sometimes")


async def test_no_price_known_does_nothing(tmp_path: Path) -> None:
    clock = Clock()
    model = ags.ScriptedModel(answer, name="unpriced-model", profile=REPORTING)
    config = ags.Config(titles=False, idle_policy="auto")
    store = ags.SQLiteStore(tmp_path / "s.db")
    runtime = ags.Runtime(
        store=store, model=model, project_dir=tmp_path, clock=clock, config=config
    )
    async with runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [30, 400, 400, 400])
        clock.wait(280)
        outcome = (await runtime.tend_idle())[session.id]
        assert outcome.action == "nothing" and "no price" in outcome.reason


POOLS = [(30.0,) * 20 + (360.0,) * 20, (30.0,) * 5 + (40_000.0,) * 20, (600.0, 3000.0, 90_000.0)]
"""Other sessions' gaps: back within minutes, away overnight, a mixture."""


async def test_a_session_waiting_on_approval_is_left_alone(tmp_path: Path) -> None:
    clock = Clock()
    command = ags.ToolCall("run_command", {"command": "echo one"})
    replies: list[object] = ["a", "b", "c", "d", [command], "done"]
    model = ags.ScriptedModel(replies, name="test-model", profile=REPORTING)  # type: ignore[arg-type]
    config = ags.Config(titles=False, prices={"test-model": PRICE}, idle_policy="auto")
    store = ags.SQLiteStore(tmp_path / "s.db")
    runtime = ags.Runtime(
        store=store,
        model=model,
        project_dir=tmp_path,
        clock=clock,
        config=config,
        tools=ags.builtin_tools(),
    )
    async with runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [30, 400, 400])
        clock.wait(400)
        result = await session.prompt("run it")
        assert result.stop_reason == "approval_required"
        clock.wait(280)
        outcome = (await runtime.tend_idle())[session.id]
        assert outcome.action == "nothing" and "approval" in outcome.reason
        # whatever the other sessions' pauses say
        for pool in POOLS:
            outcome = await session._tend_idle(pooled=pool)
            assert outcome.action == "nothing" and "approval" in outcome.reason
        assert await side_calls(session) == []
    # opened afresh (as serve's idle pass opens a stored session): still waiting, still alone
    again = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        clock=clock,
        config=config,
        tools=ags.builtin_tools(),
    )
    async with again:
        reopened = await again.open_session(session.id)
        outcome = (await again.tend_idle([reopened]))[session.id]
        assert outcome.action == "nothing" and "approval" in outcome.reason
        assert await side_calls(reopened) == []


async def test_a_running_session_is_left_alone(tmp_path: Path) -> None:
    clock = Clock()
    release = asyncio.Event()
    started = asyncio.Event()

    @ags.tool
    async def slow() -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        return "released"

    replies: list[object] = ["a", "b", "c", "d", [ags.ToolCall("slow", {})], "done"]
    model = ags.ScriptedModel(replies, name="test-model", profile=REPORTING)  # type: ignore[arg-type]
    config = ags.Config(titles=False, prices={"test-model": PRICE}, idle_policy="auto")
    store = ags.SQLiteStore(tmp_path / "s.db")
    runtime = ags.Runtime(
        store=store, model=model, project_dir=tmp_path, clock=clock, config=config, tools=[slow]
    )
    async with runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [30, 400, 400])
        clock.wait(400)
        turn = asyncio.create_task(session.prompt("go slow"))
        await asyncio.wait_for(started.wait(), 60)
        clock.wait(280)
        outcome = (await runtime.tend_idle())[session.id]
        assert outcome.action == "nothing" and "running" in outcome.reason
        for pool in POOLS:
            outcome = await session._tend_idle(pooled=pool)
            assert outcome.action == "nothing" and "running" in outcome.reason
        release.set()
        assert (await asyncio.wait_for(turn, 60)).text == "done"
        assert await side_calls(session) == []


async def test_a_session_another_runtime_drives_is_left_alone(tmp_path: Path) -> None:
    clock = Clock()
    async with runtime_for(tmp_path, clock) as runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [30, 400, 400, 400])
        await session.close()  # its lease is free: another process may take the session
        async with runtime_for(tmp_path, clock) as other:
            elsewhere = await other.open_session(session.id)
            await elsewhere.prompt("driven from another process")  # holds the lease now
            clock.wait(280)
            model = runtime.model
            assert isinstance(model, ags.ScriptedModel)
            sent = len(model.requests)
            # named: a closed session is tended only when asked for by name
            outcome = (await runtime.tend_idle([session]))[session.id]
            assert outcome.action == "nothing"
            assert len(model.requests) == sent
            # never a call made from a stale view (it would be billed, then refused)
            assert outcome.reason in ("the session changed elsewhere",) or (
                outcome.reason.startswith("kept_warm not done") and "lease" in outcome.reason
            ), outcome.reason
            assert await side_calls(elsewhere) == []


async def test_two_refreshes_in_a_row_send_different_questions(tmp_path: Path) -> None:
    # A provider reads the longest prefix it holds: an identical second refresh would renew the
    # first refresh's entry, not the live prefix the next prompt reads.
    clock = Clock()
    seen: list[str] = []

    def record(request: ags.Request) -> str:
        seen.append(text_of(request.messages[-1].content))
        return answer(request)

    model = ags.ScriptedModel(record, name="test-model", profile=REPORTING)
    config = ags.Config(titles=False, prices={"test-model": PRICE}, idle_policy="auto")
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        clock=clock,
        config=config,
    ) as runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [30, 700, 700, 700], "word " * 2_000)
        live = len(seen)
        clock.wait(280)
        assert (await runtime.tend_idle())[session.id].action == "kept_warm"
        clock.wait(280)
        assert (await runtime.tend_idle())[session.id].action == "kept_warm"
    first, second = seen[live:]
    assert "Reply with the single word" in first and first != second


async def test_a_pause_the_session_never_had_is_judged_by_the_other_sessions(
    tmp_path: Path,
) -> None:
    # The session never paused past a minute. Alone, a pause of 4.5 minutes is judged by the
    # scale-free prior and kept warm; beside sessions whose long pauses went overnight, the
    # same pause is let expire: the runtime pools the gaps of the sessions it tends.
    bulk = "word " * 5_000
    (tmp_path / "alone").mkdir()
    (tmp_path / "pooled").mkdir()
    clock = Clock()
    async with runtime_for(tmp_path / "alone", clock) as runtime:
        alone = await runtime.create_session()
        await prompts(alone, clock, [30, 40, 20, 50], bulk)
        clock.wait(280)
        assert (await runtime.tend_idle())[alone.id].action == "kept_warm"
    clock = Clock()
    async with runtime_for(tmp_path / "pooled", clock) as runtime:
        others = [await runtime.create_session() for _ in range(2)]
        for other in others:
            await prompts(other, clock, [30, 40_000, 40_000, 40_000])
            # the application's timer: each pass records the gaps of the sessions it tends
            assert (await runtime.tend_idle())[other.id].action == "nothing"
        session = await runtime.create_session()
        await prompts(session, clock, [30, 40, 20, 50], bulk)
        clock.wait(280)
        outcomes = await runtime.tend_idle()
        assert outcomes[session.id].action == "let_expire", outcomes[session.id].reason
        assert all(outcomes[o.id].action == "nothing" for o in others)  # long expired
        # asked about this session alone, the runtime still weighs the gaps it recorded
        assert (await runtime.tend_idle([session]))[session.id].action == "let_expire"
        assert await side_calls(session) == []


def test_the_gap_pool_is_bounded_and_leaves_out_the_session_asked_about() -> None:
    pool = GapPool(sessions=2, limit=3)
    pool.update("a", (1.0, 2.0))
    pool.update("b", (3.0, 4.0))
    assert pool.others("a") == (3.0, 4.0)
    pool.update("c", (5.0, 6.0))  # "a" is the least recently updated: dropped
    assert pool.others("x") == (4.0, 5.0, 6.0)  # the newest three
    pool.update("b", (3.0, 4.0, 7.0))
    assert pool.others("c") == (3.0, 4.0, 7.0)


async def test_a_closed_session_is_not_tended_until_it_is_used_again(tmp_path: Path) -> None:
    """``close()`` gives the session up: a runtime-wide pass makes no billed call for it, while
    naming it (as ``serve``'s idle pass names the sessions it opens) or using it again does."""
    clock = Clock()
    async with runtime_for(tmp_path, clock) as runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [30, 400, 400, 400])
        await session.close()
        clock.wait(280)
        model = runtime.model
        assert isinstance(model, ags.ScriptedModel)
        sent = len(model.requests)
        outcome = (await runtime.tend_idle())[session.id]
        assert (outcome.action, outcome.reason) == ("nothing", "the session was closed")
        assert len(model.requests) == sent and await side_calls(session) == []
        named = (await runtime.tend_idle([session]))[session.id]
        assert named.action == "kept_warm"
        await session.close()
        clock.wait(60)
        await session.prompt("back again")  # used again: tended again
        clock.wait(280)
        assert (await runtime.tend_idle())[session.id].action == "kept_warm"


async def test_a_summary_call_is_stamped_by_the_runtimes_clock(tmp_path: Path) -> None:
    """The compaction call's timestamp is the runtime's clock, like a keep-warm call's: the
    ledger measures the summary request's gap since the cache was last touched by it."""
    clock = Clock()
    async with runtime_for(tmp_path, clock, policy="off") as runtime:
        session = await runtime.create_session()
        await prompts(session, clock, [30, 30])
        clock.wait(3600)  # a clock far from the wall's: the test's, an hour on
        assert await session.compact()
        (call,) = await side_calls(session)
        assert call.purpose == "compaction"
        assert datetime.fromisoformat(call.timestamp) == clock.now
