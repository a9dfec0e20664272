"""The PostgreSQL store's synchronous reads (``ReadsNow``, ``FindsNow``): one blocking connection.

A reopened session reads only what its next request needs and pages its transcript in when it
is asked for — but the transcript is a plain sequence, so those pages are read synchronously.
A PostgreSQL server on the same machine or network answers such a read in well under a
millisecond, so the store reads them on one blocking connection of its own (opened at the
store's first call, which migrates the schema on it; reopened after a failure or in a forked
child), serialised by a lock: reads from worker threads and from the event loop's thread
alike. Every statement is the async path's own, in autocommit (each one its own snapshot, as there).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import psycopg

from ..errors import SessionNotFoundError, StoreError
from ..log import Record
from ._postgres import LAST_ENTRY, migrate, range_query
from ._sql import SELECT_TEXTS, SESSION_EXISTS, postgres
from .base import decode_row, kinds_list, refs_of, storable

__all__ = ["NowReader"]

T = TypeVar("T")

_COUNT_KIND = postgres("SELECT count(*) FROM entries WHERE session_id = ? AND kind = ? AND seq < ?")


class NowReader:
    """Blocking reads for ``PostgresStore.read_now``/``last_now``/``count_now``."""

    def __init__(self, dsn: str, name: str, timeout: float, read_only: bool) -> None:
        self._dsn, self._name = dsn, name
        self._timeout, self._read_only = timeout, read_only
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._pid = os.getpid()
        self._closed = False

    def _connection(self) -> psycopg.Connection[Any]:
        if self._pid != os.getpid():
            # A forked child must not use (or close: that ends it for the parent) the
            # parent's connection; it opens its own.
            self._conn, self._pid = None, os.getpid()
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            conn = psycopg.connect(
                self._dsn, autocommit=True, connect_timeout=max(1, int(self._timeout))
            )
            if self._read_only:
                conn.execute("SET default_transaction_read_only = on")
            self._conn = conn
        return conn

    def _run(self, action: str, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        with self._lock:
            if self._closed:
                raise StoreError(f"{self._name} is closed")
            try:
                return fn(self._connection())
            except (psycopg.Error, UnicodeError) as exc:
                raise StoreError(f"{self._name}: {action} failed: {exc}") from exc

    def prepare(self) -> None:
        """Connect and bring the schema up to date (the store's first call runs this)."""
        with self._lock:
            if self._closed:
                raise StoreError(f"{self._name} is closed")
            try:
                migrate(self._connection(), self._name, self._read_only)
            except psycopg.Error as exc:
                raise StoreError(f"cannot open {self._name}: {exc}") from exc

    @staticmethod
    def _require(conn: psycopg.Connection[Any], session_id: str) -> None:
        if conn.execute(postgres(SESSION_EXISTS), (session_id,)).fetchone() is None:
            raise SessionNotFoundError(session_id)

    @staticmethod
    def _texts(
        conn: psycopg.Connection[Any], session_id: str, rows: list[Any]
    ) -> dict[str, str] | None:
        refs = refs_of(rows)
        if not refs:
            return None
        cursor = conn.execute(postgres(SELECT_TEXTS) + " = ANY(%s)", (session_id, refs))
        return {str(ref): str(text) for ref, text in cursor.fetchall()}

    def read(
        self, session_id: str, start: int, end: int | None, kinds: Sequence[str] | None
    ) -> list[Record]:
        """``PostgresStore.read``, blocking the caller."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        query, params = range_query(session_id, start, end, kinds_list(kinds))

        def op(conn: psycopg.Connection[Any]) -> list[Any]:
            rows = conn.execute(query, params).fetchall()
            if not rows:
                self._require(conn, session_id)
            return [rows, self._texts(conn, session_id, rows)]

        rows, texts = self._run(f"read session {session_id!r}", op)
        return [decode_row(session_id, seq, kind, v, data, texts) for seq, kind, v, data in rows]

    def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """``PostgresStore.last``, blocking the caller."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        params = {"s": session_id, "k": kinds_list(kinds) or []}

        def op(conn: psycopg.Connection[Any]) -> list[Any] | None:
            row = conn.execute(LAST_ENTRY, params).fetchone()
            if row is None:
                self._require(conn, session_id)
                return None
            return [row, self._texts(conn, session_id, [row])]

        found = self._run(f"read session {session_id!r}", op)
        if found is None:
            return None
        (seq, kind, version, data), texts = found
        return decode_row(session_id, seq, kind, version, data, texts)

    def count(self, session_id: str, kinds: Sequence[str], end: int) -> int:
        """How many entries of ``kinds`` lie before ``end``: index counts, nothing decoded."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        wanted = kinds_list(kinds) or []

        def op(conn: psycopg.Connection[Any]) -> int:
            self._require(conn, session_id)
            total = 0
            for kind in wanted:
                row = conn.execute(_COUNT_KIND, (session_id, kind, end)).fetchone()
                total += int(row[0]) if row is not None else 0
            return total

        return self._run(f"count entries of session {session_id!r}", op)

    def close(self) -> None:
        """Close the connection (idempotent); later reads raise ``StoreError``."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            conn.close()
