"""The statements of SQLite's log, which schema 4 keys by an integer session key.

PostgreSQL keys its log by the text session id (``_sql``); SQLite stores the session's integer
``session_key`` in each entry row and kind-index row instead. Each statement here still takes
the text session id and finds the key with a subquery (one descent of a unique index), so the
callers pass what they passed before. Entry rows leave out what the row says already: the
``kind`` field at the end of the JSON (reading fills it in from the column); no commit time is
kept per row (nothing read it; each entry holds its own timestamps); and a known kind is
stored as its small integer code (``KIND_CODES``), in the row and in the kind index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .base import SESSION_COLUMNS

__all__ = [
    "COPY_ENTRIES",
    "COUNT_KIND",
    "COUNT_MESSAGES",
    "DELETE_SESSION",
    "ENTRY_AT",
    "INSERT_ENTRY",
    "INSERT_SESSION",
    "KEYED_APPEND",
    "KEY_AND_SESSION",
    "KIND_CODES",
    "KIND_TOTAL",
    "LAST_MODEL_ROWS",
    "NEWEST_OF_KIND",
    "READ_ENTRIES",
    "READ_KIND",
    "coded",
    "entry_rows",
    "lean",
    "named",
]

#: Each known entry kind's code in SQLite's ``kind`` column: one byte in the row and in the
#: kind index instead of up to 24 characters. Frozen (stored): a code is never reused or
#: changed; a new kind gets the next number. A kind without a code is stored as its name.
KIND_CODES: dict[str, int] = {
    "user": 1,
    "assistant": 2,
    "tool_result": 3,
    "mid_conversation_system": 4,
    "epoch": 5,
    "system_prompt_checkpoint": 6,
    "dispatch": 7,
    "provider_failed": 8,
    "interrupted": 9,
    "summary": 10,
    "model_switched": 11,
    "omitted": 12,
    "runtime_context": 13,
    "permission_changed": 14,
    "skill_loaded": 15,
    "skill_unloaded": 16,
    "skill_activated": 17,
    "skill_store": 18,
    "instructions_found": 19,
    "approval_requested": 20,
    "approval_decided": 21,
    "approvals_dropped": 22,
}
_NAMES: dict[Any, str] = {code: kind for kind, code in KIND_CODES.items()}
#: ``name_of(code, code)``: a stored kind code's name, an unknown code as it is (see ``named``).
name_of = _NAMES.get


def coded(kinds: Sequence[str]) -> list[Any]:
    """``kinds`` as the ``kind`` column holds them."""
    return [KIND_CODES.get(kind, kind) for kind in kinds]


def named(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Stored ``(seq, kind, version, data)`` rows with each kind's name.

    An unknown code stays a number, which decoding reports as a damaged row.
    """
    return [(seq, _NAMES.get(kind, kind), version, data) for seq, kind, version, data in rows]


#: The integer key of the session whose text id is the parameter.
KEY_OF = "(SELECT session_key FROM sessions WHERE session_id = ?)"

