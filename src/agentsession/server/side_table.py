"""A small table of the server's own in the store's database: owners, cancel requests.

Apart from the store's schema: the store knows nothing of HTTP owners or cancels, and a database
used without the server never gets the table. On SQLite it lives in the same file, on PostgreSQL
in the same database, so every server process agrees; for a store of neither kind ``sql``
answers ``None`` and the caller keeps its rows in memory. On PostgreSQL a statement runs on
the store's own pool (``store.fast``'s ``statement``): a turn's start reads the session's
settings and owner here, and a connection opened per statement (a new backend each time)
cost a loaded machine a tenth of a second or more apiece, a taken-over turn's start about a
second in all. A store with an address but no such path gets a connection per statement, at
most ``SIDE_CONNECTIONS`` at once per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import weakref
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..store.base import Store
from ..store.fast import Statement, fast_paths
from .db_budget import SIDE_CONNECTIONS

__all__ = ["SideTable"]

Rows = list[tuple[Any, ...]]

#: Per event loop: the gate that bounds this process's connections for side tables.
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _gate() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    gate = _GATES.get(loop)
    if gate is None:
        gate = _GATES[loop] = asyncio.Semaphore(SIDE_CONNECTIONS)
    return gate


# ``CREATE TABLE IF NOT EXISTS`` run by two connections at once: the loser fails on the
# catalog's unique index or on the table's row type, which the winner made a moment before.
_CREATED_BESIDE = frozenset({"UniqueViolation", "DuplicateObject"})


class SideTable:
    """One table of the server's, made by ``create`` (``CREATE TABLE IF NOT EXISTS …``)."""

    def __init__(self, store: Store, create: str) -> None:
        #: The PostgreSQL database's address, ``None`` for any other store.
        self.dsn: str | None = getattr(store, "dsn", None)
        path = getattr(store, "path", None)
        self._path: Path | None = Path(path) if path is not None and not self.dsn else None
        self._pooled: Statement | None = fast_paths(store).statement if self.dsn else None
        self._create = create
        self._ready = False
        self._lock = asyncio.Lock()

    async def sql(self, query: str, params: tuple[Any, ...]) -> Rows | None:
        """Run one statement (``?`` placeholders); ``None`` when rows live in memory."""
        if self._pooled is not None:
            return await self._on_pool(self._pooled, query.replace("?", "%s"), params)
        if self.dsn:
            return await self._postgres(self.dsn, query.replace("?", "%s"), params)
        if self._path is not None:
            return await asyncio.to_thread(_sqlite, self._path, self._create, query, params)
        return None

    async def _on_pool(self, run: Statement, query: str, params: tuple[Any, ...]) -> Rows:
        if not self._ready:
            async with self._lock:
                if not self._ready:
                    try:
                        await run(self._create, ())
                    except StoreError as exc:
                        if type(exc.__cause__).__name__ not in _CREATED_BESIDE:
                            raise
                        # Two processes creating the table at once: one wins, the other finds it.
                    self._ready = True
        return await run(query, params)

    async def _postgres(self, dsn: str, query: str, params: tuple[Any, ...]) -> Rows:
        import psycopg

        async with _gate(), await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            if not self._ready:
                async with self._lock:
                    # Two processes creating the table at once: one wins, the other finds it.
                    beside = (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject)
                    with contextlib.suppress(*beside):
                        await conn.execute(self._create)
                    self._ready = True
            cursor = await conn.execute(query, params)
            return list(await cursor.fetchall()) if cursor.description else []


def _sqlite(path: Path, create: str, query: str, params: tuple[Any, ...]) -> Rows:
    conn = sqlite3.connect(path, timeout=30)
    try:
        with conn:
            conn.execute(create)
            return list(conn.execute(query, params).fetchall())
    finally:
        conn.close()
