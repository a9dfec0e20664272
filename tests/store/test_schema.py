"""The schema, as both dialects build it: every table keyed by the session first.

PostgreSQL keys every table by ``session_id``; SQLite keys its log by the session's integer
``session_key`` (the text id once per session, not in every row).

That is what lets the PostgreSQL schema be distributed by ``session_id`` (e.g. with Citus)
without a change, and what keeps every per-session read an index range on one key prefix.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentsession.store import PostgresStore, SQLiteStore

from . import pg

TABLES = {"sessions", "entries", "leases", "texts"}
#: SQLite's search index (schema 6): the FTS5 table and the tables FTS5 keeps for it.
_FTS5_TABLES = {f"entries_search{part}" for part in ("", "_data", "_idx", "_docsize", "_config")}


def sqlite_primary_keys(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        keys = {}
        for table in tables:
            columns = conn.execute(f"PRAGMA table_info({table})").fetchall()
            keys[table] = [c[1] for c in sorted(columns, key=lambda c: c[5]) if c[5] > 0]
        return keys
    finally:
        conn.close()


def postgres_primary_keys(dsn: str) -> dict[str, list[str]]:
    rows = pg.run(
        dsn,
        "SELECT c.relname, a.attname FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position) ON true"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum"
        " WHERE i.indisprimary AND n.nspname = current_schema()"
        " ORDER BY c.relname, k.position",
    )
    keys: dict[str, list[str]] = {}
    for table, column in rows:
        keys.setdefault(table, []).append(column)
    return keys


@pytest.mark.parametrize(
    "dialect", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_every_table_is_keyed_by_session_id_first(
    dialect: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if dialect == "sqlite":
        await SQLiteStore(tmp_path / "s.db").close()
        keys = sqlite_primary_keys(tmp_path / "s.db")
    else:
        dsn = request.getfixturevalue("pg_dsn")
        store = PostgresStore(dsn)
        await store.list_sessions()
        await store.close()
        keys = postgres_primary_keys(dsn)
    # Both also keep each session's entry count per kind (kept by a trigger; PostgreSQL since
    # schema 5), keyed like the log, and the search index (schema 6): PostgreSQL's table keyed
    # like the log; SQLite's FTS5 table, whose rowid is the session key shifted, then the seq.
    search = {"entry_texts"} if dialect == "postgres" else _FTS5_TABLES
    search |= {"search_queue"}
    assert set(keys) == TABLES | {"schema_migrations", "kind_counts"} | search
    if dialect == "postgres":
        assert keys["entry_texts"] == keys["search_queue"] == ["session_id", "seq"]
    else:
        assert keys["search_queue"] == ["session_key", "seq"]
    assert keys["kind_counts"] == [
        "session_key" if dialect == "sqlite" else "session_id",
        "kind",
    ]
    # SQLite (one file, never sharded) keys its log by the session's integer key (schema 4).
    log_key = "session_key" if dialect == "sqlite" else "session_id"
    for table in TABLES:
        assert keys[table][0] == (log_key if table == "entries" else "session_id"), table
    assert keys["entries"] == [log_key, "seq"]
    assert keys["texts"] == ["session_id", "ref"]