#: A new session takes the next key (one descent of ``sessions_key``); a deleted session's key
#: may be given again, since its entries went with it.
INSERT_SESSION = (
    "INSERT INTO sessions (session_id, created_at, updated_at, title, project_dir, next_seq,"
    " message_count, last_model, file_version, session_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?,"
    " (SELECT coalesce(max(session_key), 0) + 1 FROM sessions))"
)
#: The session's key and its row (``SESSION_COLUMNS``), which the caller checks.
KEY_AND_SESSION = f"SELECT session_key, {SESSION_COLUMNS} FROM sessions WHERE session_id = ?"
#: An append's check and the session row's update in one statement. It changes the row (a
#: changed-row count of 1) only when the session still has the key the caller remembers, its log's
#: next seq is the expected one and the row holds what ``info_from_row`` accepts; otherwise it
#: changes nothing and the caller reads the row to learn why. Parameters: the new next seq, the
#: update time, the messages added, the last model (or null), the session id, its key, the
#: expected seq.
KEYED_APPEND = (
    "UPDATE sessions SET next_seq = ?, updated_at = ?, message_count = message_count + ?,"
    " last_model = coalesce(?, last_model)"
    " WHERE session_id = ? AND session_key = ? AND next_seq = ?"
    " AND typeof(next_seq) = 'integer' AND next_seq >= 0"
    " AND typeof(message_count) = 'integer' AND message_count >= 0"
    " AND typeof(created_at) = 'text' AND typeof(updated_at) = 'text'"
    " AND typeof(title) IN ('text', 'null') AND typeof(project_dir) IN ('text', 'null')"
    " AND typeof(last_model) IN ('text', 'null')"
    " AND (file_version IS NULL OR (typeof(file_version) = 'integer' AND file_version >= 0))"
)
INSERT_ENTRY = "INSERT INTO entries (session_key, seq, kind, version, data) VALUES (?, ?, ?, ?, ?)"
DELETE_SESSION = (
    "DELETE FROM leases WHERE session_id = ?",
    f"DELETE FROM kind_counts WHERE session_key = {KEY_OF}",
    f"DELETE FROM entries WHERE session_key = {KEY_OF}",
    "DELETE FROM texts WHERE session_id = ?",
    "DELETE FROM sessions WHERE session_id = ?",
)
#: Parameters: the new session's id, the source's id, the last seq copied.
COPY_ENTRIES = (
    "INSERT INTO entries (session_key, seq, kind, version, data)"
    f" SELECT {KEY_OF}, seq, kind, version, data FROM entries"
    f" WHERE session_key = {KEY_OF} AND seq <= ?"
)
#: The base of a range read; the caller adds the optional bounds and ``ORDER BY seq``.
READ_ENTRIES = (
    f"SELECT seq, kind, version, data FROM entries WHERE session_key = {KEY_OF} AND seq >= ?"
)
READ_KIND = (
    "SELECT seq, kind, version, data FROM entries INDEXED BY entries_kind"
    f" WHERE session_key = {KEY_OF} AND kind = ? AND seq >= ? AND seq < ? ORDER BY seq"
)
COUNT_KIND = (
    "SELECT count(*) FROM entries INDEXED BY entries_kind"
    f" WHERE session_key = {KEY_OF} AND kind = ? AND seq < ?"
)
#: The session's next seq and how many entries of one kind it holds (``kind_counts``, kept by
#: a trigger on every insert; no row: none).
KIND_TOTAL = (
    "SELECT s.next_seq, (SELECT c.entries FROM kind_counts c WHERE c.session_key = s.session_key"
    " AND c.kind = ?) FROM sessions s WHERE s.session_id = ?"
)
COUNT_MESSAGES = (
    f"SELECT count(*) FROM entries WHERE session_key = {KEY_OF}"
    f" AND kind IN ({KIND_CODES['user']}, {KIND_CODES['assistant']}, {KIND_CODES['tool_result']})"
)
#: Assistant rows newest first: the first one naming a model gives ``last_model``.
LAST_MODEL_ROWS = (
    f"SELECT seq, kind, version, data FROM entries WHERE session_key = {KEY_OF}"
    f" AND kind = {KIND_CODES['assistant']} ORDER BY seq DESC"
)
#: "The newest entry of kind K": the last key of the (session_key, K) prefix of the kind index.
NEWEST_OF_KIND = f"SELECT max(seq) FROM entries WHERE session_key = {KEY_OF} AND kind = ?"
ENTRY_AT = f"SELECT seq, kind, version, data FROM entries WHERE session_key = {KEY_OF} AND seq = ?"


def lean(kind: str, data: str) -> str:
    """``data`` without its closing ``"kind"`` field, which the row's column holds.

    Only an object whose last top-level field is the kind ends in ``,"kind":"<kind>"}`` (a
    nested object would end in ``}}`` or ``}]``, a string's quotes are escaped); any other form
    is stored as it is. Reading puts the field back from the column (``load_entry``).
    """
    suffix = f',"kind":"{kind}"}}'
    return data[: -len(suffix)] + "}" if data.endswith(suffix) else data


def entry_rows(key: int, first_seq: int, rows: Sequence[tuple[str, int, str]]) -> list[Any]:
    """The ``INSERT_ENTRY`` parameters of a batch's ``(kind, version, data)`` rows."""
    return [
        (key, first_seq + i, KIND_CODES.get(kind, kind), version, lean(kind, data))
        for i, (kind, version, data) in enumerate(rows)
    ]
