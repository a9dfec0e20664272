"""The embedded default store: one SQLite file, safe for several processes on one machine.

Design in brief:

- stdlib ``sqlite3`` with one connection per store, used from worker threads
  (``asyncio.to_thread``) one call at a time under a lock, so the event loop never blocks on disk;
- WAL journal with ``synchronous=FULL``: a returned ``append`` survives a power cut, and readers
  never wait for the writer;
- every ``append`` is one ``BEGIN IMMEDIATE`` transaction that takes the write lock *before*
  reading the log's next seq, so two writers on one session (two stores, two processes) cannot
  interleave: the second one sees the moved seq and gets ``ConflictError`` with nothing written;
- ``entries`` is a ``WITHOUT ROWID`` table keyed ``(session_id, seq)`` plus an index on
  ``(session_id, kind, seq)``: range reads, the next seq and "newest entry of a kind" are index
  walks whose cost does not grow with the history;
- the schema is versioned in ``schema_migrations`` (see ``migrations.py``);
- every ``sqlite3`` failure surfaces as ``StoreError`` naming the file, chained with ``from``.

Cancelling a coroutine that awaits a write does not stop the write already handed to the worker
thread: it still commits or fails as a whole, so a caller that was cancelled re-reads the log's
``next_seq`` before writing again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import platformdirs

from ..errors import ConflictError, SessionNotFoundError, StoreError
from ..log import LogEntry, Record, dump_entry, load_entry, now
from .base import SessionInfo
from .migrations import CREATE_MIGRATIONS_TABLE, LATEST, MIGRATIONS

__all__ = ["SQLiteStore", "default_path"]

T = TypeVar("T")

#: SQLite integers are signed 64-bit; bounds outside that range are clamped, not rejected.
_MAX_SEQ = 2**63 - 1

_SESSION_COLUMNS = (
    "s.session_id, s.created_at, s.updated_at, s.title, s.project_dir,"
    " (SELECT max(e.seq) FROM entries e WHERE e.session_id = s.session_id)"
)


def default_path() -> Path:
    """Where ``SQLiteStore()`` keeps its database: ``sessions.db`` in the user data directory."""
    return Path(platformdirs.user_data_dir("agentsession")) / "sessions.db"


def _info(row: tuple[Any, ...]) -> SessionInfo:
    max_seq = row[5]
    return SessionInfo(
        id=row[0],
        created_at=row[1],
        updated_at=row[2],
        title=row[3],
        project_dir=row[4],
        next_seq=0 if max_seq is None else max_seq + 1,
    )


@contextlib.contextmanager
def _write(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: everything inside commits together or not at all."""
    # IMMEDIATE takes the write lock now, so what we read inside cannot change before we write.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        # Some errors (disk full, I/O) already rolled the transaction back; a statement-level
        # abort (a trigger's RAISE(ABORT)) leaves it open with earlier rows in it.
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


