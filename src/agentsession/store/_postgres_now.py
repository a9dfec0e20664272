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
from ._postgres import LAST_ENTRY, check_version, migrate, range_query
from ._postgres_presence import ALIVE, presence_void
from ._postgres_snapshot import Miss, Snapshot, take
from ._sql import LEASE_OF, SELECT_SESSION, SELECT_TEXTS, SESSION_EXISTS, postgres
from .base import (
    Lease,
    SessionInfo,
    ViewRows,
    decode_row,
    info_from_row,
    kinds_list,
    refs_of,
    storable,
)
from .migrations import COUNTED_FROM, LATEST

__all__ = ["LEASE_NOW", "RENEW_LEASE", "TAKE_LEASE", "NowReader"]

T = TypeVar("T")


_MAX_SEQ = 2**63 - 1

#: Server time in seconds since the epoch, the clock leases are judged by.
_CLOCK = "extract(epoch from clock_timestamp())::double precision"

_SELECT_SESSION = postgres(SELECT_SESSION)
#: The session's unexpired lease by the server's clock (``LEASE_OF``).
LEASE_NOW = postgres(LEASE_OF).replace("%s", f"{_CLOCK} AND {ALIVE}", 1)
#: Take the lease when free, expired, already the owner's, or its owner is gone (no presence
#: lock: ``_postgres_presence``) (parameters: session, owner, ttl).
TAKE_LEASE = (
    "INSERT INTO leases (session_id, owner, expires_at)"
    f" VALUES (%s, %s, {_CLOCK} + %s)"
    " ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner,"
    " expires_at = excluded.expires_at"
    f" WHERE leases.owner = excluded.owner OR leases.expires_at <= {_CLOCK}"
    f" OR {presence_void('leases.owner')}"
)
#: Extend the owner's lease (parameters: ttl, session, owner).
RENEW_LEASE = f"UPDATE leases SET expires_at = {_CLOCK} + %s WHERE session_id = %s AND owner = %s"

#: Entries of some kinds before a seq, counted in the kind index (no row: no such session).
_COUNT_KINDS = (
    "SELECT (SELECT count(*) FROM entries"
    "  WHERE session_id = %(s)s AND kind = ANY(%(k)s::text[]) AND seq < %(e)s)"
    " FROM sessions WHERE session_id = %(s)s"
)
#: The same from the totals ``kind_counts`` keeps (schema 5): the total less the entries from
#: ``end`` on, which for a reopen's count (``end`` is the log's end) are none. Counting from the
#: front is the shorter walk when ``end`` lies in the log's first half.
_COUNT_KEPT = (
    "SELECT CASE WHEN 2 * %(e)s::bigint >= s.next_seq THEN"
    "  (SELECT coalesce(sum(c.entries), 0) FROM kind_counts c"
    "    WHERE c.session_id = %(s)s AND c.kind = ANY(%(k)s::text[]))"
    "  - (SELECT count(*) FROM entries"
    "    WHERE session_id = %(s)s AND kind = ANY(%(k)s::text[]) AND seq >= %(e)s::bigint)"
    " ELSE (SELECT count(*) FROM entries"
    "    WHERE session_id = %(s)s AND kind = ANY(%(k)s::text[]) AND seq < %(e)s::bigint)"
    " END FROM sessions s WHERE s.session_id = %(s)s"
)


