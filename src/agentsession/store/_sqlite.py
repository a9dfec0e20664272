"""Opening an SQLite session database: paths, read-only access, pragmas, migrations; kept texts.

A writable open creates the folder and the file when missing, switches to WAL and migrates. A
read-only open never creates a database or a folder: it opens the file with a ``mode=ro`` URI,
and when SQLite cannot create the WAL companion files next to it (a read-only folder or medium)
it falls back to ``immutable=1``, which reads the main file only and assumes nobody writes it
meanwhile. A read-only open refuses a database whose schema is older than this code, since it
cannot migrate it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .._files import create_private, private_folder
from ..errors import SessionNotFoundError, StoreError
from ..log import now
from ._sql import INSERT_TEXT, SCAN_RANGE, SELECT_TEXTS, UPDATE_AFTER_APPEND, session_row
from ._sqlite_sql import (
    INSERT_ENTRY,
    INSERT_SESSION,
    KEY_AND_SESSION,
    KEYED_APPEND,
    NEWEST_OF_KIND,
    READ_ENTRIES,
    READ_KIND,
    coded,
    entry_rows,
)
from .base import Batch, SessionInfo, conflict, exists, info_from_row, refs_of
from .migrations import (
    LATEST,
    MIGRATIONS,
    SQLITE_READABLE_FROM,
    UPGRADE_HINT,
    create_migrations_table,
)

__all__ = [
    "TAKE_LEASE",
    "append_batch",
    "default_path",
    "insert_session",
    "keep_texts",
    "kept_texts",
    "newest_seq",
    "open_database",
    "range_queries",
    "reading",
    "writing",
]


def default_path() -> Path:
    """Where ``SQLiteStore()`` keeps its database: ``sessions.db`` in the user data directory."""
    import platformdirs  # here, not at the top: it takes longer to import than it is used

    return Path(platformdirs.user_data_dir("agentsession")) / "sessions.db"


@contextlib.contextmanager
def writing(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: everything inside commits together or not at all."""
    # IMMEDIATE takes the write lock now, so what we read inside cannot change before we write.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        _roll_back(conn)
        raise


