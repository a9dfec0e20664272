"""SQLite's append remembers each session's key: the same outcomes as reading the row each time.

With a remembered key an append checks and updates the session row with one statement and
reads the row only when that statement changes nothing. These tests hold the remembering append
to the one that reads the row every time (a property over appends, conflicts, damaged rows and
sessions deleted and created again behind its back), and check the cases where a remembered key
is no longer right.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsession.errors import ConflictError, SessionNotFoundError, StoreError
from agentsession.log import Record, UserEntry, now
from agentsession.store import SessionInfo, SQLiteStore
from agentsession.store._sqlite import append_batch, insert_session, open_database
from agentsession.store._sqlite_sql import DELETE_SESSION
from agentsession.store.base import Batch

SESSIONS = ("a", "b")

#: A value of the wrong type for a session row column (``info_from_row`` refuses each).
DAMAGE: dict[str, Any] = {
    "created_at": b"\x00",  # a TEXT column turns a number into text; a blob stays a blob
    "updated_at": b"\x00",
    "title": b"\x00",
    "project_dir": b"\x00",
    "last_model": b"\x00",
    "next_seq": "x",
    "message_count": 1.5,
    "file_version": -3,
}


def info(session_id: str) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp)


def create(conn: sqlite3.Connection, session_id: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    # Fixed times: both files must hold the same rows.
    insert_session(conn, SessionInfo(session_id, "c", "u"), 0, Batch([], 0, None))
    conn.execute("COMMIT")


def delete(conn: sqlite3.Connection, session_id: str) -> None:
    with conn:
        for statement in DELETE_SESSION:
            conn.execute(statement, (session_id,))


def next_seq(conn: sqlite3.Connection, session_id: str) -> int:
    found = conn.execute("SELECT next_seq FROM sessions WHERE session_id = ?", (session_id,))
    row = found.fetchone()
    return row[0] if row is not None and isinstance(row[0], int) else 0


def dump(conn: sqlite3.Connection) -> list[Any]:
    """Everything the log's tables hold, but each row's update time (a clock reading)."""
    return [
        conn.execute(
            "SELECT session_id, session_key, created_at, title, project_dir, next_seq,"
            " message_count, last_model, file_version FROM sessions ORDER BY session_id"
        ).fetchall(),
        conn.execute("SELECT * FROM entries ORDER BY session_key, seq").fetchall(),
        conn.execute("SELECT * FROM kind_counts ORDER BY session_key, kind").fetchall(),
        conn.execute("SELECT * FROM texts ORDER BY session_id, ref").fetchall(),
    ]


def outcome(
    conn: sqlite3.Connection, keys: dict[str, int] | None, session_id: str, seq: int, batch: Batch
) -> tuple[str, str]:
    try:
        append_batch(conn, session_id, seq, batch, keys)
    except ConflictError as exc:
        return ("conflict", str(exc))
    except SessionNotFoundError:
        return ("not found", "")
    except StoreError as exc:  # a damaged row (its message quotes the row's update time)
        return ("store error", "damaged" if "damaged" in str(exc) else str(exc))
    return ("ok", "")


_row = st.builds(
    lambda kind, version, text, closing: (
        kind,
        version,
        f'{{"t":"{text}","kind":"{kind}"}}' if closing else f'{{"t":"{text}"}}',
    ),
    st.sampled_from(["user", "assistant", "tool_result", "dispatch", "no_code_kind"]),
    st.integers(1, 4),
    st.sampled_from(["", "x", "yz"]),
    st.booleans(),  # ends in its kind, which the row's column holds instead
)
_append = st.tuples(
    st.just("append"),
    st.sampled_from(SESSIONS),
    st.sampled_from([0, 0, 0, -1, 1]),  # mostly the right seq
    st.lists(_row, max_size=3),
    st.integers(0, 2),
    st.sampled_from([None, "m1", "m2"]),
    st.dictionaries(st.sampled_from(["r1", "r2"]), st.sampled_from(["one", "two"]), max_size=2),
)
_behind = st.tuples(
    st.sampled_from(["recreate", "delete", "damage", "repair"]),
    st.sampled_from(SESSIONS),
    st.sampled_from(sorted(DAMAGE)),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps=st.lists(st.one_of(_append, _behind), max_size=14))
def test_a_remembered_key_gives_what_reading_the_row_gives(steps: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        reading = open_database(Path(folder) / "read.db", 5.0, read_only=False)
        keeping = open_database(Path(folder) / "keep.db", 5.0, read_only=False)
        keys: dict[str, int] = {}
        try:
            for conn in (reading, keeping):
                conn.execute("PRAGMA synchronous = OFF")  # the logic is what is compared here
                for session_id in SESSIONS:
                    create(conn, session_id)
            for step in steps:
                if step[0] == "append":
                    _, session_id, off, rows, messages, model, texts = step
                    batch = Batch(list(rows), messages, model, dict(texts))
                    seq = next_seq(reading, session_id) + off
                    assert outcome(reading, None, session_id, seq, batch) == outcome(
                        keeping, keys, session_id, seq, batch
                    )
                    continue
                what, session_id, column = step
                for conn in (reading, keeping):
                    behind_the_back(conn, what, session_id, column)
                assert dump(reading) == dump(keeping)
            assert dump(reading) == dump(keeping)
        finally:
            reading.close()
            keeping.close()


def behind_the_back(conn: sqlite3.Connection, what: str, session_id: str, column: str) -> None:
    """What another program may do to the file between two appends."""
    if what in ("recreate", "delete"):
        delete(conn, session_id)
        if what == "recreate":
            create(conn, session_id)
    elif what == "damage":
        with conn:
            conn.execute(
                f"UPDATE sessions SET {column} = ? WHERE session_id = ?",
                (DAMAGE[column], session_id),
            )
    else:  # repair: every column back to a value of its type
        with conn:
            conn.execute(
                "UPDATE sessions SET created_at = 'c', updated_at = 'u', title = NULL,"
                " project_dir = NULL, last_model = NULL, message_count = 0, file_version = NULL,"
                " next_seq = (SELECT coalesce(max(seq) + 1, 0) FROM entries"
                " WHERE entries.session_key = sessions.session_key)"
                " WHERE session_id = ?",
                (session_id,),
            )


# -- through the store ---------------------------------------------------------------------


@pytest.fixture
async def two(tmp_path: Path) -> AsyncIterator[tuple[SQLiteStore, SQLiteStore]]:
    one, other = SQLiteStore(tmp_path / "s.db"), SQLiteStore(tmp_path / "s.db")
    try:
        yield one, other
    finally:
        await one.close()
        await other.close()


async def test_a_key_given_to_another_session_is_not_written_under(
    two: tuple[SQLiteStore, SQLiteStore],
) -> None:
    one, other = two
    await one.create_session(info("a"))
    await one.append("a", 0, [UserEntry("a0")])  # ``one`` now remembers a's key
    # Another process deletes "a"; "b" takes the freed key, and "a" comes back with a new one.
    await other.delete_session("a")
    await other.create_session(info("b"))
    await other.append("b", 0, [UserEntry("b0")])
    await other.create_session(info("a"))

    await one.append("a", 0, [UserEntry("a, again")])
    assert [r.entry for r in await other.read("a")] == [UserEntry("a, again")]
    assert [r.entry for r in await other.read("b")] == [UserEntry("b0")]
    assert (await other.get_session("b")).next_seq == 1


async def test_a_stale_seq_with_a_remembered_key_conflicts_with_nothing_written(
    two: tuple[SQLiteStore, SQLiteStore],
) -> None:
    one, other = two
    await one.create_session(info("a"))
    await one.append("a", 0, [UserEntry("one 0")])
    await other.append("a", 1, [UserEntry("other 1")])
    before = (await other.get_session("a"), await other.read("a"))
    with pytest.raises(ConflictError, match="next seq is 2, this write expected 1"):
        await one.append("a", 1, [UserEntry("one 1"), UserEntry("one 2")])
    assert (await other.get_session("a"), await other.read("a")) == before


@pytest.mark.parametrize("column", sorted(DAMAGE))
async def test_a_row_damaged_after_a_remembered_append_is_still_refused(
    two: tuple[SQLiteStore, SQLiteStore], column: str
) -> None:
    one, other = two
    await one.create_session(info("hurt"))
    await one.append("hurt", 0, [UserEntry("first")])
    conn = sqlite3.connect(other.path)
    try:
        with conn:
            conn.execute(
                f"UPDATE sessions SET {column} = ? WHERE session_id = 'hurt'", (DAMAGE[column],)
            )
    finally:
        conn.close()
    with pytest.raises(StoreError, match="session 'hurt' is damaged"):
        await one.append("hurt", 1, [UserEntry("second")])
    with pytest.raises(StoreError, match="session 'hurt' is damaged"):
        await other.get_session("hurt")


async def test_an_append_hands_back_the_records_a_read_gives(
    two: tuple[SQLiteStore, SQLiteStore],
) -> None:
    one, other = two
    await one.create_session(info("a"))
    entries = [UserEntry("zero"), UserEntry("one")]
    records = await one.append("a", 0, entries)
    assert records == [Record(0, entries[0]), Record(1, entries[1])]
    assert all(type(record) is Record for record in records)
    assert records == await other.read("a")
