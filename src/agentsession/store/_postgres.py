"""Connecting the PostgreSQL store: describing a server safely, migrating its schema; kept texts.

Migrations run on the store's blocking connection (``_postgres_now``) while the pool opens,
each in one transaction under a transaction-scoped advisory lock, so processes that start
together migrate once and a crash mid-migration leaves the previous version. A read-only
store only checks the version.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool

from ..errors import StoreError
from ..log import now
from ._sql import INSERT_TEXT, READ_ENTRIES, SELECT_TEXTS, postgres
from .base import Batch, refs_of
from .migrations import LATEST, MIGRATIONS, READABLE_FROM, UPGRADE_HINT, create_migrations_table

__all__ = [
    "LAST_ENTRY",
    "check_version",
    "describe",
    "insert_entries",
    "keep_texts",
    "kept_texts",
    "migrate",
    "new_pool",
    "range_query",
    "read_only_session",
]

#: Any constant shared by every agentsession process: the key of the migration lock.
_MIGRATION_LOCK = 0x6167_7365_7373


_MAX_SEQ = 2**63 - 1

#: The newest entry of some kinds in one statement (one snapshot): a descent of the kind index
#: per wanted kind, then the row by its key.
LAST_ENTRY = (
    "SELECT e.seq, e.kind, e.version, e.data FROM entries e"
    " WHERE e.session_id = %(s)s AND e.seq = ("
    "  SELECT max((SELECT max(seq) FROM entries"
    "              WHERE session_id = %(s)s AND kind = k.kind))"
    "  FROM unnest(%(k)s::text[]) AS k(kind))"
)


def range_query(
    session_id: str, start: int, end: int | None, kinds: list[str] | None
) -> tuple[str, list[Any]]:
    """The statement and parameters reading entries ``start <= seq < end`` of ``kinds``."""
    query = READ_ENTRIES
    params: list[Any] = [session_id, min(max(start, 0), _MAX_SEQ)]
    if end is not None:
        query += " AND seq < ?"
        params.append(min(max(end, 0), _MAX_SEQ))
    if kinds is not None:
        query += " AND kind = ANY(?)"
        params.append(kinds)
    return postgres(query + " ORDER BY seq"), params


def describe(dsn: str) -> str:
    """How errors name the server: host, port, database and user, never the password."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        # libpq quotes the part it could not read, up to the whole URL with its password.
        reason = re.sub(r'"[^"]*"', lambda m: '"…"' if m[0][1:-1] in dsn else m[0], str(exc))
        raise StoreError(f"invalid PostgreSQL connection string: {reason}") from exc
    shown = " ".join(f"{k}={params[k]}" for k in ("host", "port", "dbname", "user") if k in params)
    return f"PostgreSQL store ({shown or 'defaults'})"


async def read_only_session(conn: psycopg.AsyncConnection[Any]) -> None:
    """Make every transaction of ``conn`` read-only (a pool's configure callback)."""
    await conn.execute("SET default_transaction_read_only = on")


def new_pool(
    dsn: str, size: int, timeout: float, read_only: bool
) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
    """The store's pool, not yet open: autocommit connections, each checked when taken."""
    return AsyncConnectionPool(
        dsn,
        # Nothing connects until a write, or reads that overlap, need a connection.
        min_size=0,
        max_size=size,
        kwargs={"autocommit": True},
        configure=read_only_session if read_only else None,
        check=AsyncConnectionPool.check_connection,
        timeout=timeout,
        open=False,
        name="agentsession",
    )