@contextlib.contextmanager
def reading(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every statement inside sees the same snapshot of the file."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("COMMIT")


def open_database(path: Path, busy_timeout: float, read_only: bool) -> sqlite3.Connection:
    """A connection to the session database at ``path``; ``StoreError`` when it cannot be one."""
    conn = _connect_read_only(path, busy_timeout) if read_only else _connect(path, busy_timeout)
    try:
        conn.execute(f"PRAGMA busy_timeout = {max(0, int(busy_timeout * 1000))}")
        # Read-only checks first, so a file that is not ours is refused before anything
        # (even its journal mode) is changed.
        current = schema_version(conn, path)
        if read_only:
            if current == 0:
                raise StoreError(f"cannot open session store {path}: it holds no sessions schema")
            if current < SQLITE_READABLE_FROM:
                raise StoreError(
                    f"session store {path} has schema version {current}, older than this"
                    f" agentsession reads ({SQLITE_READABLE_FROM}); {UPGRADE_HINT}"
                )
            return conn
        if current == 0:
            # A new file: 8 KiB pages. Log rows of a few hundred bytes to a few KiB fill 4 KiB
            # pages of a WITHOUT ROWID table poorly (measured: half of each page unused after
            # VACUUM); 8 KiB pages hold the same log in two thirds of the space, and a commit
            # still writes only the few pages it changes. An existing file keeps its pages.
            conn.execute("PRAGMA page_size = 8192")
        # The journal mode is stored in the file; only switch when needed, so an up-to-date
        # database on a read-only medium can still be opened for reading.
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            _switch_to_wal(conn, busy_timeout)
        conn.execute("PRAGMA synchronous = FULL")
        # Checkpoint at 256 pages (2 MiB), not SQLite's 1,000: the write-ahead log is then
        # written over in place sooner. While it grows, each commit's fsync also journals the
        # file's new size (measured: 75-90 µs more CPU per commit, five commits a turn), and a
        # process starts with no log file, so at 1,000 pages each one paid that for its first
        # ~40 turns. Checkpoints come four times as often; each copies the few pages changed.
        conn.execute("PRAGMA wal_autocheckpoint = 256")
        conn.execute("PRAGMA foreign_keys = ON")
        if current < LATEST:
            _migrate(conn, path)
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot open session store {path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _switch_to_wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """Put a new file in WAL mode, waiting up to ``busy_timeout`` for other openers.

    The switch needs the file to itself, and SQLite answers "database is locked" at once, without
    its busy handler, when several connections open a new file together; so the wait is here.
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _connect(path: Path, busy_timeout: float) -> sqlite3.Connection:
    try:
        is_dir = path.is_dir()
        private_folder(path.parent)
    except OSError as exc:
        raise StoreError(f"cannot create the directory of session store {path}: {exc}") from exc
    if is_dir:
        raise StoreError(f"cannot open session store {path}: it is a directory")
    try:
        # Made 0600 here, before SQLite opens it: its -wal and -shm files take the database
        # file's mode, so every transcript stays its owner's alone.
        if str(path) != ":memory:":
            create_private(path)
    except OSError as exc:
        raise StoreError(f"cannot create session store {path}: {exc}") from exc
    try:
        return sqlite3.connect(
            path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open session store {path}: {exc}") from exc


def _connect_read_only(path: Path, busy_timeout: float) -> sqlite3.Connection:
    try:
        if path.is_dir():
            raise StoreError(f"cannot open session store {path}: it is a directory")
        if not path.exists():
            raise StoreError(f"no session store at {path} (nothing was created)")
    except OSError as exc:
        raise StoreError(f"cannot open session store {path}: {exc}") from exc
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    last: sqlite3.Error | None = None
    for suffix in ("", "&immutable=1"):
        try:
            conn = sqlite3.connect(
                uri + suffix,
                uri=True,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            last = exc
            continue
        try:
            # The first read is where SQLite finds it cannot create the WAL index.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            conn.close()
            # Only "cannot create the WAL index here" falls back; a busy or locked file must
            # not be read past its lock.
            name = getattr(exc, "sqlite_errorname", "")
            if not name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")):
                raise StoreError(f"cannot open session store {path}: {exc}") from exc
            last = exc
            continue
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot open session store {path}: {exc}") from exc
        return conn
    raise StoreError(f"cannot open session store {path} for reading: {last}") from last


def schema_version(conn: sqlite3.Connection, path: Path) -> int:
    """The recorded schema version; ``StoreError`` for a foreign or too new database."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "schema_migrations" not in tables:
        if tables:
            raise StoreError(
                f"cannot open session store {path}: it is an SQLite database but not"
                " an agentsession store (no schema_migrations table)"
            )
        return 0
    version = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations")
    found = int(version.fetchone()[0])
    if found > LATEST:
        raise StoreError(
            f"session store {path} has schema version {found}, newer than this"
            f" agentsession knows ({LATEST}); upgrade agentsession"
        )
    return found


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    for migration in MIGRATIONS:
        with writing(conn):
            # Re-read under the lock: another process may have migrated meanwhile.
            if schema_version(conn, path) >= migration.version:
                continue
            conn.execute(create_migrations_table("sqlite"))
            for statement in migration.sql("sqlite"):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.description, now()),
            )


def insert_session(
    conn: sqlite3.Connection, info: SessionInfo, next_seq: int, batch: Batch
) -> None:
    """Insert the session row of ``info`` (``ConflictError`` when the id is taken)."""
    try:
        conn.execute(INSERT_SESSION, session_row(info, next_seq, batch))
    except sqlite3.IntegrityError as exc:
        raise exists(info.id) from exc


def append_batch(
    conn: sqlite3.Connection,
    session_id: str,
    expected_seq: int,
    batch: Batch,
    keys: dict[str, int] | None = None,
) -> None:
    """Write ``batch`` at ``expected_seq`` in one transaction (``SQLiteStore.append``'s work).

    The write lock is taken before the log's next seq is checked: ``ConflictError`` with nothing
    written when it is not ``expected_seq``. ``keys`` remembers each session's integer key from
    one append to the next: with it, one statement (``KEYED_APPEND``) checks the seq, the key and
    the row and updates the row; only when it changes nothing (a first append, a conflict, a
    damaged row, a key given to another session meanwhile) is the row read and checked.
    """
    rows = batch.rows
    # The transaction by hand, not through ``writing``: the context manager's generator costs
    # more than the rest of the Python here, five commits a turn.
    cursor = conn.cursor()  # one for the transaction's statements, not one per statement
    cursor.execute("BEGIN IMMEDIATE")
    try:
        end = expected_seq + len(rows)
        update = (end, now(), batch.messages, batch.last_model, session_id)
        key = None if keys is None else keys.get(session_id)
        if (
            key is None
            or not rows
            or cursor.execute(KEYED_APPEND, (*update, key, expected_seq)).rowcount != 1
        ):
            key = _checked_key(conn, session_id, expected_seq)
            if keys is not None:
                if len(keys) >= _KEYS_KEPT:
                    keys.clear()
                keys[session_id] = key
            if rows:
                cursor.execute(UPDATE_AFTER_APPEND, update)
        if rows:
            cursor.executemany(INSERT_ENTRY, entry_rows(key, expected_seq, rows))
            keep_texts(conn, session_id, batch.texts)
        cursor.execute("COMMIT")
    except BaseException:
        _roll_back(conn)
        raise


