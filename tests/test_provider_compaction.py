"""The provider's own compaction (Anthropic's compaction block) through the real SDK.

Sessions run against the loopback simulator of ``benchmarks/`` (``provider_sim`` with
``sim_compaction``), which answers a ``compaction`` request with a signed block and refuses, with
a 400, a later request whose block differs from the one it issued in any field. So a prompt that
succeeds after a compaction proves the block went back byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import agentsession as ags
from agentsession.inspection.report import render_report
from agentsession.log import ContextEpoch, SideCall, Summary

from .cli_inprocess import cli_here
from .compaction_world import SimWorld, load_sim_bench, lookup, running_world


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_sim_bench("anthropic")


class World(SimWorld):
    """The shared world with Anthropic's Messages model and its compaction block."""

    def runtime(
        self,
        store: ags.Store,
        project: Path,
        compaction: str = "provider",
        summarizer: ags.Model | None = None,
        prices: dict[str, ags.ModelPrice] | None = None,
        **config: Any,
    ) -> ags.Runtime:
        model = ags.get_model("anthropic:claude-opus-4-8", base_url=self.url, api_key="sim")
        return ags.Runtime(
            store=store,
            model=model,
            summarizer=summarizer,
            project_dir=project,
            instructions=self.bench.APP_PROMPT,
            tools=[lookup],
            clock=lambda: self.now,
            config=ags.Config(
                compaction=compaction,
                titles=False,
                keep_user_turns=1,
                prices=prices or {},
                **config,
            ),
        )


@pytest.fixture
def world(bench: ModuleType) -> Iterator[World]:
    yield from running_world(bench, World)


async def test_block_is_stored_shown_billed_and_replayed_byte_for_byte(
    world: World, tmp_path: Path
) -> None:
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path)
    async with runtime:
        session = await runtime.create_session()
        await world.turns(session, "check record 1", "check record 2", "check record 3")
        world.now += timedelta(seconds=20)
        assert await session.compact() is True
        log = await session.log()
        (summary_record,) = [r for r in log if isinstance(r.entry, Summary)]
        summary = summary_record.entry
        assert isinstance(summary, Summary) and summary.block is not None
        assert summary.block.format == "anthropic-messages"
        issued = world.sim.compactions.issued[summary.block.block["signature"]]
        # The block is kept exactly as the server sent it: same fields, same order, same text.
        assert json.dumps(summary.block.block) == json.dumps(issued)
        assert summary.text == issued["content"]
        # It opens a new epoch, as a local summary does; the whole history is behind it.
        epochs = [r.entry for r in log if isinstance(r.entry, ContextEpoch)]
        epoch = epochs[-1]
        assert epoch.reason == "compaction" and epoch.summary_seq == summary_record.seq
        # Billed once, as a side call: the compaction iteration's usage, read from the cache.
        (call,) = [r.entry for r in log if isinstance(r.entry, SideCall)]
        assert call.purpose == "compaction" and call.model == runtime.model.name
        assert call.usage.input_tokens > 1_000
        assert call.usage.cached_input_tokens / call.usage.input_tokens >= 0.9
        assert call.usage.output_tokens > 0
        cost = session.cost()
        assert cost.total_usd == pytest.approx(world.sim.bills["anthropic"].usd, rel=0.01)
        # The next request opens with the block as an assistant turn, then the new prompt.
        body = await session.preview_body("check record 4")
        first = body["messages"][0]
        assert first["role"] == "assistant" and first["content"] == [issued]
        replayed = world.sim.compactions.replayed
        await world.turns(session, "check record 4")
        assert world.sim.compactions.replayed > replayed  # accepted: sent back unchanged
        # Shown by inspect() (and so the report) and by `show`'s marks.
        inspection = await session.inspect()
        titles = [i.title for i in inspection.timeline if i.kind == "summary"]
        assert len(titles) == 1 and titles[0].startswith("provider compaction · anthropic")
        # Every request, the one opening with the block included, is rebuilt from the log
        # with the digest it was sent with.
        assert inspection.requests and all(r.exact for r in inspection.requests)
        after = inspection.requests[-1].request.messages[0]
        assert isinstance(after, ags.AssistantMessage) and after.provider_data
        report = render_report(inspection, generated="now", version="test")
        assert "provider compaction · anthropic-messages" in report
        session_id = session.id
    shown = cli_here(tmp_path, "show", session_id, "--db", str(tmp_path / "s.db"))
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    mark = next(i for i, line in enumerate(lines) if "provider compaction" in line)
    # after the third turn's answer, before the fourth prompt
    assert lines[mark + 1] == "user: check record 4"
    assert any("check record 3" in line for line in lines[:mark])