def migrate(conn: psycopg.Connection[Any], name: str, read_only: bool) -> int:
    """Bring the schema to ``LATEST`` on ``conn`` (or, read-only, check that it is there).

    Returns the schema version now in place (a read-only store's may be older than ``LATEST``).
    """
    if read_only:
        current = _schema_version(conn, name)
        if current < READABLE_FROM:
            raise StoreError(
                f"{name} has schema version {current}, older than this agentsession reads"
                f" ({READABLE_FROM}); {UPGRADE_HINT}"
            )
        return current
    # An application role may lack CREATE on the schema (migrations run by another role):
    # a current schema needs no DDL at all, not even an IF NOT EXISTS one.
    if _schema_version(conn, name) >= LATEST:
        return LATEST
    for migration in MIGRATIONS:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(create_migrations_table("postgres"))
            if _schema_version(conn, name) >= migration.version:
                continue
            for statement in migration.sql("postgres"):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, description, applied_at)"
                " VALUES (%s, %s, %s)",
                (migration.version, migration.description, now()),
            )
    return LATEST


def _schema_version(conn: psycopg.Connection[Any], name: str) -> int:
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        # Outside a transaction (autocommit): one statement, a missing table its error.
        try:
            row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
        except pg_errors.UndefinedTable:
            return 0
    else:  # inside the migration's transaction, where an error would abort it
        found = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        if found is None or not found[0]:
            return 0
        row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    return check_version(int(row[0]) if row is not None else 0, name)


def check_version(version: int, name: str) -> int:
    """``version`` when this agentsession knows it; a ``StoreError`` for a newer schema."""
    if version > LATEST:
        raise StoreError(
            f"{name} has schema version {version}, newer than this agentsession"
            f" knows ({LATEST}); upgrade agentsession"
        )
    return version


#: From this many entries on, an append streams its rows with COPY: several times faster than
#: one INSERT per row for an imported or forked log, in the same transaction.
_COPY_FROM = 64
_INSERT_ROWS = (
    "INSERT INTO entries (session_id, seq, kind, version, data, created_at)"
    " SELECT %s, %s::bigint + r.n - 1, r.kind, r.version, r.data, %s"
    " FROM unnest(%s::text[], %s::integer[], %s::text[])"
    " WITH ORDINALITY AS r(kind, version, data, n)"
)
_COPY_IN = "COPY entries (session_id, seq, kind, version, data, created_at) FROM STDIN"


async def insert_entries(
    conn: psycopg.AsyncConnection[Any], session_id: str, first: int, batch: Batch
) -> None:
    """Write ``batch``'s rows at seqs ``first``, ``first + 1``, … and the texts they refer to."""
    if not batch.rows:
        return
    stamp = now()
    if len(batch.rows) < _COPY_FROM:
        # One statement for the batch, not one per row: the schema-5 trigger that keeps
        # ``kind_counts`` then runs once per append.
        kinds, versions, data = ([row[i] for row in batch.rows] for i in range(3))
        await conn.execute(_INSERT_ROWS, (session_id, first, stamp, kinds, versions, data))
    else:
        async with conn.cursor() as cursor, cursor.copy(_COPY_IN) as copy:
            for i, row in enumerate(batch.rows):
                await copy.write_row((session_id, first + i, *row, stamp))
    await keep_texts(conn, session_id, batch.texts)


async def keep_texts(
    conn: psycopg.AsyncConnection[Any], session_id: str, texts: dict[str, str]
) -> None:
    """Keep the baseline texts a batch's epochs refer to (those already kept stay)."""
    if texts:
        async with conn.cursor() as cursor:
            await cursor.executemany(
                postgres(INSERT_TEXT), [(session_id, ref, text) for ref, text in texts.items()]
            )


async def kept_texts(
    conn: psycopg.AsyncConnection[Any], session_id: str, rows: list[Any]
) -> dict[str, str] | None:
    """The kept texts stored ``(seq, kind, version, data)`` rows refer to, by reference.

    A text is committed with (or before) the first entry that refers to it and never changes,
    so this second statement finds every text of the rows the first one read.
    """
    refs = refs_of(rows)
    if not refs:
        return None
    cursor = await conn.execute(postgres(SELECT_TEXTS) + " = ANY(%s)", (session_id, refs))
    return {str(ref): str(text) for ref, text in await cursor.fetchall()}