#: Session keys an append remembers at most (a long-running server's sessions come and go).
_KEYS_KEPT = 1_024


def _checked_key(conn: sqlite3.Connection, session_id: str, expected_seq: int) -> int:
    """The session's key once its row is read and checked (the errors of an append)."""
    found = conn.execute(KEY_AND_SESSION, (session_id,)).fetchone()
    if found is None:
        raise SessionNotFoundError(session_id)
    next_seq = info_from_row(found[1:]).next_seq
    if next_seq != expected_seq:
        raise conflict(session_id, next_seq, expected_seq)
    key: int = found[0]
    return key


def _roll_back(conn: sqlite3.Connection) -> None:
    # Some errors (disk full, I/O) already rolled the transaction back; a statement-level
    # abort (a trigger's RAISE(ABORT)) leaves it open with earlier rows in it.
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def keep_texts(conn: sqlite3.Connection, session_id: str, texts: dict[str, str]) -> None:
    """Keep the baseline texts a batch's epochs refer to (those already kept stay)."""
    if texts:
        conn.executemany(INSERT_TEXT, [(session_id, ref, text) for ref, text in texts.items()])


#: References looked up per statement (SQLite allows 32,766 variables; older builds 999).
_REFS_PER_QUERY = 500
#: Up to this many references (an epoch's baseline has a handful of long sections), each is
#: looked up on its own by one statement the connection prepares once: an ``IN (...)`` list is a
#: new statement for each count of references, which puts its values in a temporary index
#: first (on a fresh connection, three texts: 17 µs instead of 26).
_REFS_ONE_BY_ONE = 8
_SELECT_TEXT = f"{SELECT_TEXTS} = ?"


def kept_texts(conn: sqlite3.Connection, session_id: str, rows: list[Any]) -> dict[str, str] | None:
    """The kept texts stored ``(seq, kind, version, data)`` rows refer to, by reference."""
    refs = refs_of(rows)
    if not refs:
        return None
    texts: dict[str, str] = {}
    if len(refs) <= _REFS_ONE_BY_ONE:  # one statement, prepared once: a key lookup per text
        for ref in refs:
            texts.update(conn.execute(_SELECT_TEXT, (session_id, ref)).fetchall())
        return texts
    for first in range(0, len(refs), _REFS_PER_QUERY):
        chunk = refs[first : first + _REFS_PER_QUERY]
        query = f"{SELECT_TEXTS} IN ({', '.join('?' * len(chunk))})"
        texts.update(conn.execute(query, [session_id, *chunk]).fetchall())
    return texts


def newest_seq(conn: sqlite3.Connection, session_id: str, codes: list[Any]) -> int | None:
    """The seq of the session's newest entry of one of the kinds ``codes`` stand for.

    One max() per kind, a single descent of the kind index each (an IN (...) over several
    kinds would scan all their entries).
    """
    best: int | None = None
    for code in codes:
        found = conn.execute(NEWEST_OF_KIND, (session_id, code)).fetchone()[0]
        if found is not None and (best is None or found > best):
            best = found
    return best


#: SQLite integers are signed 64-bit; bounds outside that range are clamped, not rejected.
MAX_SEQ = 2**63 - 1


def range_queries(
    session_id: str, start: int, end: int | None, wanted: list[str] | None
) -> list[tuple[str, list[Any]]]:
    """The statements of a range read (their rows in seq order once sorted together).

    Without kinds: one walk of the primary key. With kinds over a short range (a page of the
    transcript, a window): the same walk, filtered. Over a long range: one walk of the kind
    index per kind, so reading a rare kind from a long log touches its rows only.
    """
    lo = min(max(start, 0), MAX_SEQ)
    hi = MAX_SEQ if end is None else min(max(end, 0), MAX_SEQ)
    if wanted is not None and not wanted:
        return []
    codes = None if wanted is None else coded(wanted)
    if wanted is None or hi - lo <= SCAN_RANGE:
        query = READ_ENTRIES + " AND seq < ?"
        params: list[Any] = [session_id, lo, hi]
        if codes is not None:
            query += f" AND kind IN ({', '.join('?' * len(codes))})"
            params.extend(codes)
        return [(query + " ORDER BY seq", params)]
    return [(READ_KIND, [session_id, kind, lo, hi]) for kind in codes or []]


#: Take a lease that is free, expired or the owner's own (the last parameter is "now").
TAKE_LEASE = (
    "INSERT INTO leases (session_id, owner, expires_at) VALUES (?, ?, ?)"
    " ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner,"
    " expires_at = excluded.expires_at"
    " WHERE leases.owner = excluded.owner OR leases.expires_at <= ?"
)
