"""OpenAI's own compaction (``responses.compact``) through the real SDK, on the simulator.

Sessions run against the loopback simulator of ``benchmarks/`` (``provider_sim`` with
``sim_compaction.OpenAICompactions``), which answers ``/responses/compact`` with the user
messages and one encrypted ``compaction`` item, and refuses, with a 400, a later request whose
compaction item differs from the one it issued. So a prompt that succeeds after a compaction
proves the items went back byte for byte.
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
from agentsession.portability.readable import export_readable
from agentsession.providers.openai_compact import SEALED_NOTE
from agentsession.store.session_file import export_session

from .cli_inprocess import cli_here
from .compaction_world import SimWorld, load_sim_bench, lookup, running_world

MODEL = "openai:gpt-5.6-terra"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_sim_bench("openai")


class World(SimWorld):
    """The shared world with OpenAI's Responses model and its compaction items."""

    def runtime(
        self,
        store: ags.Store,
        project: Path,
        compaction: str = "provider",
        *,
        tools: bool = True,
        **config: Any,
    ) -> ags.Runtime:
        model = ags.get_model(MODEL, base_url=f"{self.url}/v1", api_key="sim")
        return ags.Runtime(
            store=store,
            model=model,
            project_dir=project,
            instructions=self.bench.APP_PROMPT,
            tools=[lookup] if tools else [],
            clock=lambda: self.now,
            config=ags.Config(compaction=compaction, titles=False, keep_user_turns=1, **config),
        )

    def items(self) -> dict[str, dict[str, Any]]:
        issued: dict[str, dict[str, Any]] = self.sim.openai_compactions.issued
        return issued


@pytest.fixture
def world(bench: ModuleType) -> Iterator[World]:
    yield from running_world(bench, World, {"no tools": "answered without a tool"})


def _summary(log: list[ags.Record]) -> tuple[int, Summary]:
    (record,) = [r for r in log if isinstance(r.entry, Summary)]
    assert isinstance(record.entry, Summary)
    return record.seq, record.entry


async def test_items_are_stored_shown_billed_and_replayed_byte_for_byte(
    world: World, tmp_path: Path
) -> None:
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path)
    async with runtime:
        session = await runtime.create_session()
        await world.turns(session, "check record 1", "check record 2", "check record 3")
        world.now += timedelta(seconds=20)
        assert await session.compact() is True
        log = await session.log()
        seq, summary = _summary(log)
        assert summary.block is not None and summary.block.format == "openai-responses"
        output = summary.block.block["output"]
        *kept, item = output
        # The compaction item is kept exactly as the server sent it: same fields, same order.
        assert item["type"] == "compaction"
        assert json.dumps(item) == json.dumps(world.items()[item["id"]])
        assert [m["content"][0]["text"] for m in kept] == [
            "check record 1",
            "check record 2",
            "check record 3",
        ]
        # The encrypted summary has no text: another provider gets the user's messages.
        assert summary.text.startswith(SEALED_NOTE)
        assert "USER: check record 2" in summary.text and "enc_" not in summary.text
        # It opens a new epoch, as a local summary does; the whole history is behind it.
        epoch = [r.entry for r in log if isinstance(r.entry, ContextEpoch)][-1]
        assert epoch.reason == "compaction" and epoch.summary_seq == seq
        # Billed once, as a side call with the usage the compact call reported.
        (call,) = [r.entry for r in log if isinstance(r.entry, SideCall)]
        assert call.purpose == "compaction" and call.model == runtime.model.name
        assert call.usage.input_tokens > 1_000 and call.usage.output_tokens > 0
        cost = session.cost()
        assert cost.total_usd == pytest.approx(world.sim.bills["openai-responses"].usd, rel=0.01)
        # The next request opens with the compacted items, as returned, then the new prompt.
        body = await session.preview_body("check record 4")
        items = [i for i in body["input"] if i.get("role") != "developer"]
        assert items[: len(output)] == output
        assert json.dumps(items[: len(output)]) == json.dumps(output)
        replayed = world.sim.openai_compactions.replayed
        await world.turns(session, "check record 4")
        assert world.sim.openai_compactions.replayed > replayed  # accepted: sent unchanged
        inspection = await session.inspect()
        titles = [i.title for i in inspection.timeline if i.kind == "summary"]
        assert len(titles) == 1 and titles[0].startswith("provider compaction · openai")
        # Every request, the one opening with the items included, is rebuilt from the log
        # with the digest it was sent with.
        assert inspection.requests and all(r.exact for r in inspection.requests)
        report = render_report(inspection, generated="now", version="test")
        assert "provider compaction · openai-responses" in report
        session_id = session.id
    shown = cli_here(tmp_path, "show", session_id, "--db", str(tmp_path / "s.db"))
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    mark = next(i for i, line in enumerate(lines) if "provider compaction" in line)
    assert lines[mark + 1] == "user: check record 4"


