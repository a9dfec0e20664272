"""``SQLiteStore(path, read_only=True)``: reads, never writes, never creates anything.

The read-only folder is real: when the tests run as root (who ignores permission bits), the
reading process runs as the unprivileged ``nobody`` user instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsession.errors import SessionNotFoundError, StoreError
from agentsession.log import AssistantEntry, UserEntry, now
from agentsession.store import SessionInfo, SQLiteStore, Store
from agentsession.store.migrations import (
    LATEST,
    MIGRATIONS,
    SQLITE_READABLE_FROM,
    create_migrations_table,
)

from ..unprivileged import unprivileged
from .test_sqlite_schema_3_fixture import MAIN as SCHEMA_3_MAIN
from .test_sqlite_schema_3_fixture import build as build_schema_3


def new_info(session_id: str, **fields: Any) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp, **fields)


def names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def make_database(path: Path) -> None:
    store = SQLiteStore(path)
    try:
        await store.create_session(new_info("a", title="kept"), [UserEntry("hello")])
        await store.append("a", 1, [AssistantEntry("hi", model="m")])
        assert await store.acquire_lease("a", "worker", 600)
    finally:
        await store.close()


def test_a_missing_file_is_an_error_and_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "nested" / "sessions.db"
    with pytest.raises(StoreError, match="no session store at") as info:
        SQLiteStore(path, read_only=True)
    assert str(path) in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        SQLiteStore(tmp_path, read_only=True)


def test_files_that_are_not_session_stores_are_refused_unchanged(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 100)
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    before = {p.name: digest(p) for p in tmp_path.iterdir()}
    for path, message in (
        (notes, "not a database"),
        (empty, "holds no sessions schema"),
        (foreign, "not an agentsession store"),
    ):
        with pytest.raises(StoreError, match=message):
            SQLiteStore(path, read_only=True)
    assert {p.name: digest(p) for p in tmp_path.iterdir()} == before


def test_an_older_schema_is_refused_not_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(create_migrations_table("sqlite"))
        for statement in MIGRATIONS[0].sql("sqlite"):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (1, 'one', '')")
    conn.close()
    before = digest(path)
    with pytest.raises(StoreError, match=r"schema version 1, older.*open it once for writing"):
        SQLiteStore(path, read_only=True)
    assert digest(path) == before


async def test_a_schema_3_file_is_refused_until_a_write_upgrades_it(tmp_path: Path) -> None:
    # Schema 4 moved SQLite's log to an integer session key, so a reader of this code cannot
    # read the old layout as it is: it says how to upgrade and leaves the file alone.
    path = tmp_path / "s.db"
    build_schema_3(path)
    assert SQLITE_READABLE_FROM == 4 <= LATEST  # PostgreSQL-only migration 5 keeps it at 4
    before = digest(path)
    with pytest.raises(StoreError, match=r"schema version 3, older.*open it once for writing"):
        SQLiteStore(path, read_only=True)
    assert digest(path) == before
    writer = SQLiteStore(path)
    await writer.close()
    store: Store = SQLiteStore(path, read_only=True)
    try:
        assert {i.title for i in await store.list_sessions()} == {"orders ✓", "a fork", None}
        assert len(await store.read(SCHEMA_3_MAIN)) == 20
    finally:
        await store.close()


async def test_reads_work_and_every_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    await make_database(path)
    before = digest(path)
    store: Store = SQLiteStore(path, read_only=True)
    try:
        assert "read_only=True" in repr(store)
        (info,) = await store.list_sessions()
        assert (info.id, info.title, info.next_seq, info.message_count) == ("a", "kept", 2, 2)
        assert [r.entry for r in await store.read("a")] == [
            UserEntry("hello"),
            AssistantEntry("hi", model="m"),
        ]
        newest = await store.last("a", ["assistant"])
        assert newest is not None
        assert newest.seq == 1
        lease = await store.lease_of("a")
        assert lease is not None
        assert lease.owner == "worker"
        with pytest.raises(SessionNotFoundError):
            await store.read("nope")
        for call in (
            store.append("a", 2, [UserEntry("lost")]),
            store.create_session(new_info("b")),
            store.set_title("a", "changed"),
            store.delete_session("a"),
            store.fork_session("a", new_info("f"), 0),
            store.acquire_lease("a", "worker", 600),
            store.release_lease("a", "worker"),
        ):
            with pytest.raises(StoreError, match="readonly") as caught:
                await call
            assert isinstance(caught.value.__cause__, sqlite3.Error)
    finally:
        await store.close()
    assert digest(path) == before
    # SQLite may leave its WAL companions beside the file; nothing else appears.
    assert names(tmp_path) <= {"s.db", "s.db-wal", "s.db-shm"}


async def test_a_reader_sees_what_a_writer_commits_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    await make_database(path)
    writer = SQLiteStore(path)
    reader = SQLiteStore(path, read_only=True)
    try:
        for seq in range(2, 6):
            await writer.append("a", seq, [UserEntry(f"more {seq}")])
            assert (await reader.get_session("a")).next_seq == seq + 1
            newest = await reader.last("a", ["user"])
            assert newest is not None
            assert newest.entry == UserEntry(f"more {seq}")
    finally:
        await reader.close()
        await writer.close()


# -- a folder the reader cannot write --------------------------------------------------------

_READER = """
import asyncio, json, sys
from agentsession.store import SQLiteStore
from agentsession.log import UserEntry

async def main():
    store = SQLiteStore(sys.argv[1], read_only=True)
    try:
        sessions = [s.id for s in await store.list_sessions()]
        entries = [r.seq for r in await store.read("a")]
        try:
            await store.append("a", len(entries), [UserEntry("lost")])
            refused = None
        except Exception as exc:
            refused = type(exc).__name__
        print(json.dumps({"sessions": sessions, "entries": entries, "refused": refused}))
    finally:
        await store.close()

asyncio.run(main())
"""


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A temp folder the unprivileged reader can reach (pytest's own is private to its user)."""
    base = Path(tempfile.mkdtemp(prefix="agentsession-ro-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        for sub in [base, *base.rglob("*")]:
            sub.chmod(0o755 if sub.is_dir() else 0o644)
        shutil.rmtree(base)


@pytest.mark.parametrize("leftover_wal", [False, True])
def test_reading_in_a_read_only_folder(shared_dir: Path, leftover_wal: bool) -> None:
    folder = shared_dir / "db"
    folder.mkdir()
    path = folder / "s.db"
    asyncio.run(make_database(path))
    if leftover_wal:
        # A reader that ran while the folder was writable left the WAL companions behind.
        asyncio.run(SQLiteStore(path, read_only=True).close())
        assert (folder / "s.db-shm").exists()
    folder.chmod(0o555)
    for file in folder.iterdir():
        file.chmod(0o444)
    before = {p.name: digest(p) for p in folder.iterdir()}

    prefix = unprivileged()
    done = subprocess.run(
        [*prefix, sys.executable, "-c", _READER, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "sessions": ["a"],
        "entries": [0, 1],
        "refused": "StoreError",
    }
    assert {p.name: digest(p) for p in folder.iterdir()} == before
