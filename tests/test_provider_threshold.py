"""Anthropic's threshold compaction (``compact_20260112``) as the safety net inside a turn.

With ``Config(compaction="provider")`` every request carries the threshold edit, its trigger
above the session's own compaction point. A turn whose tool results grow the context past it
is compacted by the server inside the request: the reply opens with the block. The sessions
here run through the real SDK against the loopback simulator, which compacts once the input
reaches the trigger and refuses, with a 400, a later request whose block differs from the one
it issued — so a turn that goes on after the compaction proves the block went back unchanged.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import agentsession as ags
from agentsession.inspection.report import render_report
from agentsession.log import AssistantEntry, ContextEpoch, Dispatch, SideCall, Summary

from .benchmark_modules import load_benchmarks
from .cli_inprocess import cli_here

CALLS = 16  # tool calls of the long turn: about 9,000 tokens each


@pytest.fixture(scope="module")
def sim_module() -> ModuleType:
    pytest.importorskip("anthropic")
    load_benchmarks("provider_sim", "provider_cache")
    return sys.modules["provider_sim"]


@ags.tool
def dump(part: int) -> str:
    """Dump one part of a big record."""
    return f"part {part}:\n" + "".join(f"row {i}: {part * 7919 + i:>12}\n" for i in range(1_500))


class World:
    """A simulator whose model digs through ``CALLS`` parts, then answers; one shared clock."""

    def __init__(self, sim_module: ModuleType) -> None:
        self.reply = sim_module.Reply
        self.calls = 0
        self.digging = False
        self.now = datetime(2026, 3, 1, 9, 0).astimezone()
        prices = sys.modules["provider_cache"].SIM_PRICES  # the shipped table's, as billed
        self.sim = sim_module.Simulator(self.policy, prices, lambda: self.now)
        self.url = ""

    def policy(self, shape: str, text: str, tool_turn: bool) -> Any:
        self.now += timedelta(seconds=2)
        if "comes from the agent runtime" in text:  # a local summary request
            return self.reply(text="## Goal\nDig.")
        # After a compaction the prompt is inside the block: the digging goes on all the same.
        self.digging = "dig" in text or (tool_turn and self.digging)
        if self.digging and self.calls < CALLS:
            self.calls += 1
            return self.reply(tool="dump", arguments={"part": self.calls})
        return self.reply(text=f"done: {text[:20]}")

    def runtime(
        self, store: ags.Store, project: Path, streaming: bool = True, **config: Any
    ) -> ags.Runtime:
        model = ags.get_model(
            "anthropic:claude-opus-4-8", base_url=self.url, api_key="sim", streaming=streaming
        )
        settings: dict[str, Any] = {
            "compaction": "provider",
            "titles": False,
            "context_window": 120_000,
            "reserve_output_tokens": 0,
            "compact_threshold": 0.5,
        }
        return ags.Runtime(
            store=store,
            model=model,
            project_dir=project,
            instructions="You dig through records.",
            tools=[dump],
            clock=lambda: self.now,
            config=ags.Config(**(settings | config)),
        )


@pytest.fixture
def world(sim_module: ModuleType) -> Any:
    made = World(sim_module)
    with sim_module.running(made.sim) as url:
        made.url = url
        yield made


def _summaries(log: list[ags.Record]) -> list[tuple[int, Summary]]:
    return [(r.seq, r.entry) for r in log if isinstance(r.entry, Summary)]


async def test_the_body_carries_the_threshold_edit_above_the_own_point(
    world: World, tmp_path: Path
) -> None:
    async with world.runtime(ags.MemoryStore(), tmp_path) as runtime:
        session = await runtime.create_session()
        body = await session.preview_body("hello")
    (edit,) = body["context_management"]["edits"]
    assert edit["type"] == "compact_20260112"
    # Halfway between the session's own point (0.5 of 120,000) and the limit.
    assert edit["trigger"] == {"type": "input_tokens", "value": 90_000}
    async with world.runtime(ags.MemoryStore(), tmp_path, compaction="local") as runtime:
        session = await runtime.create_session()
        assert "context_management" not in await session.preview_body("hello")
    async with world.runtime(ags.MemoryStore(), tmp_path, auto_compact=False) as runtime:
        session = await runtime.create_session()
        assert "context_management" not in await session.preview_body("hello")


async def test_a_turn_past_the_trigger_is_compacted_by_the_server_and_goes_on(
    world: World, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    async with world.runtime(ags.SQLiteStore(db), tmp_path) as runtime:
        session = await runtime.create_session()
        result = await session.prompt("dig through every part")
        assert result.text.startswith("done") and world.calls == CALLS
        log = await session.log()
        ((seq, summary),) = _summaries(log)
        assert summary.block is not None and summary.block.format == "anthropic-messages"
        issued = world.sim.compactions.issued[summary.block.block["signature"]]
        assert json.dumps(summary.block.block) == json.dumps(issued)
        assert summary.text == issued["content"] and summary.covers_until == seq + 2
        # The epoch opens right after the summary and starts at the reply that followed it.
        by_seq = {r.seq: r.entry for r in log}
        epoch = by_seq[seq + 1]
        assert isinstance(epoch, ContextEpoch) and epoch.reason == "compaction"
        assert epoch.summary_seq == seq and epoch.history_start == seq + 2
        reply = by_seq[seq + 2]
        assert isinstance(reply, AssistantEntry) and reply.tool_calls[0].name == "dump"
        assert isinstance(by_seq[seq - 1], Dispatch)  # the request the server compacted
        # The reply's usage holds the compaction iteration: its input was the whole context.
        assert reply.usage.input_tokens >= 90_000
        # No summary was written by the session: the server's block is the compaction.
        assert not [r for r in log if isinstance(r.entry, SideCall)]
        # The turn went on: the next requests sent the block back and the server took it.
        assert world.sim.compactions.replayed >= CALLS - _calls_before(log, seq)
        cost = session.cost()
        assert cost.total_usd == pytest.approx(world.sim.bills["anthropic"].usd, rel=0.01)
        # The one cache miss (the request after the block) is put down to the compaction.
        assert [m.cause for m in cost.misses] == ["compaction"]
        # The next request opens with the block, then the rest of that reply.
        body = await session.preview_body("and now?")
        first = body["messages"][0]
        assert first["role"] == "assistant" and first["content"][0] == issued
        assert first["content"][1]["type"] == "tool_use"
        assert first["content"][1]["id"] == reply.tool_calls[0].id
        # inspect(), the report and `show` show it.
        inspection = await session.inspect()
        titles = [i.title for i in inspection.timeline if i.kind == "summary"]
        assert len(titles) == 1 and titles[0].startswith("provider compaction · anthropic")
        assert inspection.requests and all(r.exact for r in inspection.requests)
        # Every request is shown with the edit it went out with.
        assert {c.compact_at for c in inspection.controls.values()} == {90_000}
        assert inspection.next_controls is not None
        assert inspection.next_controls.compact_at == 90_000
        report = render_report(inspection, generated="now", version="test")
        assert "provider compaction · anthropic-messages" in report
        session_id = session.id
    async with world.runtime(ags.SQLiteStore(db), tmp_path) as runtime:
        reopened = await runtime.open_session(session_id)  # the ledger primed from the store
        assert [m.cause for m in reopened.cost().misses] == ["compaction"]
    shown = cli_here(tmp_path, "show", session_id, "--db", str(db))
    assert shown.code == 0, shown.err
    assert any("provider compaction" in line for line in shown.out.splitlines())


def _calls_before(log: list[ags.Record], seq: int) -> int:
    return sum(
        len(r.entry.tool_calls) for r in log if isinstance(r.entry, AssistantEntry) and r.seq < seq
    )


async def test_export_import_export_is_byte_identical_and_replays_the_block(
    world: World, tmp_path: Path
) -> None:
    from agentsession.store.session_file import export_session

    async with world.runtime(ags.SQLiteStore(tmp_path / "a.db"), tmp_path) as runtime:
        session = await runtime.create_session()
        await session.prompt("dig through every part")
        session_id = session.id
    exported = tmp_path / "s.jsonl"
    store = ags.SQLiteStore(tmp_path / "a.db")
    await export_session(store, session_id, exported)
    await store.close()
    async with world.runtime(ags.SQLiteStore(tmp_path / "b.db"), tmp_path) as runtime:
        imported = await runtime.import_session(exported)
        ((_, summary),) = _summaries(await imported.log())
        assert summary.block is not None
        issued = world.sim.compactions.issued[summary.block.block["signature"]]
        assert json.dumps(summary.block.block) == json.dumps(issued)
        body = await imported.preview_body("after the import")
        assert body["messages"][0]["content"][0] == issued
        replayed = world.sim.compactions.replayed
        result = await imported.prompt("after the import")
        assert result.text.startswith("done")
        assert world.sim.compactions.replayed == replayed + 1  # accepted: sent back unchanged
        imported_id = imported.id
    again = tmp_path / "again.jsonl"
    store = ags.SQLiteStore(tmp_path / "b.db")
    await export_session(store, imported_id, again)
    await store.close()
    lines = [ln for ln in exported.read_text().splitlines()[1:]]
    later = again.read_text().splitlines()[1 : 1 + len(lines)]
    (original,) = [ln for ln in lines if "provider_compaction" in ln]
    (copied,) = [ln for ln in later if "provider_compaction" in ln]
    assert copied == original


async def test_without_the_edit_the_same_turn_overflows(world: World, tmp_path: Path) -> None:
    """The net is needed: locally a first turn has nothing before it to summarise."""
    async with world.runtime(ags.MemoryStore(), tmp_path, compaction="local") as runtime:
        session = await runtime.create_session()
        with pytest.raises(ags.BudgetExceededError):
            await session.prompt("dig through every part")
        assert not world.sim.compactions.issued


async def test_a_whole_reply_keeps_the_block_as_a_streamed_one_does(
    world: World, tmp_path: Path
) -> None:
    """Without streaming the block is read from the whole message: the same object."""
    async with world.runtime(ags.MemoryStore(), tmp_path, streaming=False) as runtime:
        session = await runtime.create_session()
        assert (await session.prompt("dig through every part")).text.startswith("done")
        ((_, summary),) = _summaries(await session.log())
        assert summary.block is not None
        issued = world.sim.compactions.issued[summary.block.block["signature"]]
        assert json.dumps(summary.block.block) == json.dumps(issued)
        assert world.sim.streamed == 0 and world.sim.compactions.replayed > 0


async def test_a_failed_block_opens_nothing_and_is_billed(world: World, tmp_path: Path) -> None:
    """A block without content is the server's no-op: no summary, no epoch; billed all the same.

    The next request is still past the trigger, so the server compacts it, this time for real.
    """
    world.sim.compactions.fail_next = True
    async with world.runtime(ags.MemoryStore(), tmp_path) as runtime:
        session = await runtime.create_session()
        assert (await session.prompt("dig through every part")).text.startswith("done")
        log = await session.log()
        ((_, summary),) = _summaries(log)
        assert len(world.sim.compactions.issued) == 2
        failed = [b for b in world.sim.compactions.issued.values() if b["content"] is None]
        assert len(failed) == 1 and summary.block is not None
        assert summary.block.block["content"] is not None
        compacted = [r.entry for r in log if isinstance(r.entry, ContextEpoch)]
        assert [e.reason for e in compacted].count("compaction") == 1
        # Both replies that carried a block were billed their compaction iteration.
        big = [
            r.entry
            for r in log
            if isinstance(r.entry, AssistantEntry) and r.entry.usage.input_tokens >= 90_000
        ]
        assert len(big) == 2
        cost = session.cost()
        assert cost.total_usd == pytest.approx(world.sim.bills["anthropic"].usd, rel=0.01)
