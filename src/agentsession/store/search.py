"""Finding messages in every session: ``search_store`` and the ``SearchHit`` it returns.

The words of the query must all occur in a message (user text, assistant text with its tool
calls, tool results); hits come newest first (the session's last activity, then the entry's
seq), each with a snippet where the words are marked ``[…]``. Words are matched as words, never
as query syntax: quotes, ``-``, ``*`` or ``OR`` in the text are just text.

SQLite and PostgreSQL answer from their full-text index (``store._search_sql``: FTS5, and a
``tsvector`` under GIN), read on a connection of the search's own, so the store's connection
and its append path are untouched. Any other store (``MemoryStore``) is read entry by entry.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StoreError, UsageError
from ..log import AssistantEntry, LogEntry, ToolResultEntry, UserEntry
from ..request import TextPart
from ._search_sql import INDEXED_CHARS, KEY_SHIFT
from .base import Store
from .migrations import UPGRADE_HINT
from .sqlite import SQLiteStore

__all__ = ["SearchHit", "entry_text", "search_store"]

_WORD = re.compile(r"\w+")
_SNIPPET_WORDS = 12


@dataclass(frozen=True)
class SearchHit:
    """One message that holds the words: where it is, whose it is, and the words in context."""

    session_id: str
    seq: int
    role: str
    snippet: str


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


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


def _snippet(text: str, words: list[str]) -> str:
    tokens = text.split()
    wanted = {w.casefold() for w in words}
    first = next((i for i, t in enumerate(tokens) if any(w in t.casefold() for w in wanted)), 0)
    start = max(0, first - _SNIPPET_WORDS // 2)
    shown = [
        f"[{t}]" if any(w in t.casefold() for w in wanted) else t
        for t in tokens[start : start + _SNIPPET_WORDS]
    ]
    return (
        ("…" if start else "")
        + " ".join(shown)
        + ("…" if start + _SNIPPET_WORDS < len(tokens) else "")
    )


async def _scan(store: Store, words: list[str], limit: int, session: str | None) -> list[SearchHit]:
    wanted = [w.casefold() for w in words]
    hits: list[SearchHit] = []
    infos = await store.list_sessions()
    for info in infos:
        if session is not None and info.id != session:
            continue
        records = await store.read(info.id, 0, info.next_seq)
        for record in reversed(records):
            found = entry_text(record.entry)
            if found is None or not all(w in found[1].casefold() for w in wanted):
                continue
            hits.append(SearchHit(info.id, record.seq, found[0], _snippet(found[1], words)))
            if len(hits) >= limit:
                return hits
    return hits


_SQLITE_QUERY = f"""
SELECT s.session_id, x.rowid % {KEY_SHIFT}, x.role,
       snippet(entries_search, 0, '[', ']', '…', {_SNIPPET_WORDS})
FROM entries_search x JOIN sessions s ON s.session_key = x.rowid / {KEY_SHIFT}
WHERE entries_search MATCH ? {{only}}
ORDER BY s.updated_at DESC, x.rowid DESC LIMIT ?
"""
_SQLITE_ONLY = (
    f"AND x.rowid BETWEEN (SELECT session_key FROM sessions WHERE session_id = ?) * {KEY_SHIFT}"
    f" AND (SELECT session_key FROM sessions WHERE session_id = ?) * {KEY_SHIFT} + {KEY_SHIFT - 1}"
)


def _sqlite(path: Path, words: list[str], limit: int, session: str | None) -> list[SearchHit]:
    match = " ".join('"' + w.replace('"', '""') + '"' for w in words)
    params: tuple[Any, ...] = (match, session, session, limit) if session else (match, limit)
    sql = _SQLITE_QUERY.format(only=_SQLITE_ONLY if session else "")
    try:
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path} to search: {exc}") from exc
    try:
        rows = db.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            raise StoreError(f"{path} has no search index yet: {UPGRADE_HINT}") from exc
        raise StoreError(f"search failed: {exc}") from exc
    finally:
        db.close()
    return [SearchHit(str(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]


_POSTGRES_QUERY = """
SELECT t.session_id, t.seq, t.role,
       ts_headline('simple', t.body, q,
                   'StartSel=[, StopSel=], MaxWords=24, MinWords=8, MaxFragments=1')
FROM entry_texts t JOIN sessions s ON s.session_id = t.session_id,
     plainto_tsquery('simple', %s) q
WHERE t.doc @@ q {only}
ORDER BY s.updated_at DESC, t.seq DESC LIMIT %s
"""


async def _postgres(dsn: str, words: list[str], limit: int, session: str | None) -> list[SearchHit]:
    import psycopg

    sql = _POSTGRES_QUERY.format(only="AND t.session_id = %s" if session else "")
    query = " ".join(words)
    params: tuple[Any, ...] = (query, session, limit) if session else (query, limit)
    try:
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            cursor = await conn.execute(sql, params)
            rows = await cursor.fetchall()
    except psycopg.errors.UndefinedTable as exc:
        raise StoreError(f"the database has no search index yet: {UPGRADE_HINT}") from exc
    except psycopg.Error as exc:
        raise StoreError(f"search failed: {exc}") from exc
    return [SearchHit(str(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]


async def search_store(
    store: Store, text: str, *, limit: int = 20, session: str | None = None
) -> list[SearchHit]:
    """The messages of ``store`` holding every word of ``text``, newest first (module doc)."""
    if limit < 1:
        raise UsageError("a search returns at least one hit: limit must be 1 or more")
    words = _words(text)
    if not words:
        return []
    if isinstance(store, SQLiteStore):
        return await asyncio.to_thread(_sqlite, store.path, words, limit, session)
    dsn = getattr(store, "dsn", None)
    # Named, not imported: the PostgreSQL driver is an optional extra.
    if isinstance(dsn, str) and type(store).__name__ == "PostgresStore":
        return await _postgres(dsn, words, limit, session)
    return await _scan(store, words, limit, session)
