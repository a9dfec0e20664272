"""Listing sessions a page at a time: the store reads one page, a cursor says where it ends.

Sessions are listed most recently updated first (ties: newest created, then by id), as
``list_sessions`` orders them. A page ends at a row's key ``(updated_at, created_at, id)``; the
cursor is that key, opaque to clients (URL-safe base64 of JSON), and the next page is the rows
after it (keyset paging: a session added meanwhile never shifts a page, as an offset would).

A store with the ``list_page`` fast path (SQLite, PostgreSQL) reads just the page's rows; any
other store lists every session and the page is cut here. A caller who sees only its own
sessions (a token's owner) gets pages of its own: rows of others are skipped, reading on until
the page is full or the store has no more.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable

from ..errors import UsageError
from ..store.base import SessionInfo, Store
from ..store.fast import fast_paths

__all__ = ["Key", "decode_cursor", "encode_cursor", "session_page"]

Key = tuple[str, str, str]


def _key(info: SessionInfo) -> Key:
    return (info.updated_at, info.created_at, info.id)


def encode_cursor(info: SessionInfo) -> str:
    """The cursor of the page that ends with ``info``."""
    raw = json.dumps(list(_key(info)), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Key:
    """The key a cursor names (``UsageError`` for one this server did not make)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError):
        value = None
    if not (isinstance(value, list) and len(value) == 3 and all(isinstance(v, str) for v in value)):
        raise UsageError("'cursor' is not one this server gave (use next_cursor as it came)")
    return (value[0], value[1], value[2])


def _after(infos: list[SessionInfo], after: Key | None) -> list[SessionInfo]:
    """``infos`` (in listing order) after the row of key ``after``."""
    if after is None:
        return infos
    updated, created, session_id = after

    def later(info: SessionInfo) -> bool:
        if info.updated_at != updated:
            return info.updated_at < updated
        if info.created_at != created:
            return info.created_at < created
        return info.id > session_id

    return [info for info in infos if later(info)]


async def session_page(
    store: Store, limit: int, after: Key | None, keep: Callable[[str], bool] | None = None
) -> tuple[list[SessionInfo], str | None]:
    """Up to ``limit`` sessions after ``after`` that ``keep`` keeps, and the next cursor."""
    fast = fast_paths(store).list_page
    if fast is None:
        listed = _after(await store.list_sessions(), after)
        found = [info for info in listed if keep is None or keep(info.id)]
        page = found[:limit]
        more = len(found) > limit
    else:
        page, more = [], False
        while True:
            # One row beyond the page says whether another page follows.
            want = limit + 1 - len(page)
            rows = await fast(want, after)
            page.extend(info for info in rows if keep is None or keep(info.id))
            if len(page) > limit:
                page, more = page[:limit], True
                break
            if len(rows) < want:
                break  # the store has no more
            after = _key(rows[-1])
    return page, (encode_cursor(page[-1]) if more and page else None)
