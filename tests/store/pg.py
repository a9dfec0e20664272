"""PostgreSQL for tests: the throwaway server ``make test`` starts, one schema per test.

``.ci/with-postgres`` starts the server and puts its address in ``AGENTSESSION_TEST_PG_DSN``;
when no server could be installed it says why in ``AGENTSESSION_TEST_PG_SKIP`` and the tests
skip with that reason. Each test gets a schema of its own (``search_path`` in the DSN), so
tests never see each other's tables and the server is started once per run.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

ENV_DSN = "AGENTSESSION_TEST_PG_DSN"
ENV_SKIP = "AGENTSESSION_TEST_PG_SKIP"


def unavailable() -> str | None:
    """Why the PostgreSQL tests cannot run, or ``None`` when a server is there."""
    reason = os.environ.get(ENV_SKIP)
    if reason:
        return f"PostgreSQL could not be provided: {reason}"
    if not os.environ.get(ENV_DSN):
        return (
            f"no PostgreSQL server: {ENV_DSN} is not set (`make test` starts one; or run"
            " `.ci/with-postgres .venv/bin/pytest ...`)"
        )
    return None


def server_dsn() -> str:
    """The test server's DSN; skips the test loudly when there is none."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(f"POSTGRESQL TESTS SKIPPED - {reason}")
    return os.environ[ENV_DSN]


def run(dsn: str, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
    """One statement on a separate connection, as another program would run it."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description is not None else []


@contextlib.contextmanager
def schema(dsn: str) -> Iterator[str]:
    """A fresh, empty schema; yields a DSN whose connections use it. Dropped afterwards."""
    from psycopg.conninfo import make_conninfo

    name = f"t_{uuid.uuid4().hex[:16]}"
    run(dsn, f'CREATE SCHEMA "{name}"')
    try:
        yield make_conninfo(dsn, options=f"-c search_path={name}", application_name=name)
    finally:
        # Sessions of a store that was not closed (a failing test) must not block the drop.
        run(
            dsn,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE pid <> pg_backend_pid() AND application_name = %s",
            (name,),
        )
        run(dsn, f'DROP SCHEMA "{name}" CASCADE')


def make_schema(dsn: str, version: int) -> None:
    """A database as schema ``version`` left it, migrated by the statements of that release."""
    import psycopg

    from agentsession.log import now
    from agentsession.store.migrations import MIGRATIONS, create_migrations_table

    run(dsn, create_migrations_table("postgres"))
    for migration in MIGRATIONS[:version]:
        with psycopg.connect(dsn) as conn, conn.transaction():  # one each, as a store runs it
            for statement in migration.sql("postgres"):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (%s, %s, %s)",
                (migration.version, migration.description, now()),
            )