async def test_a_changed_item_is_refused_by_the_provider(world: World, tmp_path: Path) -> None:
    """The simulator's check has teeth: an item altered in one character is refused."""
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path)
    async with runtime:
        session = await runtime.create_session()
        await world.two_turns_compacted(session)
        body = await session.preview_body("again")
    world.sim.openai_compactions.check(body)  # as sent: accepted
    changed = [
        {**i, "encrypted_content": i["encrypted_content"] + "x"}
        if i.get("type") == "compaction"
        else i
        for i in body["input"]
    ]
    with pytest.raises(ValueError, match="not as issued"):
        world.sim.openai_compactions.check({**body, "input": changed})


async def test_round_trip_through_the_session_file(world: World, tmp_path: Path) -> None:
    """Export → import → export is byte-identical, and the imported session replays the items."""
    first = world.runtime(ags.SQLiteStore(tmp_path / "a.db"), tmp_path)
    async with first:
        session = await first.create_session()
        await world.two_turns_compacted(session)
        session_id = session.id
    exported = tmp_path / "s.jsonl"
    store = ags.SQLiteStore(tmp_path / "a.db")
    await export_session(store, session_id, exported)
    readable = tmp_path / "s.md"
    await export_readable(store, session_id, readable, "markdown")
    await store.close()
    shown = readable.read_text()
    assert "Summary of the earlier conversation (written by the provider)" in shown
    assert SEALED_NOTE in shown and "enc_" not in shown
    header, *rest = exported.read_text().splitlines()
    assert json.loads(header)["entry_versions"]["summary"] == 2
    (stored,) = [json.loads(line) for line in rest if '"provider_compaction"' in line]
    assert stored["kind"] == "summary" and stored["block"]["format"] == "openai-responses"

    second = world.runtime(ags.SQLiteStore(tmp_path / "b.db"), tmp_path)
    async with second:
        imported = await second.import_session(exported)
        _, summary = _summary(await imported.log())
        assert summary.block is not None
        item = summary.block.block["output"][-1]
        assert json.dumps(item) == json.dumps(world.items()[item["id"]])
        replayed = world.sim.openai_compactions.replayed
        await world.turns(imported, "after the import: check record 3")
        assert world.sim.openai_compactions.replayed > replayed
    again = tmp_path / "again.jsonl"
    store = ags.SQLiteStore(tmp_path / "b.db")
    await export_session(store, imported.id, again)
    await store.close()
    (summary_line,) = [ln for ln in again.read_text().splitlines() if "provider_compaction" in ln]
    (original,) = [ln for ln in exported.read_text().splitlines() if "provider_compaction" in ln]
    assert summary_line == original


