"""SQLite's synchronous reads (``ReadsNow``, ``FindsNow``): one call from any thread.

The engine reads the window, counts entries and finds the newest entry of a kind without
awaiting (``store.fast``); ``read`` and ``last`` run the same reads on the worker thread. Each
read takes the store's lock and runs its statements in one read transaction, so it sees one
snapshot; reads that take a statement per kind are merged in seq order, and the kept texts the
rows refer to are read with them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from ..errors import SessionNotFoundError, StoreError
from ..log import Record
from ._sqlite import kept_texts, newest_seq, range_queries, reading
from ._sqlite_sql import COUNT_KIND, ENTRY_AT, KIND_TOTAL, coded, named
from .base import decode_row, kinds_list, storable

__all__ = ["NowReads"]

T = TypeVar("T")


class _Store(Protocol):
    path: Path

    def _call(self, action: str, fn: Callable[[sqlite3.Connection], T]) -> T: ...

    @staticmethod
    def _require_session(conn: sqlite3.Connection, session_id: str) -> None: ...


class NowReads:
    """The synchronous reads of ``SQLiteStore`` (a mixin: it uses the store's connection)."""

    def _read_now(
        self: _Store,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        """``read``, synchronously (see ``ReadsNow``): one call from any thread, under the lock.

        The statements are ``range_queries``'; kept texts the rows refer to are read with them.
        """
        queries = range_queries(session_id, start, end, kinds_list(kinds))

        def op(conn: sqlite3.Connection) -> list[Record]:
            with reading(conn):
                rows = named(r for query, params in queries for r in conn.execute(query, params))
                if not rows:
                    self._require_session(conn, session_id)
                texts = kept_texts(conn, session_id, rows)
            if len(queries) > 1:
                rows.sort(key=lambda row: int(row[0]))
            return [
                decode_row(session_id, seq, kind, v, data, texts) for seq, kind, v, data in rows
            ]

        return self._call(f"read session {session_id!r}", op)

    def _count_now(self: _Store, session_id: str, kinds: Sequence[str], end: int) -> int:
        """How many entries of ``kinds`` lie before ``end``: kept totals, or index counts."""
        wanted = coded(kinds_list(kinds) or [])

        def op(conn: sqlite3.Connection) -> int:
            with reading(conn):
                totals = [conn.execute(KIND_TOTAL, (k, session_id)).fetchone() for k in wanted]
                if wanted and totals[0] is None:
                    raise SessionNotFoundError(session_id)
                if wanted and end >= totals[0][0]:
                    return sum(int(entries or 0) for _, entries in totals)
                self._require_session(conn, session_id)
                return sum(
                    int(conn.execute(COUNT_KIND, (session_id, kind, end)).fetchone()[0])
                    for kind in wanted
                )

        return self._call(f"count entries of session {session_id!r}", op)

    def _last_now(self: _Store, session_id: str, kinds: Sequence[str]) -> Record | None:
        """``last``, synchronously (see ``FindsNow``): one call from any thread, under the lock."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        wanted = coded(kinds_list(kinds) or [])

        def op(conn: sqlite3.Connection) -> Record | None:
            with reading(conn):
                best = newest_seq(conn, session_id, wanted)
                if best is None:
                    self._require_session(conn, session_id)
                    return None
                row = next(iter(named(conn.execute(ENTRY_AT, (session_id, best)))), None)
                texts = kept_texts(conn, session_id, [row] if row is not None else [])
            if row is None:  # the kind index names a row the table does not hold
                raise StoreError(
                    f"session store {self.path}: the index of session {session_id!r} names"
                    f" entry {best}, which is missing (a damaged index)"
                )
            seq, kind, version, data = row
            return decode_row(session_id, seq, kind, version, data, texts)

        return self._call(f"read session {session_id!r}", op)
