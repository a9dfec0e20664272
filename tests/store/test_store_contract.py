"""The Store contract, run against every store (see the ``store`` fixture in conftest)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsession.errors import ConflictError, CorruptEntryError, SessionNotFoundError, StoreError
from agentsession.log import (
    VERSIONS,
    AssistantEntry,
    ContextEpoch,
    Dispatch,
    LogEntry,
    Summary,
    ToolResultEntry,
    UserEntry,
    dump_entry,
    now,
)
from agentsession.request import ToolCall
from agentsession.store import SessionInfo, Store

from .conftest import StoreFactory, inject_row
from .strategies import ENTRY_STRATEGIES, entry


def new_info(session_id: str, **fields: Any) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp, **fields)


def users(*texts: str) -> list[LogEntry]:
    return [UserEntry(t) for t in texts]


async def entries_of(store: Store, session_id: str, **kw: Any) -> list[tuple[int, LogEntry]]:
    return [(r.seq, r.entry) for r in await store.read(session_id, **kw)]


# -- sessions --------------------------------------------------------------------------------


async def test_create_get_list(store: Store) -> None:
    assert await store.list_sessions() == []
    first = new_info("a", title="first", project_dir="/p")
    await store.create_session(first)
    await asyncio.sleep(0.001)
    await store.create_session(new_info("b"))

    assert await store.get_session("a") == first
    listed = await store.list_sessions()
    assert [s.id for s in listed] == ["b", "a"]
    assert [s.next_seq for s in listed] == [0, 0]

    # An append makes "a" the most recently updated one and moves its next_seq.
    await asyncio.sleep(0.001)
    await store.append("a", 0, users("x", "y"))
    listed = await store.list_sessions()
    assert [s.id for s in listed] == ["a", "b"]
    got = await store.get_session("a")
    assert got.next_seq == 2
    assert got.updated_at > first.updated_at
    assert (got.created_at, got.title, got.project_dir) == (first.created_at, "first", "/p")


async def test_set_title(store: Store) -> None:
    await store.create_session(new_info("a"))
    await store.set_title("a", "Fixing the </skill> parser ✓")
    assert (await store.get_session("a")).title == "Fixing the </skill> parser ✓"


async def test_create_existing_id_conflicts(store: Store) -> None:
    await store.create_session(new_info("a", title="kept"))
    with pytest.raises(ConflictError, match="already exists"):
        await store.create_session(new_info("a", title="other"))
    assert (await store.get_session("a")).title == "kept"


async def test_next_seq_in_info_is_ignored_on_create(store: Store) -> None:
    await store.create_session(dataclasses.replace(new_info("a"), next_seq=7))
    assert (await store.get_session("a")).next_seq == 0
    await store.append("a", 0, users("x"))


async def test_unknown_session(store: Store) -> None:
    await store.create_session(new_info("a"))
    calls = [
        store.get_session("nope"),
        store.set_title("nope", "t"),
        store.append("nope", 0, users("x")),
        store.append("nope", 0, []),
        store.read("nope"),
        store.read("nope", kinds=["user"]),
        store.last("nope", ["user"]),
    ]
    for call in calls:
        with pytest.raises(SessionNotFoundError) as info:
            await call
        assert info.value.session_id == "nope"


# -- append and read -------------------------------------------------------------------------


async def test_append_returns_records_and_reads_back(store: Store) -> None:
    await store.create_session(new_info("a"))
    batch: list[LogEntry] = [
        UserEntry("hi"),
        AssistantEntry("hello", model="m"),
        Dispatch("m", 1, "d"),
    ]
    records = await store.append("a", 0, batch)
    assert [(r.seq, r.entry) for r in records] == list(enumerate(batch))
    more = await store.append("a", 3, users("again"))
    assert [r.seq for r in more] == [3]
    assert await entries_of(store, "a") == [*enumerate(batch), (3, UserEntry("again"))]


async def test_read_ranges_and_kinds(store: Store) -> None:
    await store.create_session(new_info("a"))
    log: list[LogEntry] = []
    for i in range(10):
        log.append(UserEntry(f"u{i}") if i % 2 == 0 else AssistantEntry(f"a{i}"))
    log[5] = Dispatch("m", 5, "d5")
    await store.append("a", 0, log[:4])
    await store.append("a", 4, log[4:])

    everything = list(enumerate(log))
    assert await entries_of(store, "a") == everything
    assert await entries_of(store, "a", start=3) == everything[3:]
    assert await entries_of(store, "a", start=3, end=6) == everything[3:6]
    assert await entries_of(store, "a", end=2) == everything[:2]
    assert await entries_of(store, "a", start=9, end=100) == everything[9:]
    assert await entries_of(store, "a", start=10) == []
    assert await entries_of(store, "a", start=6, end=3) == []
    assert await entries_of(store, "a", start=-5, end=1) == everything[:1]
    assert await entries_of(store, "a", start=2, end=2**70) == everything[2:]

    assert await entries_of(store, "a", kinds=["user"]) == [e for e in everything if e[0] % 2 == 0]
    assert await entries_of(store, "a", kinds=["dispatch", "assistant"]) == [
        e for e in everything if e[0] % 2 == 1
    ]
    assert await entries_of(store, "a", start=2, end=7, kinds=["user", "user"]) == [
        everything[2],
        everything[4],
        everything[6],
    ]
    assert await entries_of(store, "a", kinds=[]) == []
    assert await entries_of(store, "a", kinds=["summary"]) == []


async def test_a_bare_kind_string_means_that_kind(store: Store) -> None:
    await store.create_session(new_info("a"))
    await store.append("a", 0, [UserEntry("u"), Summary("s", 0)])
    assert [r.seq for r in await store.read("a", kinds="summary")] == [1]
    newest = await store.last("a", "user")
    assert newest is not None
    assert newest.seq == 0


async def test_read_empty_session(store: Store) -> None:
    await store.create_session(new_info("a"))
    assert await store.read("a") == []
    assert await store.last("a", ["user"]) is None


async def test_last(store: Store) -> None:
    await store.create_session(new_info("a"))
    await store.append("a", 0, [ContextEpoch(0, (), (), 0), UserEntry("u"), Summary("s", 1)])
    await store.append("a", 3, [AssistantEntry("x"), ContextEpoch(1, (("k", "v"),), (), 3)])
    await store.append("a", 5, users("later"))

    epoch = await store.last("a", ["epoch"])
    assert epoch is not None
    assert epoch.seq == 4
    assert epoch.entry == ContextEpoch(1, (("k", "v"),), (), 3)

    newest = await store.last("a", ["summary", "epoch", "user"])
    assert newest is not None
    assert newest.seq == 5
    summary = await store.last("a", ["summary", "summary"])
    assert summary is not None
    assert summary.seq == 2
    assert await store.last("a", ["model_switched"]) is None
    assert await store.last("a", []) is None


async def test_wrong_expected_seq_conflicts_and_writes_nothing(store: Store) -> None:
    await store.create_session(new_info("a"))
    await store.append("a", 0, users("one", "two"))
    before = await store.get_session("a")
    for expected in (0, 1, 3, 10, -1):
        with pytest.raises(ConflictError, match="next seq is 2"):
            await store.append("a", expected, users("intruder", "second"))
        with pytest.raises(ConflictError):
            await store.append("a", expected, [])
    assert await entries_of(store, "a") == list(enumerate(users("one", "two")))
    assert await store.get_session("a") == before
    await store.append("a", 2, users("three"))
    assert (await store.get_session("a")).next_seq == 3


async def test_empty_append_at_the_right_seq_is_a_no_op(store: Store) -> None:
    await store.create_session(new_info("a"))
    before = await store.get_session("a")
    assert await store.append("a", 0, []) == []
    assert await store.get_session("a") == before


async def test_unencodable_entry_is_refused_whole(store: Store) -> None:
    await store.create_session(new_info("a"))
    bad = AssistantEntry(tool_calls=(ToolCall("f", {"x": object()}),))
    with pytest.raises(StoreError, match="entry 1 of the batch"):
        await store.append("a", 0, [UserEntry("ok"), bad])
    assert await store.read("a") == []
    assert (await store.get_session("a")).next_seq == 0


async def test_entries_are_isolated_from_the_caller(store: Store) -> None:
    await store.create_session(new_info("a"))
    args: dict[str, Any] = {"path": "a.txt", "lines": [1, 2]}
    await store.append("a", 0, [AssistantEntry(tool_calls=(ToolCall("read", args, "c1"),))])
    args["lines"].append(3)
    (record,) = await store.read("a")
    assert isinstance(record.entry, AssistantEntry)
    assert record.entry.tool_calls[0].arguments == {"path": "a.txt", "lines": [1, 2]}


async def test_lone_surrogates_survive(store: Store) -> None:
    await store.create_session(new_info("a"))
    entry = ToolResultEntry("c1", "read", "broken \ud800 half pair \udfff end ✓")
    await store.append("a", 0, [entry])
    assert await entries_of(store, "a") == [(0, entry)]


async def test_closed_store_refuses_calls(store: Store) -> None:
    await store.create_session(new_info("a"))
    await store.close()
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.get_session("a")
    with pytest.raises(StoreError, match="closed"):
        await store.append("a", 0, users("x"))
    with pytest.raises(StoreError, match="closed"):
        await store.list_sessions()


async def test_async_context_manager(make_store: StoreFactory) -> None:
    made = make_store()
    assert isinstance(made, Store)
    async with made as opened:  # type: ignore[attr-defined]
        await opened.create_session(new_info("a"))
    with pytest.raises(StoreError):
        await made.list_sessions()


# -- damaged rows ----------------------------------------------------------------------------
# Only a database can be damaged from outside: these run on the stores another connection
# reaches. The memory store decodes through the same ``decode_row``.

_GOOD = json.dumps({"content": "fine", "timestamp": ""})


@pytest.mark.parametrize(
    ("kind", "version", "data", "message"),
    [
        ("user", 1, "{not json", "not valid JSON"),
        ("user", 1, "[1, 2]", "not a JSON object"),
        ("hologram", 1, _GOOD, "unknown entry kind 'hologram'"),
        ("user", 99, _GOOD, "version 99, newer than"),
        ("user", 1, json.dumps({"content": 5}), "malformed 'user' entry"),
        ("user", 1, json.dumps({"content": "x", "colour": "red"}), "unknown fields"),
        ("user", 1, json.dumps({"content": "x", "kind": "assistant"}), "stored as 'user'"),
    ],
)
async def test_corrupt_row_names_its_seq(
    db_store: Store, kind: str, version: int, data: str, message: str
) -> None:
    store = db_store
    await store.create_session(new_info("sess-1"))
    await store.append("sess-1", 0, users("a", "b"))
    inject_row(store, "sess-1", 2, kind, version, data)
    await store.append("sess-1", 3, users("after"))

    # Rows before and after the damaged one still read.
    assert len(await store.read("sess-1", end=2)) == 2
    assert len(await store.read("sess-1", start=3)) == 1

    with pytest.raises(CorruptEntryError, match=message) as info:
        await store.read("sess-1")
    assert info.value.seq == 2
    assert info.value.session_id == "sess-1"
    assert "seq 2" in str(info.value)
    assert isinstance(info.value, StoreError)

    if kind == "user":
        newest = await store.last("sess-1", ["user"])
        assert newest is not None
        assert newest.seq == 3  # an indexed lookup never touches the damaged row
    else:
        with pytest.raises(CorruptEntryError) as info:
            await store.last("sess-1", [kind, "summary"])
        assert info.value.seq == 2


async def test_last_reports_a_corrupt_newest_row(db_store: Store) -> None:
    store = db_store
    await store.create_session(new_info("s"))
    await store.append("s", 0, users("a"))
    inject_row(store, "s", 1, "user", 1, "{")
    with pytest.raises(CorruptEntryError, match="seq 1") as info:
        await store.last("s", ["user"])
    assert info.value.seq == 1


# -- round trip ------------------------------------------------------------------------------


def test_strategies_cover_every_entry_kind() -> None:
    assert set(ENTRY_STRATEGIES) == set(VERSIONS)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(ENTRY_STRATEGIES)), data=st.data())
def test_each_strategy_builds_its_kind(kind: str, data: st.DataObject) -> None:
    assert data.draw(ENTRY_STRATEGIES[kind]).kind == kind


def test_round_trip_through_the_store(make_store: StoreFactory) -> None:
    """Whatever is appended reads back equal, with the same stored form, alone or by kind."""
    with asyncio.Runner() as runner:
        store = make_store()
        try:

            @settings(
                max_examples=150,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            )
            @given(batches=st.lists(st.lists(entry, min_size=1, max_size=5), max_size=3))
            def check(batches: list[list[LogEntry]]) -> None:
                runner.run(_round_trip(store, batches))

            check()
        finally:
            runner.run(store.close())


async def _round_trip(store: Store, batches: list[list[LogEntry]]) -> None:
    session_id = uuid.uuid4().hex
    await store.create_session(new_info(session_id))
    written: list[LogEntry] = []
    for batch in batches:
        await store.append(session_id, len(written), batch)
        written.extend(batch)
    got = await store.read(session_id)
    assert [r.seq for r in got] == list(range(len(written)))
    assert [r.entry for r in got] == written
    assert [dump_entry(r.entry) for r in got] == [dump_entry(e) for e in written]
    for kind in {e.kind for e in written}:
        newest = await store.last(session_id, [kind])
        assert newest is not None
        assert newest.entry == written[newest.seq]
        assert newest.seq == max(i for i, e in enumerate(written) if e.kind == kind)
        by_kind = await store.read(session_id, kinds=[kind])
        assert [r.entry for r in by_kind] == [e for e in written if e.kind == kind]
