"""What only the SQLite store does: files, migrations, several writers, refused writes."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from agentsession.errors import (
    ConflictError,
    CorruptEntryError,
    SessionNotFoundError,
    StoreError,
)
from agentsession.log import AssistantEntry, ContextEpoch, LogEntry, UserEntry, now
from agentsession.request import ImagePart, TextPart, ToolCall
from agentsession.store import SessionInfo, SQLiteStore
from agentsession.store.migrations import LATEST, MIGRATIONS


def new_info(session_id: str, **fields: Any) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp, **fields)


def raw(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Run one statement on a separate connection, as another program would."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        yield store
    finally:
        await store.close()


async def snapshot(store: SQLiteStore, session_id: str) -> tuple[Any, ...]:
    return (await store.get_session(session_id), await store.read(session_id))


# -- opening -------------------------------------------------------------------------------


async def test_default_path_is_in_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def fake_user_data_dir(appname: str) -> str:
        calls.append(appname)
        return str(tmp_path / "data" / "nested")

    monkeypatch.setattr(platformdirs, "user_data_dir", fake_user_data_dir)
    store = SQLiteStore()
    try:
        assert calls == ["agentsession"]
        assert store.path == tmp_path / "data" / "nested" / "sessions.db"
        await store.create_session(new_info("a"))
    finally:
        await store.close()
    assert store.path.is_file()


async def test_the_file_is_in_wal_mode(db: SQLiteStore) -> None:
    # The journal mode is a property of the file: a second connection sees it. (Readers never
    # waiting for the writer is shown by test_a_held_write_lock_times_out_as_store_error.)
    await db.create_session(new_info("a"))
    assert raw(db.path, "PRAGMA journal_mode") == [("wal",)]


async def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    for _ in range(2):
        store = SQLiteStore(path)
        await store.close()
    rows = raw(path, "SELECT version, description, applied_at FROM schema_migrations")
    assert [(v, d) for v, d, _ in rows] == [(m.version, m.description) for m in MIGRATIONS]
    assert rows[-1][0] == LATEST
    assert all(isinstance(applied, str) and applied for _, _, applied in rows)
    tables = {name for (name,) in raw(path, "SELECT name FROM sqlite_master")}
    assert {"sessions", "entries", "entries_kind", "schema_migrations"} <= tables
    (entries_sql,) = raw(path, "SELECT sql FROM sqlite_master WHERE name = 'entries'")[0]
    assert "WITHOUT ROWID" in entries_sql
    assert "PRIMARY KEY (session_key, seq)" in entries_sql


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    await SQLiteStore(path).close()
    raw(path, "INSERT INTO schema_migrations VALUES (?, 'from the future', ?)", (LATEST + 1, now()))
    with pytest.raises(StoreError, match=f"schema version {LATEST + 1}, newer") as info:
        SQLiteStore(path)
    assert str(path) in str(info.value)


async def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    raw(path, "CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(StoreError, match="not an agentsession store"):
        SQLiteStore(path)
    assert {name for (name,) in raw(path, "SELECT name FROM sqlite_master")} == {"invoices"}
    assert raw(path, "PRAGMA journal_mode") == [("delete",)]


async def test_processes_opening_a_new_file_together_migrate_once(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    stores = await asyncio.gather(*(asyncio.to_thread(SQLiteStore, path) for _ in range(6)))
    for store in stores:
        await store.close()
    assert raw(path, "SELECT version FROM schema_migrations") == [(m.version,) for m in MIGRATIONS]


async def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 200)
    with pytest.raises(StoreError, match="not a database") as info:
        SQLiteStore(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value.__cause__, sqlite3.DatabaseError)
    assert path.read_text().startswith("these are my notes")


async def test_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory") as info:
        SQLiteStore(tmp_path)
    assert str(tmp_path) in str(info.value)


async def test_unwritable_location(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    path = blocker / "sub" / "sessions.db"
    with pytest.raises(StoreError, match="cannot create the directory") as info:
        SQLiteStore(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value.__cause__, OSError)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores modes")
async def test_read_only_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    await store.create_session(new_info("a"))
    await store.append("a", 0, [UserEntry("kept")])
    await store.close()
    os.chmod(path, 0o444)
    try:
        store = SQLiteStore(path)
        try:
            before = await snapshot(store, "a")
            with pytest.raises(StoreError, match="readonly") as info:
                await store.append("a", 1, [UserEntry("lost")])
            assert str(path) in str(info.value)
            assert await snapshot(store, "a") == before
        finally:
            await store.close()
    finally:
        os.chmod(path, 0o644)


# -- persistence ---------------------------------------------------------------------------


async def test_reopen_returns_identical_entries(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    log: list[LogEntry] = [
        ContextEpoch(0, (("core.date", "Today is 1 May."),), (("core.date", "h1"),), 0),
        UserEntry((TextPart("look </skill> at"), ImagePart("image/png", data="iVBORw0KGgo="))),
        AssistantEntry("", (ToolCall("read_file", {"path": "ä.txt", "n": [1, {"x": None}]}),)),
    ]
    store = SQLiteStore(path)
    await store.create_session(new_info("a", title="t", project_dir="/p"))
    await store.append("a", 0, log)
    before = (await store.list_sessions(), await store.read("a"))
    await store.close()

    again = SQLiteStore(path)
    try:
        assert (await again.list_sessions(), await again.read("a")) == before
        assert [r.entry for r in before[1]] == log
    finally:
        await again.close()


# -- several writers -----------------------------------------------------------------------


async def test_second_writer_on_the_same_file_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    one, two = SQLiteStore(path), SQLiteStore(path)
    try:
        await one.create_session(new_info("a"))
        with pytest.raises(ConflictError):
            await two.create_session(new_info("a"))
        # Both read next seq 0; the first append wins, the second is refused whole.
        assert (await two.get_session("a")).next_seq == 0
        await one.append("a", 0, [UserEntry("from one")])
        with pytest.raises(ConflictError, match="next seq is 1, this write expected 0") as lost:
            await two.append("a", 0, [UserEntry("from two"), UserEntry("two again")])
        # What the append knew, as fields: the session, the seq it expected, the one it found.
        assert (lost.value.session_id, lost.value.expected_seq, lost.value.found_seq) == ("a", 0, 1)
        assert [r.entry for r in await two.read("a")] == [UserEntry("from one")]
        await two.append("a", 1, [UserEntry("two, after re-reading")])
        assert len(await one.read("a")) == 2
    finally:
        await one.close()
        await two.close()


async def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    stores = [SQLiteStore(path) for _ in range(4)]
    try:
        await stores[0].create_session(new_info("a"))
        batches = [[UserEntry(f"w{i}-{j}") for j in range(5)] for i in range(len(stores))]
        results = await asyncio.gather(
            *(s.append("a", 0, b) for s, b in zip(stores, batches, strict=True)),
            return_exceptions=True,
        )
        winners = [i for i, r in enumerate(results) if not isinstance(r, BaseException)]
        assert len(winners) == 1
        assert all(isinstance(r, ConflictError) for r in results if isinstance(r, BaseException))
        assert [r.entry for r in await stores[-1].read("a")] == batches[winners[0]]
    finally:
        for store in stores:
            await store.close()


async def test_a_held_write_lock_times_out_as_store_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path, busy_timeout=0.05)
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        await store.create_session(new_info("a"))
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="locked") as info:
            await store.append("a", 0, [UserEntry("x")])
        assert str(path) in str(info.value)
        assert len(await store.read("a")) == 0  # WAL readers never wait for the writer
        blocker.execute("ROLLBACK")
        await store.append("a", 0, [UserEntry("x")])
    finally:
        blocker.close()
        await store.close()


# -- refused writes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "trigger",
    [
        # The disk fills up in the middle of the batch ...
        "CREATE TRIGGER full BEFORE INSERT ON entries WHEN NEW.seq = 3"
        " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
        # ... or after every entry went in, when the session row is touched.
        "CREATE TRIGGER full BEFORE UPDATE ON sessions"
        " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
    ],
)
async def test_a_failing_write_leaves_no_half_batch(db: SQLiteStore, trigger: str) -> None:
    await db.create_session(new_info("a"))
    await db.append("a", 0, [UserEntry("one"), UserEntry("two")])
    before = await snapshot(db, "a")
    raw(db.path, trigger)

    batch = [UserEntry("three"), UserEntry("four"), UserEntry("five")]
    with pytest.raises(StoreError, match="disk is full") as info:
        await db.append("a", 2, batch)
    assert str(db.path) in str(info.value)
    assert not isinstance(info.value, ConflictError)
    assert await snapshot(db, "a") == before
    assert raw(db.path, "SELECT count(*) FROM entries")[0][0] == 2

    # No transaction was left open: another writer gets the write lock at once (a held lock
    # would make it time out), and once there is room again the same batch goes in.
    raw(db.path, "DROP TRIGGER full")
    other = SQLiteStore(db.path, busy_timeout=0.05)
    try:
        await other.set_title("a", "written by another connection")
    finally:
        await other.close()
    await db.append("a", 2, batch)
    assert [r.entry for r in await db.read("a", start=2)] == batch


async def test_unknown_session_is_not_found_not_a_store_error(db: SQLiteStore) -> None:
    with pytest.raises(SessionNotFoundError):
        await db.append("ghost", 0, [UserEntry("x")])
    assert raw(db.path, "SELECT count(*) FROM entries")[0][0] == 0


# -- damaged rows --------------------------------------------------------------------------


async def test_a_damaged_session_row_is_a_store_error_naming_the_session(db: SQLiteStore) -> None:
    await db.create_session(new_info("hurt"))
    raw(db.path, "UPDATE sessions SET created_at = 12, next_seq = 'x' WHERE session_id = 'hurt'")
    for call in (
        db.get_session("hurt"),
        db.list_sessions(),
        db.append("hurt", 0, [UserEntry("x")]),
    ):
        with pytest.raises(StoreError, match="session 'hurt' is damaged"):
            await call


async def test_a_row_with_a_non_numeric_version_is_corrupt_not_a_type_error(
    db: SQLiteStore,
) -> None:
    await db.create_session(new_info("a"), [UserEntry("one"), UserEntry("two")])
    raw(db.path, "UPDATE entries SET version = 'one' WHERE seq = 1")
    with pytest.raises(CorruptEntryError, match="version 'one' is not a number") as info:
        await db.read("a")
    assert info.value.seq == 1
    assert info.value.session_id == "a"
