"""Connecting the PostgreSQL store: describing a server safely, migrating its schema; kept texts.

Migrations run on a connection of their own before the pool opens, each in one transaction
under a transaction-scoped advisory lock, so processes that start together migrate once and a
crash mid-migration leaves the previous version. A read-only store only checks the version.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ..errors import StoreError
from ..log import now
from ._sql import INSERT_TEXT, SELECT_TEXTS, postgres
from .base import refs_of
from .migrations import LATEST, MIGRATIONS, READABLE_FROM, UPGRADE_HINT, create_migrations_table

__all__ = ["describe", "keep_texts", "kept_texts", "migrate", "read_only_session"]

#: Any constant shared by every agentsession process: the key of the migration lock.
_MIGRATION_LOCK = 0x6167_7365_7373


def describe(dsn: str) -> str:
    """How errors name the server: host, port, database and user, never the password."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise StoreError(f"invalid PostgreSQL connection string: {exc}") from exc
    shown = " ".join(f"{k}={params[k]}" for k in ("host", "port", "dbname", "user") if k in params)
    return f"PostgreSQL store ({shown or 'defaults'})"


async def read_only_session(conn: psycopg.AsyncConnection[Any]) -> None:
    """Make every transaction of ``conn`` read-only (a pool's configure callback)."""
    await conn.execute("SET default_transaction_read_only = on")


async def migrate(dsn: str, name: str, connect_seconds: float, read_only: bool) -> None:
    """Bring the schema to ``LATEST`` (or, read-only, check that it is there)."""
    conn = await psycopg.AsyncConnection.connect(
        dsn, autocommit=True, connect_timeout=max(1, int(connect_seconds))
    )
    async with conn:
        if read_only:
            current = await _schema_version(conn, name)
            if current < READABLE_FROM:
                raise StoreError(
                    f"{name} has schema version {current}, older than this agentsession reads"
                    f" ({READABLE_FROM}); {UPGRADE_HINT}"
                )
            return
        # An application role may lack CREATE on the schema (migrations run by another role):
        # a current schema needs no DDL at all, not even an IF NOT EXISTS one.
        if await _schema_version(conn, name) >= LATEST:
            return
        for migration in MIGRATIONS:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                await conn.execute(create_migrations_table("postgres"))
                if await _schema_version(conn, name) >= migration.version:
                    continue
                for statement in migration.sql("postgres"):
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, description, applied_at)"
                    " VALUES (%s, %s, %s)",
                    (migration.version, migration.description, now()),
                )


async def _schema_version(conn: psycopg.AsyncConnection[Any], name: str) -> int:
    found = await (
        await conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL")
    ).fetchone()
    if found is None or not found[0]:
        return 0
    row = await (
        await conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations")
    ).fetchone()
    version = int(row[0]) if row is not None else 0
    if version > LATEST:
        raise StoreError(
            f"{name} has schema version {version}, newer than this agentsession"
            f" knows ({LATEST}); upgrade agentsession"
        )
    return version


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