class SQLiteStore:
    """Sessions in one SQLite file (default: ``sessions.db`` in the user data directory).

    The file and its directory are created when missing and the schema is migrated at
    construction; a path that cannot hold a session database raises ``StoreError`` right away.
    Several stores (and processes) may share one file; appends to one session are serialised
    by ``expected_seq``. Call ``close()`` (or use ``async with``) when done.
    """

    rows_read: int

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, busy_timeout: float = 5.0
    ) -> None:
        """Open (creating and migrating when needed) the database at ``path``.

        ``busy_timeout`` is how many seconds a call waits for another writer's lock before
        failing with ``StoreError``.
        """
        self.rows_read = 0
        self.path = Path(path).expanduser() if path is not None else default_path()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = self._open(busy_timeout)

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    # -- opening ---------------------------------------------------------------------------

    def _open(self, busy_timeout: float) -> sqlite3.Connection:
        path = self.path
        try:
            is_dir = path.is_dir()
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the directory of session store {path}: {exc}") from exc
        if is_dir:
            raise StoreError(f"cannot open session store {path}: it is a directory")
        try:
            conn = sqlite3.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open session store {path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {max(0, int(busy_timeout * 1000))}")
            # Read-only checks first, so a file that is not ours is refused before anything
            # (even its journal mode) is changed.
            current = self._schema_version(conn)
            # The journal mode is stored in the file; only switch when needed, so an up-to-date
            # database on a read-only medium can still be opened for reading.
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            if current < LATEST:
                self._migrate(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot open session store {path}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _schema_version(self, conn: sqlite3.Connection) -> int:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if "schema_migrations" not in tables:
            if tables:
                raise StoreError(
                    f"cannot open session store {self.path}: it is an SQLite database but not"
                    " an agentsession store (no schema_migrations table)"
                )
            return 0
        version = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations")
        found = int(version.fetchone()[0])
        if found > LATEST:
            raise StoreError(
                f"session store {self.path} has schema version {found}, newer than this"
                f" agentsession knows ({LATEST}); upgrade agentsession"
            )
        return found

    def _migrate(self, conn: sqlite3.Connection) -> None:
        for migration in MIGRATIONS:
            with _write(conn):
                # Re-read under the lock: another process may have migrated meanwhile.
                current = self._schema_version(conn)
                if current >= migration.version:
                    continue
                conn.execute(CREATE_MIGRATIONS_TABLE)
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, description, applied_at)"
                    " VALUES (?, ?, ?)",
                    (migration.version, migration.description, now()),
                )

    # -- running ---------------------------------------------------------------------------

    async def _run(self, action: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.to_thread(self._call, action, fn)

    def _call(self, action: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            conn = self._conn
            if conn is None:
                raise StoreError(f"session store {self.path} is closed")
            try:
                return fn(conn)
            except sqlite3.Error as exc:
                raise StoreError(f"session store {self.path}: {action} failed: {exc}") from exc

    @staticmethod
    def _require_session(conn: sqlite3.Connection, session_id: str) -> None:
        row = conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,))
        if row.fetchone() is None:
            raise SessionNotFoundError(session_id)

    # -- sessions --------------------------------------------------------------------------

    async def create_session(self, info: SessionInfo) -> None:
        """Create an empty session; ``ConflictError`` if the id exists (``next_seq`` is ignored)."""

        def op(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO sessions (session_id, created_at, updated_at, title, project_dir)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (info.id, info.created_at, info.updated_at, info.title, info.project_dir),
                )
            except sqlite3.IntegrityError as exc:
                raise ConflictError(f"a session with id {info.id!r} already exists") from exc

        await self._run(f"create session {info.id!r}", op)

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's row with its current ``next_seq``; ``SessionNotFoundError`` if none."""

        def op(conn: sqlite3.Connection) -> SessionInfo:
            row = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.session_id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                raise SessionNotFoundError(session_id)
            return _info(row)

        return await self._run(f"read session {session_id!r}", op)

    async def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently updated first (ties: newest created, then by id)."""

        def op(conn: sqlite3.Connection) -> list[SessionInfo]:
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions s"
                " ORDER BY s.updated_at DESC, s.created_at DESC, s.session_id"
            ).fetchall()
            return [_info(row) for row in rows]

        return await self._run("list sessions", op)

    async def set_title(self, session_id: str, title: str) -> None:
        """Store the session's title (``updated_at`` is left alone: it tracks the log)."""

        def op(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(
                "UPDATE sessions SET title = ? WHERE session_id = ?", (title, session_id)
            )
            if cursor.rowcount == 0:
                raise SessionNotFoundError(session_id)

        await self._run(f"set the title of session {session_id!r}", op)

    # -- the log ---------------------------------------------------------------------------

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        """Append ``entries`` at ``expected_seq``, ``expected_seq + 1``, … in one transaction.

        ``ConflictError`` (nothing written) when the log's next seq is not ``expected_seq``,
        ``SessionNotFoundError`` for an unknown session, ``StoreError`` when the database
        refuses the write; in every failure case no entry of the batch is stored.
        """
        entries = list(entries)
        # Encode before taking the lock: a bad entry fails here, and the write lock is held
        # only for the inserts themselves.
        rows: list[tuple[str, int, str]] = []
        for index, entry in enumerate(entries):
            try:
                kind, version, data = dump_entry(entry)
            except (TypeError, ValueError) as exc:
                raise StoreError(
                    f"entry {index} of the batch ({getattr(entry, 'kind', '?')}) cannot be"
                    f" stored as JSON: {exc}"
                ) from exc
            rows.append((kind, version, data))

        def op(conn: sqlite3.Connection) -> None:
            with _write(conn):
                found = conn.execute(
                    "SELECT (SELECT max(seq) FROM entries WHERE session_id = ?1)"
                    " FROM sessions WHERE session_id = ?1",
                    (session_id,),
                ).fetchone()
                if found is None:
                    raise SessionNotFoundError(session_id)
                next_seq = 0 if found[0] is None else found[0] + 1
                if next_seq != expected_seq:
                    raise ConflictError(
                        f"conflicting write to session {session_id!r}: its next seq is {next_seq},"
                        f" this write expected {expected_seq} (another writer appended first,"
                        " or the caller's view is stale); nothing of this write was stored"
                    )
                if not rows:
                    return
                stamp = now()
                conn.executemany(
                    "INSERT INTO entries (session_id, seq, kind, version, data, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (session_id, expected_seq + i, kind, version, data, stamp)
                        for i, (kind, version, data) in enumerate(rows)
                    ],
                )
                conn.execute(
                    "UPDATE sessions SET updated_at = ? WHERE session_id = ?", (stamp, session_id)
                )

        await self._run(f"append to session {session_id!r}", op)
        return [Record(expected_seq + i, entry) for i, entry in enumerate(entries)]

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
        if isinstance(kinds, str):  # one kind given bare means that kind, not its letters
            kinds = [kinds]
        sql = "SELECT seq, kind, version, data FROM entries WHERE session_id = ? AND seq >= ?"
        params: list[Any] = [session_id, min(max(start, 0), _MAX_SEQ)]
        if end is not None:
            sql += " AND seq < ?"
            params.append(min(max(end, 0), _MAX_SEQ))
        if kinds is not None:
            sql += f" AND kind IN ({', '.join('?' * len(kinds))})"
            params.extend(kinds)
        sql += " ORDER BY seq"

        def op(conn: sqlite3.Connection) -> list[Record]:
            rows = conn.execute(sql, params).fetchall() if kinds is None or kinds else []
            if not rows:
                self._require_session(conn, session_id)
            self.rows_read += len(rows)
            return [
                Record(seq, load_entry(kind, version, data, session_id=session_id, seq=seq))
                for seq, kind, version, data in rows
            ]

        return await self._run(f"read session {session_id!r}", op)

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """The newest entry of one of ``kinds``, or ``None``; one index descent per kind."""
        if isinstance(kinds, str):
            kinds = [kinds]

        def op(conn: sqlite3.Connection) -> Record | None:
            best: int | None = None
            # One max() per kind: each is a single descent of the (session_id, kind, seq) index,
            # where an IN (...) over several kinds would scan all their entries to sort them.
            for kind in dict.fromkeys(kinds):
                found = conn.execute(
                    "SELECT max(seq) FROM entries WHERE session_id = ? AND kind = ?",
                    (session_id, kind),
                ).fetchone()[0]
                if found is not None and (best is None or found > best):
                    best = found
            if best is None:
                self._require_session(conn, session_id)
                return None
            seq, kind, version, data = conn.execute(
                "SELECT seq, kind, version, data FROM entries WHERE session_id = ? AND seq = ?",
                (session_id, best),
            ).fetchone()
            self.rows_read += 1
            return Record(seq, load_entry(kind, version, data, session_id=session_id, seq=seq))

        return await self._run(f"read session {session_id!r}", op)

    # -- lifetime --------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connection (idempotent); later calls raise ``StoreError``."""
        await asyncio.to_thread(self._close)

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
