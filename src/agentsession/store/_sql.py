"""The SQL both database stores run, written once with ``?`` placeholders.

``postgres()`` turns a statement into psycopg's ``%s`` style; none of these statements holds a
literal ``?`` or ``%``. What differs between the dialects (the lease clock, locking reads) stays
in each store.
"""

from __future__ import annotations

from typing import Any

from .base import SESSION_COLUMNS, Batch, SessionInfo

__all__ = [
    "COPY_ENTRIES",
    "COPY_TEXTS",
    "COUNT_KIND",
    "COUNT_MESSAGES",
    "DELETE_SESSION",
    "INSERT_ENTRY",
    "INSERT_SESSION",
    "INSERT_TEXT",
    "LAST_MODEL_ROWS",
    "LEASE_OF",
    "LIST_SESSIONS",
    "LIST_SESSIONS_AFTER",
    "LIST_SESSIONS_FIRST",
    "READ_ENTRIES",
    "READ_KIND",
    "SCAN_RANGE",
    "SELECT_SESSION",
    "SELECT_TEXTS",
    "SESSION_EXISTS",
    "SET_COUNTERS",
    "SET_TITLE",
    "UPDATE_AFTER_APPEND",
    "page_params",
    "postgres",
    "session_row",
]


def postgres(sql: str) -> str:
    """``sql`` with psycopg's placeholders."""
    return sql.replace("?", "%s")


SELECT_SESSION = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = ?"
LIST_SESSIONS = (
    f"SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, created_at DESC, session_id"
)
#: One page of ``LIST_SESSIONS``: the first, and the one after a row's
#: ``(updated_at, created_at, session_id)`` (keyset paging: no row is read twice or skipped).
LIST_SESSIONS_FIRST = (
    f"SELECT {SESSION_COLUMNS} FROM sessions"
    " ORDER BY updated_at DESC, created_at DESC, session_id LIMIT ?"
)
LIST_SESSIONS_AFTER = (
    f"SELECT {SESSION_COLUMNS} FROM sessions WHERE updated_at < ?"
    " OR (updated_at = ? AND (created_at < ? OR (created_at = ? AND session_id > ?)))"
    " ORDER BY updated_at DESC, created_at DESC, session_id LIMIT ?"
)


def page_params(limit: int, after: tuple[str, str, str] | None) -> tuple[object, ...]:
    """The parameters of ``LIST_SESSIONS_FIRST`` or ``LIST_SESSIONS_AFTER``."""
    if after is None:
        return (limit,)
    updated, created, session_id = after
    return (updated, updated, created, created, session_id, limit)


SESSION_EXISTS = "SELECT 1 FROM sessions WHERE session_id = ?"
INSERT_SESSION = (
    "INSERT INTO sessions (session_id, created_at, updated_at, title, project_dir, next_seq,"
    " message_count, last_model, file_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def session_row(info: SessionInfo, next_seq: int, batch: Batch) -> tuple[Any, ...]:
    """The parameters of ``INSERT_SESSION`` for ``info`` created holding ``batch``."""
    return (
        info.id,
        info.created_at,
        info.updated_at,
        info.title,
        info.project_dir,
        next_seq,
        batch.messages,
        batch.last_model,
        info.file_version,
    )


SET_TITLE = "UPDATE sessions SET title = ? WHERE session_id = ?"
SET_COUNTERS = "UPDATE sessions SET message_count = ?, last_model = ? WHERE session_id = ?"
DELETE_SESSION = (
    "DELETE FROM leases WHERE session_id = ?",
    "DELETE FROM entries WHERE session_id = ?",
    "DELETE FROM texts WHERE session_id = ?",
    "DELETE FROM sessions WHERE session_id = ?",
)
INSERT_ENTRY = (
    "INSERT INTO entries (session_id, seq, kind, version, data, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
UPDATE_AFTER_APPEND = (
    "UPDATE sessions SET next_seq = ?, updated_at = ?, message_count = message_count + ?,"
    " last_model = coalesce(?, last_model) WHERE session_id = ?"
)
#: The base of a range read; the caller adds the optional bounds and ``ORDER BY seq``.
READ_ENTRIES = "SELECT seq, kind, version, data FROM entries WHERE session_id = ? AND seq >= ?"
COPY_ENTRIES = (
    "INSERT INTO entries (session_id, seq, kind, version, data, created_at)"
    " SELECT ?, seq, kind, version, data, created_at FROM entries"
    " WHERE session_id = ? AND seq <= ?"
)
#: A kept baseline text; one the session holds already stays as it is (the same reference is
#: the same text).
INSERT_TEXT = (
    "INSERT INTO texts (session_id, ref, text) VALUES (?, ?, ?)"
    " ON CONFLICT (session_id, ref) DO NOTHING"
)
#: The kept texts of a forked session: all of the source's (a few per context change).
COPY_TEXTS = (
    "INSERT INTO texts (session_id, ref, text) SELECT ?, ref, text FROM texts WHERE session_id = ?"
)
#: The kept texts of a session among some references (SQLite adds ``IN (?, ?, …)``, PostgreSQL
#: ``= ANY(?)``).
SELECT_TEXTS = "SELECT ref, text FROM texts WHERE session_id = ? AND ref"
COUNT_MESSAGES = (
    "SELECT count(*) FROM entries WHERE session_id = ?"
    " AND kind IN ('user', 'assistant', 'tool_result')"
)
#: Assistant rows newest first: the first one naming a model gives ``last_model``.
LAST_MODEL_ROWS = (
    "SELECT seq, kind, version, data FROM entries WHERE session_id = ? AND kind = 'assistant'"
    " ORDER BY seq DESC"
)
#: The session's unexpired lease (owner and expiry are null when there is none); no row at all
#: when the session is unknown. The first parameter is "now" by the database's clock.
LEASE_OF = (
    "SELECT l.owner, l.expires_at FROM sessions s LEFT JOIN leases l"
    " ON l.session_id = s.session_id AND l.expires_at > ? WHERE s.session_id = ?"
)

#: Up to this many seqs, a kind-filtered SQLite read walks the primary key; beyond, the kind
#: index, one kind at a time (SQLite would otherwise scan the whole log for a rare kind).
SCAN_RANGE = 4_096
READ_KIND = (
    "SELECT seq, kind, version, data FROM entries INDEXED BY entries_kind"
    " WHERE session_id = ? AND kind = ? AND seq >= ? AND seq < ? ORDER BY seq"
)
COUNT_KIND = (
    "SELECT count(*) FROM entries INDEXED BY entries_kind"
    " WHERE session_id = ? AND kind = ? AND seq < ?"
)
