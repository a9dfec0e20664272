"""A reopen's reads from one snapshot (``_postgres_snapshot``): the same answers, or none.

A fresh ``PostgresStore`` whose first call is ``get_session`` fetches what a reopen reads in
one round trip. Every answer it gives from that snapshot must equal the server's own read, it
must answer exactly the reads it holds whole (so the reopen is one round trip), and it must be
gone once the store writes, once a read names a longer log, and once it is old.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsession.engine.epoch_view import record_view_start
from agentsession.errors import ConflictError, SessionNotFoundError, StoreError
from agentsession.log import AssistantEntry, ContextEpoch, Dispatch, LogEntry, UserEntry, now
from agentsession.projection import VIEW_KINDS
from agentsession.store import PostgresStore, SessionInfo, _postgres_snapshot
from agentsession.store._postgres_snapshot import RARE, TAIL, Miss, Snapshot, take
from agentsession.store.migrations import LATEST

from . import pg
from .test_pg_kind_counts import make_schema_4

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots stay fresh for an hour here: a loaded machine must not change what is read."""
    monkeypatch.setattr(_postgres_snapshot, "FRESH_FOR", 3600.0)


LONG = "<instructions>\n" + "Keep answers short and cite the files you read.\n" * 40


def new_info(session_id: str) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp)


def entry(kind: str, i: int) -> LogEntry:
    if kind == "user":
        return UserEntry(f"question {i}")
    if kind == "assistant":
        return AssistantEntry(f"answer {i}", model="m")
    if kind == "dispatch":
        return Dispatch("m", i, f"d{i}")
    # An epoch whose long section is kept once per session (read back through ``texts``).
    baseline = (("core.instructions", LONG + str(i % 3)), ("core.tiny", "ok"))
    return ContextEpoch(i, baseline, (), max(0, i - 5), "window", "m", timestamp=now())


