"""A reopen's reads in one round trip on a store whose pool is in use.

A fresh store answers a reopen's reads from one snapshot taken with its schema check
(``_postgres_snapshot``). A store already serving — a server process, which opens the session at
the start of every turn, a takeover among them — asked them one statement at a time, each
waiting for a pooled connection of its own on a busy machine. ``Reopening.reopening(id)`` takes
the same snapshot in one pipeline on one pooled connection and answers from it the reads made
in the same task (and tasks it starts) until its block ends; ``Runtime.open_session`` wraps its
reads in it. A read the snapshot cannot answer, any read of another task and every read after
the block go to the database as before. The snapshot is as fresh as a fresh store's
(``FRESH_FOR``), and an append compares the log's next seq under its row lock either way, so a
stale answer can never lose or repeat an entry.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Any

import psycopg

from ..errors import StoreError
from ._postgres_snapshot import BEGIN, Snapshot, assemble, statements

__all__ = ["Reopening"]

#: The snapshot the current task's reopen reads from, and the ``Reopening`` that took it.
_SERVED: ContextVar[tuple[object, Snapshot] | None] = ContextVar(
    "agentsession_reopen_snapshot", default=None
)

Connection = Callable[[str], AbstractAsyncContextManager["psycopg.AsyncConnection[Any]"]]


async def _take(conn: psycopg.AsyncConnection[Any], session_id: str) -> Snapshot | int:
    try:
        async with conn.pipeline():
            await conn.execute(BEGIN)
            cursors = [await conn.execute(q, p) for q, p in statements(session_id)]
            await conn.execute("COMMIT")
    except psycopg.Error:
        if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            await conn.execute("ROLLBACK")
        raise
    return assemble(session_id, [await c.fetchall() for c in cursors])


class Reopening:
    """One store's reopen snapshots on its pool (see the module)."""

    def __init__(self, connection: Connection, warm: Callable[[], bool]) -> None:
        self._connection = connection
        self._warm = warm

    @contextlib.asynccontextmanager
    async def reopening(self, session_id: str) -> AsyncIterator[None]:
        """Answer the block's reads of ``session_id`` from one snapshot, where it holds them."""
        if self.served(session_id) is not None or not self._warm():
            yield  # a snapshot serves already, or a fresh store's own does
            return
        found: Snapshot | int | None = None
        # Without a snapshot (the database away, an older schema) the reads go as before and
        # say what is wrong themselves.
        with contextlib.suppress(psycopg.Error, StoreError):
            async with self._connection(f"reopen session {session_id!r}") as conn:
                found = await _take(conn, session_id)
        if not isinstance(found, Snapshot):
            yield
            return
        token = _SERVED.set((self, found))
        try:
            yield
        finally:
            _SERVED.reset(token)

    def served(self, session_id: str) -> Snapshot | None:
        """The snapshot that may answer this task's read of ``session_id``, if any."""
        held = _SERVED.get()
        if held is None or held[0] is not self:
            return None
        snap = held[1]
        return snap if snap.session_id == session_id and snap.fresh() else None