async def test_a_changed_block_is_refused_by_the_provider(world: World, tmp_path: Path) -> None:
    """The simulator's check has teeth: a block altered in one character is refused."""
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path)
    async with runtime:
        session = await runtime.create_session()
        await world.two_turns_compacted(session)
        body = await session.preview_body("again")
    world.sim.compactions.effective(body)  # as sent: accepted
    block = body["messages"][0]["content"][0]
    changed = {**block, "content": block["content"] + " "}
    tampered = {**body, "messages": [{"role": "assistant", "content": [changed]}]}
    with pytest.raises(ValueError, match="not as issued"):
        world.sim.compactions.effective(tampered)


async def test_round_trip_through_the_session_file(world: World, tmp_path: Path) -> None:
    """Export → import keeps the block byte-identical, and the imported session replays it."""
    first = world.runtime(ags.SQLiteStore(tmp_path / "a.db"), tmp_path)
    async with first:
        session = await first.create_session()
        await world.two_turns_compacted(session)
        session_id = session.id
    exported = tmp_path / "s.jsonl"
    store = ags.SQLiteStore(tmp_path / "a.db")
    from agentsession.portability.readable import export_readable
    from agentsession.store.session_file import export_session

    await export_session(store, session_id, exported)
    readable = tmp_path / "s.md"
    await export_readable(store, session_id, readable, "markdown")
    await store.close()
    shown = readable.read_text()
    assert "Summary of the earlier conversation (written by the provider)" in shown
    assert "summarised by the provider" in shown and "enc_" not in shown
    header, *rest = exported.read_text().splitlines()
    assert json.loads(header)["entry_versions"]["summary"] == 2
    (stored,) = [json.loads(line) for line in rest if '"provider_compaction"' in line]
    assert stored["kind"] == "summary" and stored["block"]["format"] == "anthropic-messages"

    second = world.runtime(ags.SQLiteStore(tmp_path / "b.db"), tmp_path)
    async with second:
        imported = await second.import_session(exported)
        (summary,) = [r.entry for r in await imported.log() if isinstance(r.entry, Summary)]
        assert summary.block is not None
        issued = world.sim.compactions.issued[summary.block.block["signature"]]
        assert json.dumps(summary.block.block) == json.dumps(issued)
        replayed = world.sim.compactions.replayed
        await world.turns(imported, "after the import: check record 3")
        assert world.sim.compactions.replayed > replayed
    again = tmp_path / "again.jsonl"
    store = ags.SQLiteStore(tmp_path / "b.db")
    await export_session(store, imported.id, again)
    await store.close()
    (summary_line,) = [ln for ln in again.read_text().splitlines() if "provider_compaction" in ln]
    (original,) = [ln for ln in exported.read_text().splitlines() if "provider_compaction" in ln]
    assert summary_line == original


async def test_local_mode_never_asks_the_provider(world: World, tmp_path: Path) -> None:
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path, compaction="local")
    async with runtime:
        session = await runtime.create_session()
        await world.two_turns_compacted(session)
        (summary,) = [r.entry for r in await session.log() if isinstance(r.entry, Summary)]
        assert summary.block is None and not world.sim.compactions.issued