def make_log(length: int, epochs: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    kinds = [rng.choice(["user", "assistant", "assistant", "dispatch"]) for _ in range(length)]
    for _ in range(epochs):
        kinds.insert(rng.randrange(len(kinds) + 1), "epoch")
    return kinds


async def build(store: PostgresStore, session_id: str, kinds: list[str]) -> None:
    await store.create_session(new_info(session_id))
    entries = [entry(kind, i) for i, kind in enumerate(kinds)]
    for first in range(0, len(entries), 150):
        await store.append(session_id, first, entries[first : first + 150])


KIND_SETS: list[list[str] | None] = [
    None,
    ["user"],
    ["epoch"],
    ["epoch", "dispatch"],
    ["runtime_context"],  # a kind the session never held
    ["user", "assistant", "epoch"],
]


def answer(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Miss:
        return Miss


def texts_of(entry: LogEntry) -> set[str]:
    """The long (kept) texts of an epoch."""
    if not isinstance(entry, ContextEpoch):
        return set()
    return {text for _, text in entry.baseline if len(text) > 100}


def compare(snap: Snapshot, reference: PostgresStore, sid: str, kinds: list[str]) -> None:
    last_epoch = reference._last_now(sid, ["epoch"])
    newest = set() if last_epoch is None else texts_of(last_epoch.entry)
    end = len(kinds)
    counts = {kind: kinds.count(kind) for kind in set(kinds)}
    tail_start = max(0, end - TAIL)
    starts = {0, 1, tail_start - 1, tail_start, tail_start + 1, end - 1, end, end + 3}
    ends: list[int | None] = [None, end, end + 1, tail_start, end // 2]
    for wanted in KIND_SETS:
        for start in sorted(s for s in starts if s >= 0):
            for stop in ends:
                got = answer(snap.read, start, stop, wanted)
                whole = wanted is not None and all(counts.get(k, 0) <= RARE for k in wanted)
                missing = (stop is not None and stop > end) or (start < tail_start and not whole)
                expected = [] if missing else reference._read_now(sid, start, stop, wanted)
                # It holds the kept texts of the newest epoch alone (what a reopen reads).
                missing = missing or any(texts_of(r.entry) - newest for r in expected)
                assert (got is Miss) == missing, (start, stop, wanted)
                if got is not Miss:
                    assert got == expected
        if wanted:
            assert snap.last(wanted) == reference._last_now(sid, wanted)
            for stop in (end, end - 1, tail_start, tail_start - 1, end + 1):
                got = answer(snap.count, wanted, stop)
                missing = stop > end or max(stop, 0) < tail_start
                assert (got is Miss) == missing, (wanted, stop)
                if got is not Miss:
                    assert got == reference._count_now(sid, wanted, stop)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    length=st.integers(min_value=0, max_value=2 * TAIL + 40),
    epochs=st.integers(min_value=0, max_value=RARE + 4),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_the_snapshot_answers_as_the_server_does_or_not_at_all(
    pg_dsn: str, length: int, epochs: int, seed: int
) -> None:
    asyncio.run(check_snapshot(pg_dsn, make_log(length, epochs, seed)))


async def check_snapshot(dsn: str, kinds: list[str]) -> None:
    sid = uuid.uuid4().hex
    reference = PostgresStore(dsn)  # its first call is no reopen: it reads from the server
    try:
        await build(reference, sid, kinds)
        with psycopg.connect(dsn, autocommit=True) as conn:
            snap = take(conn, sid)
            assert take(conn, "nobody") == LATEST  # no such session: the schema version alone
        assert isinstance(snap, Snapshot) and snap.next_seq == len(kinds)
        assert snap.session[0] == sid and snap.lease == (None, None)
        compare(snap, reference, sid, kinds)
    finally:
        await reference.close()


async def test_a_reopen_is_answered_until_the_store_writes(pg_dsn: str) -> None:
    kinds = make_log(TAIL + 50, 3, 7)
    writer, reader = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    try:
        await build(writer, "s", kinds)
        info = await reader.get_session("s")  # a reopen: the snapshot is taken
        assert info.next_seq == len(kinds)
        assert reader._now._served("s") is not None
        await writer.append("s", len(kinds), [UserEntry("later")])
        # Read within the snapshot: the log as it was when the reopen began.
        assert len(await reader.read("s", len(kinds) - 5)) == 5
        # A read that names the longer log is not answered from it, nor is any read after.
        assert [r.entry for r in reader._read_now("s", len(kinds), len(kinds) + 1)] == [
            UserEntry("later")
        ]
        assert reader._now._served("s") is None
        assert len(reader._read_now("s", len(kinds) - 5, None)) == 6
    finally:
        await writer.close()
        await reader.close()


async def test_a_reopen_makes_no_pool_and_the_first_write_makes_it(pg_dsn: str) -> None:
    writer, reader = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    try:
        await build(writer, "s", ["user", "assistant", "dispatch"])
        assert (await reader.get_session("s")).next_seq == 3
        assert [r.seq for r in await reader.read("s")] == [0, 1, 2]
        assert await reader.lease_of("s") is None
        assert reader._pool is None  # every read so far came from the snapshot
        await reader.append("s", 3, [UserEntry("next")])
        assert reader._pool is not None
        assert [r.entry for r in await reader.read("s", 3)] == [UserEntry("next")]
    finally:
        await writer.close()
        await reader.close()
    with pytest.raises(StoreError, match="closed"):
        await reader.append("s", 4, [UserEntry("after close")])


async def test_the_first_write_drops_the_snapshot(pg_dsn: str) -> None:
    writer, reader = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    try:
        await build(writer, "s", ["user", "assistant"])
        await reader.get_session("s")
        await writer.append("s", 2, [UserEntry("theirs")])
        with pytest.raises(ConflictError):  # the stale view loses the race: nothing is lost
            await reader.append("s", 2, [UserEntry("mine")])
        assert reader._now._served("s") is None
        assert (await reader.get_session("s")).next_seq == 3
        assert reader._last_now("s", ["user"]) is not None
        found = reader._last_now("s", ["user"])
        assert found is not None and found.entry == UserEntry("theirs")
    finally:
        await writer.close()
        await reader.close()


async def test_an_old_snapshot_answers_nothing(pg_dsn: str) -> None:
    writer, reader = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    try:
        await build(writer, "s", ["user"])
        await reader.get_session("s")
        await writer.append("s", 1, [UserEntry("later")])
        snap = reader._now._served("s")
        assert snap is not None
        snap._taken -= _postgres_snapshot.FRESH_FOR  # as if that long had passed, unwaited
        assert len(await reader.read("s")) == 2
    finally:
        await writer.close()
        await reader.close()


async def test_a_reopen_refuses_a_newer_schema(pg_dsn: str) -> None:
    first = PostgresStore(pg_dsn)
    try:
        await first.create_session(new_info("s"), [UserEntry("q")])
    finally:
        await first.close()
    pg.run(pg_dsn, "INSERT INTO schema_migrations VALUES (%s, 'future', %s)", (LATEST + 1, now()))
    later = PostgresStore(pg_dsn)
    try:
        with pytest.raises(StoreError, match=f"schema version {LATEST + 1}, newer"):
            await later.get_session("s")
    finally:
        await later.close()


async def test_a_reopen_of_an_empty_database_migrates_it(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    try:
        with pytest.raises(SessionNotFoundError):
            await store.get_session("s")
        await store.create_session(new_info("s"), [UserEntry("q")])
        assert (await store.get_session("s")).next_seq == 1
    finally:
        await store.close()
    assert pg.run(pg_dsn, "SELECT max(version) FROM schema_migrations") == [(LATEST,)]


@pytest.mark.parametrize("read_only", [False, True])
async def test_a_reopen_of_a_schema_4_database(pg_dsn: str, read_only: bool) -> None:
    make_schema_4(pg_dsn, {"a": [("user", '{"content":"q"}'), ("user", '{"content":"r"}')]})
    store = PostgresStore(pg_dsn, read_only=read_only)
    try:
        assert (await store.get_session("a")).next_seq == 2
        assert store._count_now("a", ["user"], 2) == 2
        assert [r.entry for r in await store.read("a")] == [UserEntry("q"), UserEntry("r")]
    finally:
        await store.close()
    version = 4 if read_only else LATEST
    assert pg.run(pg_dsn, "SELECT max(version) FROM schema_migrations") == [(version,)]


def separately(store: PostgresStore, sid: str, end: int) -> tuple[Any, list[Any], Any]:
    """What ``read_view`` answers, in three reads of the server."""
    found = store._last_now(sid, ["epoch"])
    start = 0 if found is None else record_view_start(found)
    records = store._read_now(sid, start, end, VIEW_KINDS)
    return found, records, store._last_now(sid, ["dispatch"]) if found is not None else None


@pytest.mark.parametrize("epochs", [0, 1, 4])
async def test_read_view_gives_what_three_reads_give(pg_dsn: str, epochs: int) -> None:
    kinds = make_log(TAIL + 30, epochs, epochs)
    if epochs == 1:  # a window's epoch near the end: its view lies in the snapshot's tail
        kinds = [k for k in kinds if k != "epoch"]
        kinds.insert(len(kinds) - 20, "epoch")
    writer, reader = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    try:
        await build(writer, "s", kinds)
        expected = separately(writer, "s", len(kinds))
        await reader.get_session("s")  # a reopen: answered from the snapshot
        assert await reader._read_view("s", len(kinds), VIEW_KINDS, record_view_start, True) == (
            expected
        )
        # Answered from the snapshot when the view starts within its tail; else read afresh.
        within = expected[0] is not None and record_view_start(expected[0]) >= len(kinds) - TAIL
        assert (reader._now._served("s") is not None) == within
        await reader.append("s", len(kinds), [UserEntry("more")])  # now on the pool
        found, records, last = await reader._read_view(
            "s", len(kinds) + 1, VIEW_KINDS, record_view_start, False
        )
        assert (found, records[:-1], last) == (expected[0], expected[1], None)
        assert records[-1].entry == UserEntry("more")
        with pytest.raises(SessionNotFoundError):
            await reader._read_view("nobody", 5, VIEW_KINDS, record_view_start, True)
    finally:
        await writer.close()
        await reader.close()


async def test_count_held_answers_from_a_reopen_only(pg_dsn: str) -> None:
    kinds = make_log(TAIL + 40, 2, 11)
    users = kinds.count("user")
    writer, reader = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    try:
        await build(writer, "s", kinds)
        assert writer._count_held("s", ["user"], len(kinds)) is None  # no reopen, no snapshot
        await reader.get_session("s")
        assert reader._count_held("s", ["user"], len(kinds)) == users
        assert reader._count_held("s", ["user"], len(kinds) - 3) == kinds[:-3].count("user")
        assert reader._count_held("other", ["user"], len(kinds)) is None
        assert reader._count_held("s", ["user"], len(kinds) + 1) is None  # a longer log than seen
        await reader.get_session("s")
        await reader.append("s", len(kinds), [UserEntry("more")])  # the write drops it
        assert reader._count_held("s", ["user"], len(kinds) + 1) is None
        assert reader._count_now("s", ["user"], len(kinds) + 1) == users + 1
    finally:
        await writer.close()
        await reader.close()


async def test_a_reopened_session_knows_its_user_turns_without_asking_again(pg_dsn: str) -> None:
    import agentsession as ags

    async with ags.Runtime(store=PostgresStore(pg_dsn), model=ags.ScriptedModel(["a", "b"])) as rt:
        session = await rt.create_session()
        await session.prompt("one")
        await session.prompt("two")
    async with ags.Runtime(store=PostgresStore(pg_dsn), model=ags.ScriptedModel(["c"])) as rt:
        reopened = await rt.open_session(session.id)
        assert reopened._writer.transcript.known_user_turns() == 2  # taken from the snapshot
        await reopened.prompt("three")
        assert reopened._writer.transcript.known_user_turns() == 3
        assert sum(isinstance(m, ags.UserMessage) for m in reopened.messages) == 3


async def test_a_warm_store_answers_a_reopen_block_from_one_snapshot(pg_dsn: str) -> None:
    """Once its pool is in use, a store answers the reads of a ``reopening`` block from one
    snapshot — those of the block's own task, and only until the block ends."""
    import contextlib
    from collections.abc import AsyncIterator

    from agentsession.store.fast import reopening

    kinds = make_log(60, 2, 11)
    writer, reader = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    pooled = reader._connection
    reads: list[str] = []

    @contextlib.asynccontextmanager
    async def counted(action: str, *, write: bool = False) -> AsyncIterator[Any]:
        reads.append(action)
        async with pooled(action, write=write) as conn:
            yield conn

    try:
        await build(writer, "s", kinds)
        await reader.create_session(new_info("warm"))  # its pool is in use from now on
        reader._connection = counted  # type: ignore[method-assign]
        go, done = asyncio.Event(), asyncio.Event()
        elsewhere: list[int] = []

        async def another_task() -> None:
            await go.wait()
            elsewhere.append((await reader.get_session("s")).next_seq)
            done.set()

        other = asyncio.create_task(another_task())
        async with reopening(reader, "s"):
            info = await reader.get_session("s")
            dispatch = await reader.last("s", ["dispatch"])
            assert dispatch is not None
            tail = await reader.read("s", dispatch.seq)  # what a reopen reads: the last step
            users = await reader.read("s", kinds=["user"])
            lease = await reader.lease_of("s")
            await writer.append("s", len(kinds), [UserEntry("later")])
            go.set()
            await done.wait()
            again = await reader.get_session("s")  # still the block's moment
        inside = list(reads)
        after = await reader.get_session("s")
        await other
        assert inside == ["read session 's'"]  # the other task's read alone
        assert info.next_seq == again.next_seq == len(kinds)
        assert elsewhere == [len(kinds) + 1] and after.next_seq == len(kinds) + 1
        expected = await writer.last("s", ["dispatch"])
        assert expected is not None and dispatch.seq == expected.seq
        wanted = await writer.read("s", dispatch.seq, len(kinds))
        assert [r.entry for r in tail] == [r.entry for r in wanted]
        assert [r.seq for r in users] == [i for i, k in enumerate(kinds) if k == "user"]
        assert lease is None
    finally:
        await writer.close()
        await reader.close()
