"""Calls beside the conversation are billed too: the title and the compaction summary.

Each becomes a ``SideCall`` record with the provider-reported usage; the ledger charges it with
its purpose, so ``session.cost()`` (and everything built on it) counts it, while the comparison
of each turn's request with the one before (unexplained misses) leaves it out. The stored form
of ``side_call`` is version 2 (a ``reason``, the ``keep_warm`` purpose); version 1, in
``tests/fixtures/log_side_call_v1.jsonl``, is frozen and keeps loading.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.ledger import charges_of, summarize
from agentsession.log import AssistantEntry, Dispatch, Record, SideCall, dump_entry, load_entry
from agentsession.request import Usage

FIXTURE = Path(__file__).parent / "fixtures" / "log_side_call_v1.jsonl"
PRICE = ags.ModelPrice(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
REPORTING = ags.ModelProfile(provider="test", reports_usage=True)
T = "2026-12-01T15:20:00.000000+00:00"


def answer(request: ags.Request) -> str:
    names = [name for name, _ in request.system]
    if names == ["title"]:
        return "Checking records"
    if names == ["compaction"]:
        return "## Goal\ncheck records"
    return f"answer {len(request.messages)}"


def runtime_for(store: ags.Store, tmp_path: Path) -> ags.Runtime:
    model = ags.ScriptedModel(answer, name="test-model", profile=REPORTING)
    return ags.Runtime(
        store=store,
        model=model,
        project_dir=tmp_path,
        config=ags.Config(titles=True, keep_user_turns=1, prices={"test-model": PRICE}),
    )


def side_calls(records: list[Record]) -> list[SideCall]:
    return [r.entry for r in records if isinstance(r.entry, SideCall)]


async def test_the_title_and_the_summary_are_charged_and_stored(tmp_path: Path) -> None:
    async with runtime_for(ags.SQLiteStore(tmp_path / "s.db"), tmp_path) as runtime:
        session = await runtime.create_session()
        await session.prompt("check record 1")
        await session.named()
        await session.prompt("check record 2")
        assert await session.compact()
        await session.prompt("check record 3")
        summary = session.cost()
        records = await session.log()
    calls = side_calls(records)
    assert [c.purpose for c in calls] == ["title", "compaction"]
    assert all(c.usage.input_tokens > 0 and not c.usage_estimated for c in calls)
    turns = [r.entry for r in records if isinstance(r.entry, AssistantEntry)]
    assert summary.requests == len(turns) + 2 == 5
    tokens = sum(e.usage.input_tokens for e in turns) + sum(c.usage.input_tokens for c in calls)
    assert summary.by_model["test-model"].input_tokens == tokens
    outputs = sum(e.usage.output_tokens for e in turns) + sum(c.usage.output_tokens for c in calls)
    assert summary.total_usd == pytest.approx((tokens * PRICE.input + outputs * PRICE.output) / 1e6)
    # the whole stored log gives the same ledger (the report and ``agentsession cost`` read it)
    assert summarize(charges_of(records), {"test-model": PRICE}) == summary
    async with runtime_for(ags.SQLiteStore(tmp_path / "s.db"), tmp_path) as again:
        assert (await again.open_session(session.id)).cost() == summary


async def test_a_title_not_yet_written_is_counted_and_written_at_close(tmp_path: Path) -> None:
    store = ags.MemoryStore()
    async with runtime_for(store, tmp_path) as runtime:
        session = await runtime.create_session()
        await session.prompt("check record 1")
        await session._naming.wait()  # the title is made, not yet written
        assert side_calls(await session.log()) == []
        assert session.cost().requests == 2
        before = session.cost()
        await session.close()
        assert [c.purpose for c in side_calls(await session.log())] == ["title"]
        reopened = await runtime.open_session(session.id)
        assert reopened.cost() == before


async def test_a_title_made_meanwhile_is_committed_with_the_next_turn(tmp_path: Path) -> None:
    async with runtime_for(ags.MemoryStore(), tmp_path) as runtime:
        session = await runtime.create_session()
        await session.prompt("check record 1")
        await session._naming.wait()
        await session.prompt("check record 2")
        records = await session.log()
        (call,) = side_calls(records)
        assert call.purpose == "title"
        await session.close()
        assert len(side_calls(await session.log())) == 1  # written once, not again at close


def test_a_side_call_between_a_dispatch_and_its_response_leaves_the_pairing_alone() -> None:
    turn = Usage(input_tokens=20_000, output_tokens=10, cached_input_tokens=19_000)
    records = [
        Record(1, Dispatch("m", 1, "d1", "first", T)),
        Record(2, AssistantEntry("a", usage=Usage(input_tokens=19_500, output_tokens=5))),
        Record(3, Dispatch("m", 1, "d2", "hit", T)),
        Record(4, SideCall("title", "m", Usage(input_tokens=300, output_tokens=4), timestamp=T)),
        Record(5, AssistantEntry("b", usage=turn)),
    ]
    charges = charges_of(records)
    assert [(c.seq, c.purpose) for c in charges] == [(1, "turn"), (3, "turn"), (4, "title")]
    assert charges[1].usage == turn
    assert charges[2].usage == Usage(input_tokens=300, output_tokens=4)
    # the title's request shares no prefix with the turns: its 0 cached tokens are no miss
    assert summarize(charges, {"m": PRICE}).unexplained_misses == 0


EXPECTED = [
    SideCall("title", "openai:gpt-5.6-terra", Usage(input_tokens=812, output_tokens=9), False, T),
    SideCall(
        "compaction",
        "anthropic:claude-opus-4-8",
        Usage(
            input_tokens=40210,
            output_tokens=1530,
            cached_input_tokens=1024,
            cache_write_tokens=2048,
            cache_write_long_tokens=2048,
        ),
        True,
        T,
    ),
    SideCall("title", "m"),
]


def test_stored_side_calls_of_version_1_keep_loading() -> None:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    assert [(r["kind"], r["version"]) for r in rows] == [("side_call", 1)] * 3
    loaded = [load_entry(r["kind"], r["version"], json.dumps(r["data"])) for r in rows]
    assert loaded == EXPECTED


def test_side_calls_are_version_2_with_their_reason() -> None:
    call = SideCall(
        "keep_warm", "m", Usage(5000, 3, 4990), timestamp=T, reason="kept_warm: cheaper"
    )
    kind, version, data = dump_entry(call)
    assert (kind, version) == ("side_call", 2)
    assert load_entry(kind, version, data) == call
    # a newer form than this package writes is refused by name, never misread
    with pytest.raises(ags.CorruptEntryError, match="newer than this agentsession reads"):
        load_entry(kind, 3, data)
