"""Stores for the durability tests: memory, a real SQLite file, a real PostgreSQL schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import pytest

import agentsession as ags


@pytest.fixture
async def inner_store(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[ags.Store]:
    """One real store for the whole test (runs share it, each with sessions of its own)."""
    store: ags.Store
    if backend == "memory":
        store = ags.MemoryStore()
    elif backend == "sqlite":
        store = ags.SQLiteStore(tmp_path / "sessions.db")
    else:
        store = ags.PostgresStore(request.getfixturevalue("pg_dsn"))
    try:
        yield store
    finally:
        await store.close()


def fixed_clock() -> datetime:
    return datetime(2026, 1, 1, 12, 0)
