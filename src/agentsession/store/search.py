"""Finding messages in every session: ``search_store`` and the ``SearchHit`` it returns.

The words of the query must all occur in a message (user text, assistant text with its tool
calls, tool results), as words (letters and digits; case and accents folded); hits come newest
first (the session's last activity, then the entry's seq), each with a snippet where the words
are marked ``[…]``. Quotes, ``-``, ``*`` or ``OR`` in the query are just text, never syntax.

SQLite and PostgreSQL answer from their full-text index (``store._search_sql``: FTS5 plus the
queue of entries not yet in it, and a ``tsvector`` under GIN), read on a connection of the
search's own, so the store's connection and its append path are untouched. Any other store
(``MemoryStore``) is read entry by entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
import unicodedata
from pathlib import Path
from typing import Any

from .._frozen import frozen
from ..errors import StoreError, UsageError
from ..log import AssistantEntry, LogEntry, ToolResultEntry, UserEntry
from ..request import TextPart
from ._search_sql import (
    DRAIN_BATCH,
    INDEXED_CHARS,
    KEY_SHIFT,
    POSTGRES_DRAIN,
    POSTGRES_DRAIN_CAREFULLY,
    SQLITE_DRAIN,
)
from .base import Store
from .migrations import UPGRADE_HINT
from .sqlite import SQLiteStore

__all__ = ["SearchHit", "entry_text", "search_store"]

_TOKEN = re.compile(r"[^\W_]+")
_SNIPPET_WORDS = 12


@frozen
class SearchHit:
    """One message that holds the words: where it is, whose it is, and the words in context."""

    session_id: str
    seq: int
    role: str
    snippet: str


def _tokens(text: str) -> list[str]:
    """Words as the index's tokenizer sees them: letters and digits, case and accents folded."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    return _TOKEN.findall("".join(c for c in folded if not unicodedata.combining(c)))


def entry_text(entry: LogEntry) -> tuple[str, str] | None:
    """The role and searchable text of a transcript entry (``None`` for any other)."""
    match entry:
        case UserEntry(content=content):
            role = "user"
        case AssistantEntry(content=content):
            calls = " ".join(f"{c.name} {c.arguments}" for c in entry.tool_calls)
            return "assistant", f"{content} {calls}".strip()[:INDEXED_CHARS]
        case ToolResultEntry(content=content):
            role = "tool"
        case _:
            return None
    if not isinstance(content, str):
        content = " ".join(p.text for p in content if isinstance(p, TextPart))
    return role, content[:INDEXED_CHARS]


