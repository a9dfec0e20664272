"""The embedded default store: one SQLite file, safe for several processes on one machine.

- stdlib ``sqlite3`` with one connection per store, used from the connection's own worker
  thread (``_worker``) one call at a time under a lock, so the event loop never blocks on disk;
- WAL journal with ``synchronous=FULL``: a returned ``append`` survives a power cut, and readers
  never wait for the writer;
- every write is one ``BEGIN IMMEDIATE`` transaction that takes the write lock *before* reading
  the log's next seq, so two writers on one session (two stores, two processes) cannot
  interleave: the second one sees the moved seq and gets ``ConflictError`` with nothing written;
- ``entries`` is a ``WITHOUT ROWID`` table keyed ``(session_key, seq)`` (the session's integer
  key, ``_sqlite_sql``) plus an index on ``(session_key, kind, seq)``: range reads, the next seq
  and "newest entry of a kind" are index walks whose cost does not grow with the history; reads
  that take several statements run in one read transaction, so they see one snapshot;
- an epoch's long baseline texts are kept once per session in ``texts``, read with the rows
  that refer to them; leases are rows judged by this machine's clock; opening, read-only
  access, migrations and the statements only SQLite runs live in ``_sqlite.py``;
- every ``sqlite3`` failure surfaces as ``StoreError`` naming the file, chained with ``from``.
A write handed to the worker thread commits or fails as a whole even if its caller is
cancelled; the caller re-reads the log's end before writing again.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from ..errors import SessionNotFoundError, StoreError
from ..log import LogEntry, Record
from ..log.stored import new_record
from ._sql import (
    COPY_TEXTS,
    LEASE_OF,
    LIST_SESSIONS,
    LIST_SESSIONS_AFTER,
    LIST_SESSIONS_FIRST,
    SELECT_SESSION,
    SESSION_EXISTS,
    SET_COUNTERS,
    SET_TITLE,
    page_params,
)
from ._sqlite import (
    TAKE_LEASE,
    append_batch,
    default_path,
    insert_session,
    keep_texts,
    open_database,
    writing,
)
from ._sqlite_now import NowReads
from ._sqlite_read import ViewRead
from ._sqlite_sql import (
    COPY_ENTRIES,
    COUNT_MESSAGES,
    DELETE_SESSION,
    INSERT_ENTRY,
    KEY_AND_SESSION,
    LAST_MODEL_ROWS,
    entry_rows,
    named,
)
from ._worker import Worker
from .base import (
    DEFAULT_LEASE_TTL,
    Batch,
    Lease,
    SessionInfo,
    check_fork,
    check_info,
    check_lease,
    encode_batch,
    info_from_row,
    newest_model,
    storable,
)
from .fast import FastPaths

__all__ = ["SQLiteStore", "default_path"]

T = TypeVar("T")


class SQLiteStore(NowReads, ViewRead):
    """Sessions in one SQLite file; its methods are the ``Store`` protocol's, documented there.

    The file and its directory are created when missing and the schema is migrated at
    construction. Several stores (and processes) may share one file; appends to one session
    are serialised by ``expected_seq``. Call ``close()`` (or use ``async with``) when done.

    Args:
        path: The file (default: ``sessions.db`` in the user data directory).
        busy_timeout: Seconds a call waits for another writer's lock (then ``StoreError``).
        read_only: Never create or write anything: a missing file and every write are a
            ``StoreError``.

    Raises:
        StoreError: The path cannot hold a session database (or, read-only, is missing).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout: float = 5.0,
        read_only: bool = False,
    ) -> None:
        """Open (when writable, creating and migrating when needed) the database at ``path``."""
        self.path = Path(path).expanduser() if path is not None else default_path()
        self.read_only = read_only
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = open_database(self.path, busy_timeout, read_only)
        # Each session's integer key, remembered by appends (used on the connection's thread).
        self._keys: dict[str, int] = {}
        self._worker = Worker(self, "agentsession-sqlite", self._closed)
        # Reads now, a view in one call, writes handed over (``store.fast``); a subclass that
        # overrides ``append`` (to watch writes) keeps every write going through it.
        soon = self._append_soon if type(self).append is SQLiteStore.append else None
        reads = (self._read_now, self._count_now, self._last_now, self._read_view)
        self.fast_paths = FastPaths(*reads, append_soon=soon, list_page=self._list_page)

    def _closed(self) -> StoreError:
        return StoreError(f"session store {self.path} is closed")

    def __repr__(self) -> str:
        flag = ", read_only=True" if self.read_only else ""
        return f"SQLiteStore({str(self.path)!r}{flag})"

    # -- running ---------------------------------------------------------------------------

    async def _run(
        self, action: str, fn: Callable[[sqlite3.Connection], T], key: str | None = None
    ) -> T:
        if key is not None and not storable(key):
            raise SessionNotFoundError(key)  # no session can have that id
        return await self._worker.run(self._call, action, fn)

    def _call(self, action: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            conn = self._conn
            if conn is None:
                raise self._closed()
            try:
                return fn(conn)
            except (sqlite3.Error, UnicodeError) as exc:  # a value with no UTF-8 form included
                raise StoreError(f"session store {self.path}: {action} failed: {exc}") from exc

    @staticmethod
    def _require_session(conn: sqlite3.Connection, session_id: str) -> None:
        if conn.execute(SESSION_EXISTS, (session_id,)).fetchone() is None:
            raise SessionNotFoundError(session_id)

    @staticmethod
    def _row(conn: sqlite3.Connection, session_id: str) -> SessionInfo:
        row = conn.execute(SELECT_SESSION, (session_id,)).fetchone()
        if row is None:
            raise SessionNotFoundError(session_id)
        return info_from_row(row)

    # -- sessions --------------------------------------------------------------------------

    async def create_session(self, info: SessionInfo, entries: Sequence[LogEntry] = ()) -> None:
        """Create a session holding ``entries`` in one transaction (see ``Store``)."""
        check_info(info)
        batch = encode_batch(entries)

        def op(conn: sqlite3.Connection) -> None:
            with writing(conn):
                insert_session(conn, info, len(batch.rows), batch)
                key = conn.execute(KEY_AND_SESSION, (info.id,)).fetchone()[0]
                conn.executemany(INSERT_ENTRY, entry_rows(key, 0, batch.rows))
                keep_texts(conn, info.id, batch.texts)

        await self._run(f"create session {info.id!r}", op)

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's row with its current ``next_seq``; ``SessionNotFoundError`` if none."""

        def op(conn: sqlite3.Connection) -> SessionInfo:
            return self._row(conn, session_id)

        return await self._run(f"read session {session_id!r}", op, session_id)

    async def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently updated first (ties: newest created, then by id)."""

        def op(conn: sqlite3.Connection) -> list[SessionInfo]:
            return [info_from_row(row) for row in conn.execute(LIST_SESSIONS)]

        return await self._run("list sessions", op)

    async def _list_page(self, limit: int, after: tuple[str, str, str] | None) -> list[SessionInfo]:
        """One page of ``list_sessions`` (``store.fast``): that page's rows are all it reads."""
        query = LIST_SESSIONS_FIRST if after is None else LIST_SESSIONS_AFTER

        def op(conn: sqlite3.Connection) -> list[SessionInfo]:
            return [info_from_row(row) for row in conn.execute(query, page_params(limit, after))]

        return await self._run("list sessions", op)

    async def set_title(self, session_id: str, title: str) -> None:
        """Store the session's title (``updated_at`` is left alone: it tracks the log)."""
        check_info(SessionInfo(session_id, "", "", title=title))

        def op(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(SET_TITLE, (title, session_id))
            if cursor.rowcount == 0:
                raise SessionNotFoundError(session_id)

        await self._run(f"set the title of session {session_id!r}", op, session_id)

    async def delete_session(self, session_id: str) -> None:
        """Delete the session, its log and its lease in one transaction."""

        def op(conn: sqlite3.Connection) -> None:
            with writing(conn):
                self._require_session(conn, session_id)
                for statement in DELETE_SESSION:
                    conn.execute(statement, (session_id,))

        await self._run(f"delete session {session_id!r}", op, session_id)

    async def fork_session(self, source_id: str, info: SessionInfo, upto_seq: int) -> SessionInfo:
        """A copy of the source's log up to ``upto_seq`` as session ``info.id`` (see ``Store``)."""
        check_info(info)

        def op(conn: sqlite3.Connection) -> None:
            with writing(conn):
                source = self._row(conn, source_id)
                check_fork(source_id, source.next_seq, upto_seq)
                forked = replace(info, file_version=source.file_version)
                insert_session(conn, forked, upto_seq + 1, Batch([], 0, None))
                conn.execute(COPY_ENTRIES, (info.id, source_id, upto_seq))
                conn.execute(COPY_TEXTS, (info.id, source_id))
                counted = conn.execute(COUNT_MESSAGES, (info.id,)).fetchone()[0]
                model = newest_model(info.id, named(conn.execute(LAST_MODEL_ROWS, (info.id,))))
                conn.execute(SET_COUNTERS, (counted, model, info.id))

        await self._run(f"fork session {source_id!r} as {info.id!r}", op, source_id)
        return await self.get_session(info.id)

    # -- the log ---------------------------------------------------------------------------

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        """Append ``entries`` at ``expected_seq``, ``expected_seq + 1``, … in one transaction.

        ``ConflictError`` (nothing written) when the log's next seq is not ``expected_seq``,
        ``SessionNotFoundError`` for an unknown session, ``StoreError`` when the database
        refuses the write; in every failure case no entry of the batch is stored.
        """
        return await self._append_soon(session_id, expected_seq, entries)

    def _append_soon(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> asyncio.Future[list[Record]]:
        """``append`` handed to the connection's thread now; the future settles with its outcome.

        A batch that cannot be encoded raises here, before anything is handed over. The write
        runs to its end whether or not the future is awaited (see ``AppendsSoon``).
        """
        entries = list(entries)
        # Encode before taking the lock: a bad entry fails here, and the write lock is held
        # only for the inserts themselves.
        batch = encode_batch(entries)

        def op(conn: sqlite3.Connection) -> list[Record]:
            append_batch(conn, session_id, expected_seq, batch, self._keys)
            # Built as reads build them: no frozen ``__init__`` per entry, five commits a turn.
            return [new_record(expected_seq + i, entry) for i, entry in enumerate(entries)]

        if not storable(session_id):
            raise SessionNotFoundError(session_id)  # no session can have that id
        return self._worker.submit(self._call, f"append to session {session_id!r}", op)

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        """Entries with ``start <= seq < end`` (optionally only of ``kinds``), in seq order.

        ``SessionNotFoundError`` for an unknown session; ``CorruptEntryError`` naming the seq
        of the first row that cannot be decoded.
        """
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        return await self._worker.run(self._read_now, session_id, start, end, kinds)

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """The newest entry of one of ``kinds``, or ``None``; one index descent per kind."""
        return await self._worker.run(self._last_now, session_id, kinds)

    # -- leases ----------------------------------------------------------------------------

    async def acquire_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        """Take the lease when free, expired or already ``owner``'s (see ``Store``)."""
        check_lease(owner, ttl)

        def op(conn: sqlite3.Connection) -> bool:
            with writing(conn):
                self._require_session(conn, session_id)
                moment = time.time()
                cursor = conn.execute(TAKE_LEASE, (session_id, owner, moment + ttl, moment))
                return cursor.rowcount == 1

        return await self._run(f"take the lease of session {session_id!r}", op, session_id)

    async def renew_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        """Extend ``owner``'s lease; ``False`` if another owner took it or there is none."""
        check_lease(owner, ttl)
        if not storable(session_id):
            return False

        def op(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "UPDATE leases SET expires_at = ? WHERE session_id = ? AND owner = ?",
                (time.time() + ttl, session_id, owner),
            )
            return cursor.rowcount == 1

        return await self._run(f"renew the lease of session {session_id!r}", op)

    async def release_lease(self, session_id: str, owner: str) -> bool:
        """Give ``owner``'s lease up; ``False`` if it was not theirs."""
        if not storable(session_id) or not storable(owner):
            return False

        def op(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "DELETE FROM leases WHERE session_id = ? AND owner = ?", (session_id, owner)
            )
            return cursor.rowcount == 1

        return await self._run(f"release the lease of session {session_id!r}", op)

    async def lease_of(self, session_id: str) -> Lease | None:
        """The unexpired lease of the session, or ``None``."""

        def op(conn: sqlite3.Connection) -> Lease | None:
            row = conn.execute(LEASE_OF, (time.time(), session_id)).fetchone()
            if row is None:
                raise SessionNotFoundError(session_id)
            return None if row[0] is None else Lease(session_id, str(row[0]), float(row[1]))

        return await self._run(f"read the lease of session {session_id!r}", op, session_id)

    # -- lifetime --------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connection (idempotent); later calls raise ``StoreError``."""
        await self._worker.finish(self._close)

    def _close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
