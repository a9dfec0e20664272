"""Bytes of DBOS engine state per workflow, read from its system database.

Counts what DBOS keeps of a workflow: its inputs and output, every step's recorded output or
error, and its events (current and history). The schema is DBOS's own, read with SQLAlchemy (a
dependency of DBOS), on SQLite or PostgreSQL alike.
"""

from __future__ import annotations

from typing import Any

#: (table, columns) DBOS stores a workflow's data in, keyed by ``workflow_uuid``.
TABLES = (
    ("workflow_input", ("inputs",)),
    ("workflow_output", ("output", "error")),
    ("operation_outputs", ("output", "error")),
    ("workflow_events", ("value",)),
    ("workflow_events_history", ("value",)),
)


def engine_bytes(system_db: str, workflow_ids: list[str], schema: str = "dbos") -> dict[str, int]:
    """Workflow id → bytes DBOS stores for it."""
    import sqlalchemy as sa

    url = sa.make_url(system_db)
    if url.drivername.startswith("postgresql"):
        url = url.set(drivername="postgresql+psycopg")
        prefix = f'"{schema}".'
    else:
        prefix = ""
    engine = sa.create_engine(url)
    sizes = dict.fromkeys(workflow_ids, 0)
    try:
        with engine.connect() as conn:
            for table, columns in TABLES:
                total = " + ".join(f"coalesce(length({c}), 0)" for c in columns)
                grouped = f"FROM {prefix}{table} GROUP BY workflow_uuid"
                sql = sa.text(f"SELECT workflow_uuid, sum({total}) {grouped}")
                rows: Any = conn.execute(sql)
                for workflow_id, size in rows:
                    if workflow_id in sizes:
                        sizes[workflow_id] += int(size or 0)
    finally:
        engine.dispose()
    return sizes
