"""Fixtures shared by the store tests: every contract test runs against each store.

The PostgreSQL store runs against a real server (see ``pg.py``); each test gets its own schema.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agentsession.log import now
from agentsession.store import MemoryStore, PostgresStore, SQLiteStore, Store
from agentsession.store._sqlite_sql import KIND_CODES

from . import pg

#: Stores kept in a database another connection can reach (and damage).
DATABASES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

StoreFactory = Callable[[], Store]
RowInjector = Callable[[Store, str, int, str, int, str], None]


@pytest.fixture
def make_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> StoreFactory:
    """Open another store on the same database (a memory store is its own database)."""
    if backend == "memory":
        return MemoryStore
    if backend == "sqlite":
        return lambda: SQLiteStore(tmp_path / "s.db")
    dsn: str = request.getfixturevalue("pg_dsn")
    return lambda: PostgresStore(dsn)


@pytest.fixture
async def store(make_store: StoreFactory) -> AsyncIterator[Store]:
    opened = make_store()
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture(params=DATABASES)
async def db_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A database store (SQLite or PostgreSQL)."""
    if request.param == "sqlite":
        opened: Store = SQLiteStore(tmp_path / "s.db")
    else:
        opened = PostgresStore(request.getfixturevalue("pg_dsn"))
    try:
        yield opened
    finally:
        await opened.close()


def inject_row(store: Store, session_id: str, seq: int, kind: str, version: int, data: str) -> None:
    """Append a raw row behind the store's back, as a damaged database would hold it.

    It goes in through a separate connection, with the session row's ``next_seq`` moved past it
    as the store itself would have.
    """
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path)
        try:
            with conn:
                conn.execute(
                    "INSERT INTO entries (session_key, seq, kind, version, data)"
                    " VALUES ((SELECT session_key FROM sessions WHERE session_id = ?),"
                    " ?, ?, ?, ?)",
                    (session_id, seq, KIND_CODES.get(kind, kind), version, data),
                )
                conn.execute(
                    "UPDATE sessions SET next_seq = ? WHERE session_id = ?", (seq + 1, session_id)
                )
        finally:
            conn.close()
    elif isinstance(store, PostgresStore):
        pg.run(
            store.dsn,
            "WITH e AS (INSERT INTO entries (session_id, seq, kind, version, data, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s))"
            " UPDATE sessions SET next_seq = %s WHERE session_id = %s",
            (session_id, seq, kind, version, data, now(), seq + 1, session_id),
        )
    else:  # pragma: no cover
        raise TypeError(store)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    reason = pg.unavailable()
    if reason is not None:
        terminalreporter.write_sep("!", f"POSTGRESQL TESTS SKIPPED: {reason}", red=True, bold=True)
