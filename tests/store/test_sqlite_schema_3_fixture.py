"""An SQLite file as schema version 3 left it keeps loading, migrated, forever.

``tests/fixtures/sqlite_schema_3.sql`` is frozen: the SQL text (``iterdump``) of a database that
schema version 3 wrote — a scripted session with a tool call, its kept baseline texts, a title
and a lease, a fork of it and an empty session. It is never regenerated (a database file is not
kept in the repository; its dump is). Each test builds the file from it, opens it with
``SQLiteStore`` (which migrates it to the newest schema) and checks that every session, entry,
kept text and lease reads back as schema 3 held it, and that the migrated file takes writes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentsession.errors import CorruptEntryError, SessionNotFoundError
from agentsession.log import Record, UserEntry
from agentsession.store import SessionInfo, SQLiteStore
from agentsession.store.base import decode_row, info_from_row
from agentsession.store.migrations import LATEST

FIXTURE = Path(__file__).parent.parent / "fixtures" / "sqlite_schema_3.sql"
MAIN = "4162bbfdd8d143a9adda87f266752ac8"
SESSIONS = (MAIN, "forked", "empty")
COLUMNS = (
    "session_id, created_at, updated_at, title, project_dir, next_seq, message_count,"
    " last_model, file_version"
)


def build(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(FIXTURE.read_text(encoding="utf-8"))
    finally:
        conn.close()


def as_schema_3_holds(path: Path) -> tuple[dict[str, list[Record]], dict[str, SessionInfo]]:
    """Every session's log and row, decoded straight from the schema-3 tables."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == (3,)
        logs: dict[str, list[Record]] = {}
        infos: dict[str, SessionInfo] = {}
        for session_id in SESSIONS:
            texts = dict(
                conn.execute("SELECT ref, text FROM texts WHERE session_id = ?", (session_id,))
            )
            rows = conn.execute(
                "SELECT seq, kind, version, data FROM entries WHERE session_id = ? ORDER BY seq",
                (session_id,),
            )
            logs[session_id] = [decode_row(session_id, s, k, v, d, texts) for s, k, v, d in rows]
            row = conn.execute(
                f"SELECT {COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
            )
            infos[session_id] = info_from_row(row.fetchone())
        return logs, infos
    finally:
        conn.close()


def test_the_fixture_is_a_schema_3_database(tmp_path: Path) -> None:
    build(tmp_path / "old.db")
    logs, infos = as_schema_3_holds(tmp_path / "old.db")
    kinds = {r.entry.kind for r in logs[MAIN]}
    assert kinds == {
        "user",
        "epoch",
        "system_prompt_checkpoint",
        "dispatch",
        "assistant",
        "tool_result",
    }
    assert [len(logs[s]) for s in SESSIONS] == [20, 10, 0]
    assert infos[MAIN].title == "orders ✓"
    assert infos[MAIN].next_seq == 20


async def test_a_schema_3_file_migrates_and_reads_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build(path)
    logs, infos = as_schema_3_holds(path)
    store = SQLiteStore(path)
    try:
        for session_id in SESSIONS:
            assert await store.read(session_id) == logs[session_id]
            assert await store.get_session(session_id) == infos[session_id]
        listed = await store.list_sessions()
        assert sorted(i.id for i in listed) == sorted(SESSIONS)
        lease = await store.lease_of(MAIN)
        assert lease is not None and lease.owner == "worker-1"
        assert await store.lease_of("forked") is None
        epoch = await store.last(MAIN, ["epoch"])
        assert epoch is not None and epoch.entry == logs[MAIN][1].entry
        # Only some kinds, through the kind index.
        users = await store.read(MAIN, 0, None, ["user"])
        assert users == [r for r in logs[MAIN] if r.entry.kind == "user"]
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    conn.close()
    assert versions == list(range(1, LATEST + 1))


async def test_a_migrated_schema_3_file_takes_writes(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build(path)
    logs, infos = as_schema_3_holds(path)
    store = SQLiteStore(path)
    try:
        [added] = await store.append(MAIN, 20, [UserEntry("after the upgrade")])
        assert (await store.read(MAIN, 20)) == [added]
        assert (await store.get_session(MAIN)).message_count == infos[MAIN].message_count + 1
        fork = SessionInfo("second-fork", infos[MAIN].created_at, infos[MAIN].updated_at)
        await store.fork_session(MAIN, fork, 9)
        assert await store.read("second-fork") == logs[MAIN][:10]
        await store.create_session(SessionInfo("new", "t", "t"), [UserEntry("hello")])
        assert [r.entry for r in await store.read("new")] == [UserEntry("hello")]
        await store.delete_session("forked")
        with pytest.raises(SessionNotFoundError):
            await store.read("forked")
        # The other sessions' logs are untouched by the delete.
        assert await store.read(MAIN, 0, 20) == logs[MAIN]
        assert await store.read("second-fork") == logs[MAIN][:10]
    finally:
        await store.close()
    # And the file opens again (nothing left to migrate) with the same contents.
    again = SQLiteStore(path)
    try:
        assert (await again.read(MAIN))[:20] == logs[MAIN]
    finally:
        await again.close()


async def test_entry_counts_by_kind_agree_with_the_log_after_migrating_and_writing(
    tmp_path: Path,
) -> None:
    """``count_now`` answers from kept totals at the log's end and from the index before it."""
    path = tmp_path / "old.db"
    build(path)
    store = SQLiteStore(path)
    try:
        await store.append(MAIN, 20, [UserEntry("one"), UserEntry("two")])
        fork = SessionInfo("copy", "t", "t")
        await store.fork_session(MAIN, fork, 14)
        await store.delete_session("forked")
        for session_id in (MAIN, "copy", "empty"):
            log = await store.read(session_id)
            end = (await store.get_session(session_id)).next_seq
            for kinds in (["user"], ["user", "assistant"], ["dispatch", "epoch"], []):
                for stop in (end, end + 5, end // 2, 0):
                    expected = sum(r.entry.kind in kinds and r.seq < stop for r in log)
                    assert store._count_now(session_id, kinds, stop) == expected
        with pytest.raises(SessionNotFoundError):
            store._count_now("forked", ["user"], 100)
    finally:
        await store.close()


async def test_known_kinds_are_stored_as_codes_and_an_unknown_code_is_a_damaged_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    build(path)
    store = SQLiteStore(path)
    try:
        await store.append(MAIN, 20, [UserEntry("new")])
        conn = sqlite3.connect(path)
        with conn:
            stored = set(conn.execute("SELECT DISTINCT typeof(kind) FROM entries"))
            assert stored == {("integer",)}  # migrated rows and new ones alike
            # A row whose code this version does not know (a newer writer's kind).
            conn.execute(
                "INSERT INTO entries (session_key, seq, kind, version, data) VALUES"
                " ((SELECT session_key FROM sessions WHERE session_id = ?), 21, 999, 1, '{}')",
                (MAIN,),
            )
            conn.execute("UPDATE sessions SET next_seq = 22 WHERE session_id = ?", (MAIN,))
        conn.close()
        with pytest.raises(CorruptEntryError) as caught:
            await store.read(MAIN, 21)
        assert caught.value.seq == 21
        assert [r.entry for r in await store.read(MAIN, 20, 21)] == [UserEntry("new")]
    finally:
        await store.close()