async def test_a_switch_to_another_provider_sees_the_user_messages(
    world: World, tmp_path: Path
) -> None:
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path)
    async with runtime:
        session = await runtime.create_session()
        await world.two_turns_compacted(session)
        other = ags.ScriptedModel(["fine"], name="elsewhere", profile=ags.ModelProfile())
        await session.switch_model(other)
        await session.prompt("go on")
        first = other.requests[0].messages[0]
        assert isinstance(first, ags.UserMessage)
        text = first.content
        assert isinstance(text, str) and SEALED_NOTE in text
        assert "USER: check record 1" in text and "enc_" not in text


async def test_a_failed_compaction_is_billed_and_stores_nothing(
    world: World, tmp_path: Path
) -> None:
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path)
    async with runtime:
        session = await runtime.create_session()
        await world.turns(session, "check record 1", "check record 2")
        world.sim.openai_compactions.fail_next = True  # no compaction item in the output
        with pytest.raises(ags.ProviderError, match="empty summary"):
            await session.compact()
        log = await session.log()
        assert not [r for r in log if isinstance(r.entry, Summary)]
        (call,) = [r.entry for r in log if isinstance(r.entry, SideCall)]
        assert call.purpose == "compaction" and call.usage.input_tokens > 0
        await world.turns(session, "check record 3")  # the old epoch goes on


async def test_the_compact_call_reads_the_cache_only_without_tools(
    world: World, tmp_path: Path
) -> None:
    """``compact`` takes no ``tools``; OpenAI's prefix starts with them."""
    shares: dict[bool, float] = {}
    for tools in (True, False):
        db = tmp_path / f"{tools}.db"
        runtime = world.runtime(ags.SQLiteStore(db), tmp_path, tools=tools)
        async with runtime:
            session = await runtime.create_session()
            text = "check record" if tools else "no tools: check record"
            await world.turns(session, *(f"{text} {n}" for n in range(4)))
            assert await session.compact() is True
            (call,) = [r.entry for r in await session.log() if isinstance(r.entry, SideCall)]
            shares[tools] = call.usage.cached_input_tokens / call.usage.input_tokens
    assert shares[True] == 0.0
    assert shares[False] >= 0.9


async def test_auto_picks_by_price(world: World, tmp_path: Path) -> None:
    """``auto``: local with tools while the cache is warm (the compact call cannot read it);
    the provider without tools (it reads the cache and is sent less)."""
    picked: dict[bool, bool] = {}
    for tools in (True, False):
        db = tmp_path / f"auto-{tools}.db"
        runtime = world.runtime(ags.SQLiteStore(db), tmp_path, "auto", tools=tools)
        async with runtime:
            session = await runtime.create_session()
            text = "check record" if tools else "no tools: check record"
            await world.turns(session, f"{text} 1", f"{text} 2")
            issued = len(world.items())
            assert await session.compact() is True
            _, summary = _summary(await session.log())
            picked[tools] = summary.block is not None
            assert (len(world.items()) > issued) == picked[tools]
    assert picked == {True: False, False: True}


def test_the_compact_call_gets_only_what_the_sdk_declares() -> None:
    pytest.importorskip("openai")
    from agentsession.providers.openai_compact import compact_arguments

    body = {
        "model": "gpt-5.6-terra",
        "instructions": "You help.",
        "input": [{"type": "message", "role": "user", "content": "hi"}],
        "tools": [{"type": "function", "name": "lookup"}],
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "ags-1",
        "prompt_cache_options": {"comparison_response_id": "resp_1"},
    }
    args = compact_arguments(body)
    assert args == {
        "model": "gpt-5.6-terra",
        "instructions": "You help.",
        "input": body["input"],
        "prompt_cache_key": "ags-1",
    }


async def test_an_sdk_without_compact_compacts_locally(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentsession.providers import openai_client

    monkeypatch.setattr(openai_client, "offers_compaction", lambda: False)
    runtime = world.runtime(ags.SQLiteStore(tmp_path / "s.db"), tmp_path)
    async with runtime:
        session = await runtime.create_session()
        await world.two_turns_compacted(session)
        _, summary = _summary(await session.log())
        assert summary.block is None and not world.items()
