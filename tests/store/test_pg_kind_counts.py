"""PostgreSQL's per-session, per-kind entry totals (schema 5): backfilled, then kept by a trigger.

``count_now`` answers from them; what it answers must always equal a count of the log itself,
whichever way the entries came in (append, a streamed batch, a fork, a row written behind the
store's back) and for any ``end``.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsession.log import AssistantEntry, LogEntry, UserEntry, now
from agentsession.store import PostgresStore, SessionInfo
from agentsession.store.migrations import LATEST

from . import pg
from .conftest import inject_row

pytestmark = pytest.mark.postgres

KINDS = ["user", "assistant", "tool_result", "epoch", "nothing_like_it"]


def new_info(session_id: str) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp)


def counted(dsn: str, session_id: str, kinds: list[str], end: int) -> int:
    """The count ``count_now`` must give, straight from the log."""
    rows = pg.run(
        dsn,
        "SELECT count(*) FROM entries WHERE session_id = %s AND kind = ANY(%s) AND seq < %s",
        (session_id, kinds, end),
    )
    return int(rows[0][0])


def kept(dsn: str) -> dict[tuple[str, str], int]:
    rows = pg.run(dsn, "SELECT session_id, kind, entries FROM kind_counts")
    return {(str(s), str(k)): int(n) for s, k, n in rows}


def grouped(dsn: str) -> dict[tuple[str, str], int]:
    rows = pg.run(dsn, "SELECT session_id, kind, count(*) FROM entries GROUP BY 1, 2")
    return {(str(s), str(k)): int(n) for s, k, n in rows}


def make_schema_4(dsn: str, sessions: dict[str, list[tuple[str, str]]]) -> None:
    """A database as schema 4 left it (no ``kind_counts``), holding raw ``(kind, data)`` rows."""
    pg.make_schema(dsn, 4)
    stamp = now()
    for session_id, rows in sessions.items():
        pg.run(
            dsn,
            "INSERT INTO sessions (session_id, created_at, updated_at, next_seq)"
            " VALUES (%s, %s, %s, %s)",
            (session_id, stamp, stamp, len(rows)),
        )
        for seq, (kind, data) in enumerate(rows):
            pg.run(
                dsn,
                "INSERT INTO entries VALUES (%s, %s, %s, 1, %s, %s)",
                (session_id, seq, kind, data, stamp),
            )


async def test_migration_5_backfills_the_totals_of_a_schema_4_database(pg_dsn: str) -> None:
    logs = {
        "a": [("user", "{}"), ("assistant", "{}"), ("user", "{}"), ("tool_result", "{}")],
        "b": [("epoch", "{}")] + [("user", "{}")] * 7,
        "empty": [],
    }
    make_schema_4(pg_dsn, logs)
    assert pg.run(pg_dsn, "SELECT to_regclass('kind_counts') IS NULL") == [(True,)]
    store = PostgresStore(pg_dsn)
    try:
        await store.list_sessions()  # the first call migrates
        assert store._count_now("a", ["user"], 4) == 2
        assert store._count_now("a", ["user", "tool_result"], 4) == 3
        assert store._count_now("b", ["user"], 8) == 7
        assert store._count_now("b", ["user"], 3) == 2
        assert store._count_now("empty", ["user"], 0) == 0
    finally:
        await store.close()
    assert kept(pg_dsn) == grouped(pg_dsn)
    assert kept(pg_dsn)[("b", "user")] == 7
    assert pg.run(pg_dsn, "SELECT max(version) FROM schema_migrations") == [(LATEST,)]


async def test_a_read_only_store_on_schema_4_counts_in_the_index(pg_dsn: str) -> None:
    make_schema_4(pg_dsn, {"a": [("user", "{}"), ("assistant", "{}"), ("user", "{}")]})
    reader = PostgresStore(pg_dsn, read_only=True)
    try:
        await reader.list_sessions()
        assert reader._count_now("a", ["user"], 3) == 2
        assert reader._count_now("a", ["user"], 1) == 1
    finally:
        await reader.close()
    assert pg.run(pg_dsn, "SELECT max(version) FROM schema_migrations") == [(4,)]


def entry(kind: str, i: int) -> LogEntry:
    if kind == "user":
        return UserEntry(f"question {i}")
    return AssistantEntry(f"answer {i}", model="m")


batches = st.lists(
    st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=80),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=batches, ends=st.lists(st.integers(min_value=-2, max_value=400), max_size=6))
def test_the_totals_match_the_log_however_entries_came_in(
    pg_dsn: str, batches: list[list[str]], ends: list[int]
) -> None:
    """Appends (short ones insert row by row, long ones stream), forks, injected rows, deletes."""
    asyncio.run(check_totals(pg_dsn, batches, ends))


async def check_totals(dsn: str, batches: list[list[str]], ends: list[int]) -> None:
    sid = uuid.uuid4().hex
    store = PostgresStore(dsn)
    try:
        await store.create_session(new_info(sid))
        seq = 0
        for kinds in batches:
            await store.append(sid, seq, [entry(k, i) for i, k in enumerate(kinds)])
            seq += len(kinds)
        inject_row(store, sid, seq, "user", 1, "not json")
        seq += 1
        fork = f"{sid}_fork"
        await store.fork_session(sid, new_info(fork), seq // 2)
        assert kept(dsn) == grouped(dsn)
        for end in [*ends, seq, seq // 2, 0]:
            for wanted in (["user"], ["user", "assistant"], ["epoch"]):
                assert store._count_now(sid, wanted, end) == counted(dsn, sid, wanted, end)
                assert store._count_now(fork, wanted, end) == counted(dsn, fork, wanted, end)
        await store.delete_session(fork)
        assert not [key for key in kept(dsn) if key[0] == fork]
    finally:
        await store.close()


async def test_sessions_count_apart_and_unknown_sessions_are_not_found(pg_dsn: str) -> None:
    from agentsession.errors import SessionNotFoundError

    store = PostgresStore(pg_dsn)
    try:
        await store.create_session(new_info("x"), [UserEntry("1"), UserEntry("2")])
        await store.create_session(new_info("y"), [UserEntry("1")])
        assert (store._count_now("x", ["user"], 2), store._count_now("y", ["user"], 1)) == (2, 1)
        with pytest.raises(SessionNotFoundError):
            store._count_now("nobody", ["user"], 5)
    finally:
        await store.close()
