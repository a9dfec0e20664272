"""Fixtures shared by the store tests: every contract test runs against each store."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agentsession.log import now
from agentsession.store import MemoryStore, SQLiteStore, Store

BACKENDS = ["memory", "sqlite"]

RowInjector = Callable[[Store, str, int, str, int, str], None]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store(backend: str, tmp_path: Path) -> AsyncIterator[Store]:
    opened: Store = MemoryStore() if backend == "memory" else SQLiteStore(tmp_path / "s.db")
    try:
        yield opened
    finally:
        await opened.close()


def _inject(store: Store, session_id: str, seq: int, kind: str, version: int, data: str) -> None:
    """Put a raw row into the log behind the store's back, as a damaged database would hold."""
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as conn:
            conn.execute(
                "INSERT INTO entries (session_id, seq, kind, version, data, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, seq, kind, version, data, now()),
            )
        conn.close()
    elif isinstance(store, MemoryStore):
        assert store._sessions is not None
        session = store._sessions[session_id]
        assert seq == len(session.rows)
        session.rows.append((kind, version, data))
        session.by_kind.setdefault(kind, []).append(seq)
    else:  # pragma: no cover
        raise TypeError(store)


@pytest.fixture
def inject_row() -> RowInjector:
    return _inject
