"""SQLite's read of what a reopened session's next request needs, in one read transaction.

A session opened on a store reads its newest epoch, the log from where that epoch's model view
starts, and the newest dispatch once (``LogWriter.epoch_view``). Asked separately, that is three
read transactions with their statements, and a hop to a worker thread for each call. Here it is
one transaction on one snapshot, and, while no other call holds the store's connection, it runs
on the caller's thread: a read of the window's rows, once per opened session, costs less than the
hop to a worker thread would. When the connection is busy the read waits its turn on the worker.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from ..errors import SessionNotFoundError
from ..log import Record
from ._sql import SESSION_EXISTS
from ._sqlite import kept_texts, range_queries, reading
from ._sqlite_sql import KEY_OF, coded, name_of, named
from .base import ViewRows, decode_row, kinds_list, storable

__all__ = ["ViewRead"]

T = TypeVar("T")


class _Store(Protocol):
    _lock: threading.Lock

    def _call(self, action: str, fn: Callable[[sqlite3.Connection], T]) -> T: ...

    async def _run(
        self, action: str, fn: Callable[[sqlite3.Connection], T], key: str | None = None
    ) -> T: ...


class ViewRead:
    """``read_view`` for ``SQLiteStore`` (a mixin: it uses the store's connection and lock)."""

    async def _read_view(
        self: _Store,
        session_id: str,
        end: int,
        kinds: Sequence[str],
        start_of: Callable[[Record], int],
        dispatch: bool,
    ) -> ViewRows:
        """The newest epoch, the ``kinds`` records from ``start_of(epoch)`` up to ``end``.

        With ``dispatch``, also the newest dispatch (when there is an epoch). Without an epoch
        the records start at 0. All of it is read on one snapshot; ``SessionNotFoundError`` for
        an unknown session, ``CorruptEntryError`` for a row that cannot be decoded.
        """
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        wanted = kinds_list(kinds) or []

        def op(conn: sqlite3.Connection) -> ViewRows:
            with reading(conn):
                epoch = _newest(conn, session_id, "epoch")
                if epoch is None and conn.execute(SESSION_EXISTS, (session_id,)).fetchone() is None:
                    raise SessionNotFoundError(session_id)
                start = 0 if epoch is None else start_of(epoch)
                queries = range_queries(session_id, start, end, wanted)
                rows: list[Any] = []
                for query, params in queries:
                    rows += conn.execute(query, params).fetchall()
                # Only an epoch row refers to kept texts: none among rows of other kinds.
                texts = kept_texts(conn, session_id, named(rows)) if "epoch" in wanted else None
                last = None
                if dispatch and epoch is not None:
                    last = _newest(conn, session_id, "dispatch")
            if len(queries) > 1:
                rows.sort(key=lambda row: int(row[0]))
            # Each kind named as its row is decoded (``named``, without a tuple per row).
            records = [
                decode_row(session_id, seq, name_of(kind, kind), v, data, texts)
                for seq, kind, v, data in rows
            ]
            return epoch, records, last

        action = f"read session {session_id!r}"
        if self._lock.locked():  # another call holds the connection: wait on a worker thread
            return await self._run(action, op)
        return self._call(action, op)


#: The session's newest entry of one kind: one descent of the kind index to the row (the
#: primary key walked backwards would pass every entry since one of a rare kind).
NEWEST_ENTRY = (
    "SELECT seq, kind, version, data FROM entries INDEXED BY entries_kind"
    f" WHERE session_key = {KEY_OF} AND kind = ? ORDER BY seq DESC LIMIT 1"
)


def _newest(conn: sqlite3.Connection, session_id: str, kind: str) -> Record | None:
    """The session's newest entry of ``kind`` (inside the caller's read transaction)."""
    row = next(iter(named(conn.execute(NEWEST_ENTRY, (session_id, *coded([kind]))))), None)
    if row is None:
        return None
    texts = kept_texts(conn, session_id, [row])
    seq, kind_name, version, data = row
    return decode_row(session_id, seq, kind_name, version, data, texts)
