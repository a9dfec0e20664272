"""A DBOS system database on SQLite whose queue claims hold across worker processes.

DBOS claims a queue's next turns in one transaction: it counts the turns running (the queue's
cap, a session's partition), reads the next ones, and marks them running. On SQLite, Python's
driver begins a transaction only at the first write, so the counts and the read run before
the write lock is taken: two workers can both count a partition free and start two turns of
one session, or both count a tenant's cap free and exceed it (issue 38). The engine made here
begins every transaction with ``BEGIN IMMEDIATE``, so a claim reads and writes under SQLite's
write lock, one process at a time. It costs reads their concurrency, which a SQLite system
database (one machine, a few workers) can spare.

A session's turn order does not rest on this: the turn workflow checks it itself
(``agentsession.durable.dbos``). This keeps DBOS's own limits exact on SQLite.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ..errors import UsageError

__all__ = ["sqlite_system_database"]

#: Statements that open, end or configure a transaction themselves, or must run outside one.
_OWN_TRANSACTION = ("BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA")


def sqlite_system_database(url: str, *, busy_timeout_ms: int = 30_000) -> sa.Engine:
    """An engine for ``DBOS(config={"system_database_engine": ...})`` on a SQLite file.

    Args:
        url: The system database's SQLAlchemy URL (``sqlite:///path``).
        busy_timeout_ms: How long a process waits for another's write lock.

    Raises:
        UsageError: ``url`` is not a SQLite URL.
    """
    engine = sa.create_engine(url)
    if engine.dialect.name != "sqlite":
        engine.dispose()
        raise UsageError(f"not a SQLite URL: {url!r}")

    def connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions begin in ``begin`` below
        dbapi_connection.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        dbapi_connection.execute("PRAGMA foreign_keys=ON")

    def begin(
        conn: sa.Connection, _cursor: Any, statement: str, *_args: Any, **_kwargs: Any
    ) -> None:
        raw = conn.connection.dbapi_connection
        if raw is None or raw.in_transaction:
            return
        if not statement.lstrip().upper().startswith(_OWN_TRANSACTION):
            raw.execute("BEGIN IMMEDIATE")

    sa.event.listen(engine, "connect", connect)
    sa.event.listen(engine, "before_cursor_execute", begin)
    return engine
