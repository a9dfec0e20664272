"""Schema migrations of the SQLite store, recorded in the database itself.

Each migration has a version (1, 2, …, never reused or edited once released), a description and
the statements that take the schema from the previous version to this one. ``SQLiteStore`` applies
the missing ones in order at open, each in its own transaction together with its row in
``schema_migrations``, so a crash mid-migration leaves the previous version intact. A database
whose recorded version is newer than ``LATEST`` was written by a newer agentsession and is refused.

Every table is keyed by ``session_id`` first, so the same layout shards by session.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CREATE_MIGRATIONS_TABLE", "LATEST", "MIGRATIONS", "Migration"]


@dataclass(frozen=True)
class Migration:
    """One schema step: ``statements`` run in order inside one transaction."""

    version: int
    description: str
    statements: tuple[str, ...]


#: ``schema_migrations`` itself is created outside the numbered steps: it must exist before the
#: first step can be recorded in it.
CREATE_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at  TEXT NOT NULL
)
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions and their append-only entry logs",
        (
            """
            CREATE TABLE sessions (
                session_id  TEXT PRIMARY KEY,
                created_at  TEXT NOT NULL,
                updated_at  TEXT NOT NULL,
                title       TEXT,
                project_dir TEXT
            )
            """,
            # WITHOUT ROWID: the rows live in the (session_id, seq) B-tree itself, so a range
            # read is one index walk and max(seq) is one descent.
            """
            CREATE TABLE entries (
                session_id TEXT NOT NULL REFERENCES sessions (session_id),
                seq        INTEGER NOT NULL,
                kind       TEXT NOT NULL,
                version    INTEGER NOT NULL,
                data       TEXT NOT NULL,
                created_at TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            ) WITHOUT ROWID
            """,
            # "the newest entry of kind K" is the last key of the (session_id, K) prefix.
            "CREATE INDEX entries_kind ON entries (session_id, kind, seq)",
            "CREATE INDEX sessions_updated ON sessions (updated_at)",
        ),
    ),
)

#: The newest schema version this code knows.
LATEST: int = MIGRATIONS[-1].version