async def test_auto_picks_by_price(world: World, tmp_path: Path) -> None:
    """``auto``: the provider where it offers compaction and costs no more; else local."""
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "a.db"), tmp_path, compaction="auto")
    async with runtime:
        session = await runtime.create_session()
        await world.two_turns_compacted(session)
        (summary,) = [r.entry for r in await session.log() if isinstance(r.entry, Summary)]
        assert summary.block is not None  # the session's own model: same prices, less sent
    # A summariser of another model, priced far below what reading the prefix costs here.
    elsewhere = ags.ModelProfile(provider="elsewhere", writes_titles=False)
    cheap = ags.ScriptedModel(["## Goal\nCheap."], name="cheap", profile=elsewhere)
    prices = {"cheap": ags.ModelPrice(input=0.0001, cached_input=0.00001, output=0.0001)}
    runtime = world.runtime(
        ags.SQLiteStore(tmp_path / "b.db"), tmp_path, "auto", summarizer=cheap, prices=prices
    )
    async with runtime:
        session = await runtime.create_session()
        await world.turns(session, "check record 1", "check record 2")
        issued = len(world.sim.compactions.issued)
        assert await session.compact() is True
        (summary,) = [r.entry for r in await session.log() if isinstance(r.entry, Summary)]
        assert summary.block is None and summary.text == "## Goal\nCheap."
        assert len(cheap.requests) == 1 and len(world.sim.compactions.issued) == issued


async def test_a_background_provider_compaction_is_adopted(world: World, tmp_path: Path) -> None:
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path)
    async with runtime:
        session = await runtime.create_session()
        await world.turns(session, "check record 1", "check record 2")
        assert await session.prepare_compaction(min_tokens=0) is True
        assert not [r for r in await session.log() if isinstance(r.entry, Summary)]
        replayed = world.sim.compactions.replayed
        await world.turns(session, "check record 3")
        (summary,) = [r.entry for r in await session.log() if isinstance(r.entry, Summary)]
        assert summary.block is not None
        assert world.sim.compactions.replayed > replayed
        (call,) = [r.entry for r in await session.log() if isinstance(r.entry, SideCall)]
        assert call.reason == "background"
        assert call.usage.cached_input_tokens / call.usage.input_tokens >= 0.9


async def test_a_failed_provider_compaction_is_billed_and_stores_nothing(
    world: World, tmp_path: Path
) -> None:
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path)
    async with runtime:
        session = await runtime.create_session()
        await world.turns(session, "check record 1", "check record 2")
        world.sim.compactions.fail_next = True  # the server's block comes with null content
        with pytest.raises(ags.ProviderError, match="empty summary"):
            await session.compact()
        log = await session.log()
        assert not [r for r in log if isinstance(r.entry, Summary)]
        (call,) = [r.entry for r in log if isinstance(r.entry, SideCall)]
        assert call.purpose == "compaction" and call.usage.input_tokens > 0
        assert session.cost().total_usd == pytest.approx(world.sim.bills["anthropic"].usd, rel=0.01)
        await world.turns(session, "check record 3")  # the old epoch goes on


async def test_automatic_compaction_before_a_prompt_uses_the_provider(
    world: World, tmp_path: Path
) -> None:
    """A prompt that would cross ``compact_threshold`` compacts first — by the provider, as the
    history ends with a finished turn — and its request opens with the block, then the prompt.
    """
    runtime = world.runtime(
        ags.SQLiteStore(tmp_path / "s.db"),
        tmp_path,
        context_window=60_000,
        reserve_output_tokens=0,
        compact_threshold=0.5,
    )
    async with runtime:
        session = await runtime.create_session()
        await world.turns(session, "check record 1", "check record 2", "check record 3")
        assert not [r for r in await session.log() if isinstance(r.entry, Summary)]
        long_prompt = "please read all of this. " * 4_000 + "then check record 4"
        await world.turns(session, long_prompt)
        log = await session.log()
        (summary,) = [r.entry for r in log if isinstance(r.entry, Summary)]
        assert summary.block is not None
        body = await session.preview_body("next")
        assert body["messages"][0]["content"][0]["type"] == "compaction"
        assert long_prompt in json.dumps(body["messages"])