class NowReader:
    """Blocking reads for ``PostgresStore.read_now``/``last_now``/``count_now``."""

    def __init__(self, dsn: str, name: str, timeout: float, read_only: bool) -> None:
        self._dsn, self._name = dsn, name
        self._timeout, self._read_only = timeout, read_only
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._pid = os.getpid()
        self._closed = False
        #: Whether the schema keeps ``kind_counts`` (a read-only store may read an older one).
        self._counted = False
        #: A reopen's reads, fetched by the first call (``_postgres_snapshot``).
        self._snap: Snapshot | None = None

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

    def busy(self) -> bool:
        """Whether a read is running on the connection now (another read would wait for it)."""
        return self._lock.locked()

    def _run(self, action: str, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        with self._lock:
            if self._closed:
                raise StoreError(f"{self._name} is closed")
            try:
                reused = self._conn is not None
                conn = self._connection()
                try:
                    return fn(conn)
                except psycopg.OperationalError:
                    # A connection the server dropped while idle (a restart, an idle timeout)
                    # fails its next statement: every call here only reads, so it is run once
                    # more on a fresh connection, as a pool's check would have replaced it.
                    if not (reused and conn.broken):
                        raise
                    return fn(self._connection())
            except (psycopg.Error, UnicodeError) as exc:
                raise StoreError(f"{self._name}: {action} failed: {exc}") from exc

    def prepare(self, session_id: str | None = None) -> None:
        """Connect and bring the schema up to date (the store's first call runs this).

        When that call reads ``session_id``'s row (a reopen), the schema check and the reads a
        reopen makes are one round trip (``_postgres_snapshot``).
        """
        with self._lock:
            if self._closed:
                raise StoreError(f"{self._name} is closed")
            try:
                conn = self._connection()
                reopen = session_id is not None and storable(session_id)
                if reopen and self._snapshot(conn, str(session_id)):
                    return
                version = migrate(conn, self._name, self._read_only)
                self._counted = version >= COUNTED_FROM
            except psycopg.Error as exc:
                raise StoreError(f"cannot open {self._name}: {exc}") from exc

    def _snapshot(self, conn: psycopg.Connection[Any], session_id: str) -> bool:
        """Check the schema and take the session's snapshot; ``False``: migrate (or check) first."""
        try:
            found = take(conn, session_id)
        except psycopg.Error:
            return False  # no schema yet, or an older one: ``migrate`` checks and says why
        version = check_version(found if isinstance(found, int) else found.version, self._name)
        if version < LATEST:
            return False
        self._counted = True
        if isinstance(found, Snapshot):
            self._snap = found
        return True

    def forget(self) -> None:
        """Drop the reopen's snapshot: the store wrote, or reads on its pool from now on."""
        self._snap = None

    def _served(self, session_id: str) -> Snapshot | None:
        """The snapshot, when it may answer a read of ``session_id``."""
        snap = self._snap
        if snap is None or snap.session_id != session_id:
            return None
        if not snap.fresh() or self._pid != os.getpid():
            self._snap = None
            return None
        return snap

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

    def session(self, session_id: str) -> SessionInfo:
        """``PostgresStore.get_session``, blocking the caller."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        snap = self._served(session_id)
        if snap is not None:
            return info_from_row(snap.session)

        def op(conn: psycopg.Connection[Any]) -> tuple[Any, ...] | None:
            return conn.execute(_SELECT_SESSION, (session_id,)).fetchone()

        row = self._run(f"read session {session_id!r}", op)
        if row is None:
            raise SessionNotFoundError(session_id)
        return info_from_row(row)

    def lease(self, session_id: str) -> Lease | None:
        """``PostgresStore.lease_of``, blocking the caller."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)

        def op(conn: psycopg.Connection[Any]) -> tuple[Any, ...] | None:
            return conn.execute(LEASE_NOW, (session_id,)).fetchone()

        snap = self._served(session_id)
        row = snap.lease if snap is not None else None
        if row is None:
            row = self._run(f"read the lease of session {session_id!r}", op)
        if row is None:
            raise SessionNotFoundError(session_id)
        return None if row[0] is None else Lease(session_id, str(row[0]), float(row[1]))

    def read(
        self, session_id: str, start: int, end: int | None, kinds: Sequence[str] | None
    ) -> list[Record]:
        """``PostgresStore.read``, blocking the caller."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        wanted = kinds_list(kinds)
        snap = self._served(session_id)
        if snap is not None:
            try:
                return snap.read(start, end, wanted)
            except Miss:
                self._snap = None  # the first read it cannot answer ends it
        query, params = range_query(session_id, start, end, wanted)

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
        snap = self._served(session_id)
        if snap is not None:
            try:
                return snap.last(params["k"])
            except Miss:
                self._snap = None

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
        """How many entries of ``kinds`` lie before ``end``: kept totals, or index counts."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        wanted, stop = kinds_list(kinds) or [], min(max(end, 0), _MAX_SEQ)
        params = {"s": session_id, "k": wanted, "e": stop}
        snap = self._served(session_id)
        if snap is not None:
            try:
                return snap.count(wanted, stop)
            except Miss:
                self._snap = None

        def op(conn: psycopg.Connection[Any]) -> int:
            query = _COUNT_KEPT if self._counted else _COUNT_KINDS
            row = conn.execute(query, params).fetchone()
            if row is None:
                raise SessionNotFoundError(session_id)
            return int(row[0])

        return self._run(f"count entries of session {session_id!r}", op)

    def held(self, session_id: str, kinds: Sequence[str], end: int) -> int | None:
        """``count``'s answer when the reopen's snapshot holds it (no I/O); else ``None``."""
        snap = self._served(session_id)
        if snap is None:
            return None
        try:
            return snap.count(kinds_list(kinds) or [], min(max(end, 0), _MAX_SEQ))
        except Miss:
            return None

    def close(self) -> None:
        """Close the connection (idempotent); later reads raise ``StoreError``."""
        with self._lock:
            self._closed, self._snap = True, None
            conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            conn.close()

    def view(
        self,
        session_id: str,
        end: int,
        kinds: Sequence[str],
        start_of: Callable[[Record], int],
        dispatch: bool,
    ) -> ViewRows:
        """``PostgresStore.read_view``, blocking the caller (one snapshot when a reopen's)."""
        epoch = self.last(session_id, ["epoch"])
        records = self.read(session_id, 0 if epoch is None else start_of(epoch), end, kinds)
        last = self.last(session_id, ["dispatch"]) if dispatch and epoch is not None else None
        return epoch, records, last