def _snippet(text: str, wanted: list[str]) -> str:
    """A few words around the first hit, each word holding a wanted token marked ``[…]``."""
    words = text.split()
    tokens = set(wanted)

    def hit(word: str) -> bool:
        return bool(tokens.intersection(_tokens(word)))

    first = next((i for i, w in enumerate(words) if hit(w)), 0)  # stops at the first hit
    start = max(0, first - _SNIPPET_WORDS // 2)
    shown = [f"[{w}]" if hit(w) else w for w in words[start : start + _SNIPPET_WORDS]]
    return (
        ("…" if start else "")
        + " ".join(shown)
        + ("…" if start + _SNIPPET_WORDS < len(words) else "")
    )


async def _scan(
    store: Store, tokens: list[str], limit: int, session: str | None
) -> list[SearchHit]:
    hits: list[SearchHit] = []
    infos = await store.list_sessions()
    for info in infos:
        if session is not None and info.id != session:
            continue
        records = await store.read(info.id, 0, info.next_seq)
        for record in reversed(records):
            found = entry_text(record.entry)
            if found is None or not set(tokens) <= set(_tokens(found[1])):
                continue
            hits.append(SearchHit(info.id, record.seq, found[0], _snippet(found[1], tokens)))
            if len(hits) >= limit:
                return hits
    return hits


#: Up to this many matches are ordered in memory; more (a common word) are read session by
#: session, newest first, until the page is full: never all of them sorted.
_FEW = 2_000
_SQLITE_MATCHES = "SELECT rowid FROM entries_search WHERE entries_search MATCH ? {only} LIMIT ?"
_SQLITE_RANGE = "AND rowid BETWEEN ? AND ?"
_SQLITE_IN_SESSION = (
    "SELECT rowid FROM entries_search WHERE entries_search MATCH ?"
    " AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?"
)
_SQLITE_SESSIONS = "SELECT session_key, session_id, updated_at FROM sessions {where}"
_SQLITE_QUEUED = """
SELECT s.updated_at, q.seq, s.session_id, q.session_key, e.kind, e.data
FROM search_queue q JOIN sessions s ON s.session_key = q.session_key
JOIN entries e ON e.session_key = q.session_key AND e.seq = q.seq
"""
_SQLITE_ROW = "SELECT kind, data FROM entries WHERE session_key = ? AND seq = ?"
_ROLES: dict[object, str] = {
    1: "user",
    2: "assistant",
    3: "tool",
    "user": "user",
    "assistant": "assistant",
    "tool_result": "tool",
}


def _raw_text(kind: object, data: str) -> tuple[str, str] | None:
    """The role and searchable text of a stored row, read as ``_search_sql`` reads it."""
    role = _ROLES.get(kind)
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if role is None or not isinstance(value, dict):
        return None
    content = value.get("content")
    if isinstance(content, list):
        content = " ".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    text = content if isinstance(content, str) else ""
    calls = value.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            text += f" {call.get('name')} {json.dumps(call.get('arguments'))}"
    return role, text[:INDEXED_CHARS]


def _drain(db: sqlite3.Connection) -> None:
    """Move the queued entries into the index, a batch per write transaction.

    A writer of the log waits for one batch at most; a file that cannot be written keeps its
    queue for later. Nothing queued: no write transaction (its commit would wait for the disk).
    """
    while db.execute("SELECT 1 FROM search_queue LIMIT 1").fetchone() is not None:
        try:
            db.execute("BEGIN IMMEDIATE")
            for statement in SQLITE_DRAIN:
                db.execute(statement)
            moved = db.execute("SELECT count(*) FROM temp.search_batch").fetchone()[0]
            db.execute("COMMIT")
        except sqlite3.OperationalError:
            if db.in_transaction:
                db.execute("ROLLBACK")
            return
        if moved < DRAIN_BATCH:
            return


def _key_range(db: sqlite3.Connection, session: str | None) -> tuple[int, int] | None:
    if session is None:
        return None
    found = db.execute("SELECT session_key FROM sessions WHERE session_id = ?", (session,))
    row = found.fetchone()
    key = int(row[0]) if row is not None else -1
    return key * KEY_SHIFT, key * KEY_SHIFT + KEY_SHIFT - 1


def _sqlite_indexed(
    db: sqlite3.Connection, match: str, limit: int, session: str | None
) -> list[tuple[Any, ...]]:
    """``(updated_at, seq, session_id, key)`` of the newest indexed hits."""
    span = _key_range(db, session)
    only = _SQLITE_RANGE if span else ""
    found = db.execute(_SQLITE_MATCHES.format(only=only), (match, *(span or ()), _FEW + 1))
    rowids = [int(r[0]) for r in found]
    if len(rowids) <= _FEW:
        keys = sorted({rowid // KEY_SHIFT for rowid in rowids})
        where = f"WHERE session_key IN ({', '.join('?' * len(keys))})" if keys else "WHERE 0"
        known = {k: (i, u) for k, i, u in db.execute(_SQLITE_SESSIONS.format(where=where), keys)}
        rows = [
            (known[r // KEY_SHIFT][1], r % KEY_SHIFT, known[r // KEY_SHIFT][0], r // KEY_SHIFT)
            for r in rowids
            if r // KEY_SHIFT in known
        ]
        return sorted(rows, key=lambda r: (r[0], r[3], r[1]), reverse=True)[:limit]
    rows = []
    # Read lazily down the ``updated_at`` index: a common word fills the page in a session or two.
    newest = _SQLITE_SESSIONS.format(where="ORDER BY updated_at DESC")
    for key, session_id, updated in db.cursor().execute(newest):
        if session not in (None, session_id):
            continue
        low = key * KEY_SHIFT
        hits = db.execute(_SQLITE_IN_SESSION, (match, low, low + KEY_SHIFT - 1, limit - len(rows)))
        rows += [(updated, int(r[0]) % KEY_SHIFT, session_id, key) for r in hits]
        if len(rows) >= limit:
            break
    return rows


def _sqlite_rows(
    db: sqlite3.Connection, tokens: list[str], limit: int, session: str | None
) -> list[tuple[Any, ...]]:
    """``(updated_at, seq, session_id, key)`` of the newest hits, indexed and queued."""
    match = " ".join('"' + t.replace('"', '""') + '"' for t in tokens)
    rows = _sqlite_indexed(db, match, limit, session)
    for updated, seq, session_id, key, kind, data in db.execute(_SQLITE_QUEUED):
        found = _raw_text(kind, data) if session in (None, session_id) else None
        if found is not None and set(tokens) <= set(_tokens(found[1])):
            rows.append((updated, seq, session_id, key))
    rows.sort(key=lambda r: (r[0], r[3], r[1]), reverse=True)
    return rows[:limit]


def _sqlite(
    path: Path, tokens: list[str], limit: int, session: str | None, drain: bool
) -> list[SearchHit]:
    mode = "rw" if drain else "ro"
    try:
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode={mode}", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path} to search: {exc}") from exc
    try:
        db.isolation_level = None  # transactions as written
        db.execute("PRAGMA busy_timeout = 2000")
        if drain:
            _drain(db)
        hits: list[SearchHit] = []
        for _, seq, session_id, key in _sqlite_rows(db, tokens, limit, session):
            row = db.execute(_SQLITE_ROW, (key, seq)).fetchone()
            found = _raw_text(row[0], row[1]) if row is not None else None
            if found is not None:
                hits.append(SearchHit(session_id, seq, found[0], _snippet(found[1], tokens)))
        return hits
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            raise StoreError(f"{path} has no search index yet: {UPGRADE_HINT}") from exc
        raise StoreError(f"search failed: {exc}") from exc
    finally:
        db.close()


_POSTGRES_MATCHES = (
    "SELECT session_id, seq FROM entry_texts"
    " WHERE doc @@ plainto_tsquery('simple', %s) {only} LIMIT %s"
)
_POSTGRES_IN_SESSION = (
    "SELECT seq FROM entry_texts WHERE session_id = %s"
    " AND doc @@ plainto_tsquery('simple', %s) ORDER BY seq DESC LIMIT %s"
)
_POSTGRES_SESSIONS_OF = "SELECT session_id, updated_at FROM sessions WHERE session_id = ANY(%s)"
_POSTGRES_NEWEST = "SELECT session_id, updated_at FROM sessions ORDER BY updated_at DESC"
_POSTGRES_QUEUED = """
SELECT s.updated_at, q.seq, q.session_id, e.kind, e.data
FROM search_queue q JOIN sessions s ON s.session_id = q.session_id
JOIN entries e ON e.session_id = q.session_id AND e.seq = q.seq
"""
_POSTGRES_ROW = "SELECT kind, data FROM entries WHERE session_id = %s AND seq = %s"
#: A drain that moved this many entries vacuums the queue at once (PostgreSQL).
VACUUM_AFTER = 10_000


async def _postgres_drain(conn: Any) -> None:
    """Move the queue into the index (carefully when a row refuses); later if it cannot."""
    import psycopg

    if await (await conn.execute("SELECT 1 FROM search_queue LIMIT 1")).fetchone() is None:
        return
    for statement in (POSTGRES_DRAIN, POSTGRES_DRAIN_CAREFULLY):
        try:
            async with conn.transaction():
                moved = (await conn.execute(statement)).rowcount
        except psycopg.errors.ReadOnlySqlTransaction:
            return
        except psycopg.Error:
            continue
        if moved >= VACUUM_AFTER:
            # Until autovacuum comes (up to a minute), every search would scan the queue's
            # deleted rows and plan without the index's statistics: 85-290 ms a query after
            # a million instead of 7-35 (benchmarks/README.md).
            with contextlib.suppress(psycopg.Error):
                await conn.execute("VACUUM search_queue")
                await conn.execute("ANALYZE entry_texts")
        return


async def _postgres_indexed(
    conn: Any, query: str, limit: int, session: str | None
) -> list[tuple[Any, ...]]:
    """``(updated_at, seq, session_id)`` of the newest indexed hits (as ``_sqlite_indexed``)."""
    only = "AND session_id = %s" if session else ""
    params = (query, *([session] if session else []), _FEW + 1)
    found = await (await conn.execute(_POSTGRES_MATCHES.format(only=only), params)).fetchall()
    if len(found) <= _FEW:
        ids = sorted({str(r[0]) for r in found})
        known = dict(await (await conn.execute(_POSTGRES_SESSIONS_OF, (ids,))).fetchall())
        rows = [(known[r[0]], int(r[1]), str(r[0])) for r in found if r[0] in known]
        return sorted(rows, reverse=True)[:limit]
    rows = []
    for session_id, updated in await (await conn.execute(_POSTGRES_NEWEST)).fetchall():
        if session not in (None, session_id):
            continue
        hits = await conn.execute(_POSTGRES_IN_SESSION, (session_id, query, limit - len(rows)))
        rows += [(updated, int(r[0]), str(session_id)) for r in await hits.fetchall()]
        if len(rows) >= limit:
            break
    return rows


async def _postgres(
    dsn: str, tokens: list[str], limit: int, session: str | None, drain: bool
) -> list[SearchHit]:
    import psycopg

    query = " ".join(tokens)
    try:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            if drain:
                await _postgres_drain(conn)
            rows = await _postgres_indexed(conn, query, limit, session)
            for updated, seq, session_id, kind, data in await (
                await conn.execute(_POSTGRES_QUEUED)
            ).fetchall():
                found = _raw_text(kind, data) if session in (None, session_id) else None
                if found is not None and set(tokens) <= set(_tokens(found[1])):
                    rows.append((updated, seq, session_id))
            rows.sort(reverse=True)
            hits: list[SearchHit] = []
            for _, seq, session_id in rows[:limit]:
                row = await (await conn.execute(_POSTGRES_ROW, (session_id, seq))).fetchone()
                found = _raw_text(row[0], row[1]) if row is not None else None
                if found is not None:
                    hits.append(
                        SearchHit(str(session_id), int(seq), found[0], _snippet(found[1], tokens))
                    )
            return hits
    except psycopg.errors.UndefinedTable as exc:
        raise StoreError(f"the database has no search index yet: {UPGRADE_HINT}") from exc
    except psycopg.Error as exc:
        raise StoreError(f"search failed: {exc}") from exc


async def search_store(
    store: Store,
    text: str,
    *,
    limit: int = 20,
    session: str | None = None,
    drain: bool | None = None,
) -> list[SearchHit]:
    """The messages of ``store`` holding every word of ``text``, newest first (module doc).

    ``drain``: whether the search may first move the queued entries into the index (a write;
    default: unless the store was opened read-only). Without it they are read from the
    log, so the answer is the same.
    """
    if limit < 1:
        raise UsageError("a search returns at least one hit: limit must be 1 or more")
    words = _tokens(text)
    if not words:
        return []
    if isinstance(store, SQLiteStore):
        writes = not store.read_only if drain is None else drain
        return await asyncio.to_thread(_sqlite, store.path, words, limit, session, writes)
    dsn = getattr(store, "dsn", None)
    # Named, not imported: the PostgreSQL driver is an optional extra.
    if isinstance(dsn, str) and type(store).__name__ == "PostgresStore":
        writes = not getattr(store, "read_only", False) if drain is None else drain
        return await _postgres(dsn, words, limit, session, writes)
    return await _scan(store, words, limit, session)
