"""Schema migrations of the database stores: one list, two SQL dialects.

Each migration has a version (1, 2, …, never reused or edited once released), a description and
the statements that take the schema from the previous version to this one. A statement is plain
SQL both SQLite and PostgreSQL accept, or a ``Dialects`` pair where they differ. A store applies
the missing migrations in order at open, each in its own transaction together with its row in
``schema_migrations``, so a crash mid-migration leaves the previous version intact. A database
whose recorded version is newer than ``LATEST`` was written by a newer agentsession and is refused.
A read-only store never migrates: it reads a schema from ``READABLE_FROM`` on as it is (later
migrations only add what newer rows refer to) and refuses an older one.

Every table is keyed by ``session_id`` first, so the same layout shards by session (e.g. Citus,
distributed by ``session_id``; see docs/storage.md). SQLite, one file on one machine, keys its
log by an integer session key instead (migration 4), which makes the file smaller.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .._frozen import frozen
from ._search_sql import POSTGRES_SEARCH, SQLITE_SEARCH
from ._sqlite_sql import KIND_CODES

__all__ = [
    "COUNTED_FROM",
    "LATEST",
    "LOG_CHANNEL",
    "MIGRATIONS",
    "READABLE_FROM",
    "SQLITE_READABLE_FROM",
    "UPGRADE_HINT",
    "Dialect",
    "Dialects",
    "Migration",
    "create_migrations_table",
]

Dialect: TypeAlias = Literal["sqlite", "postgres"]


@frozen
class Dialects:
    """One statement spelled for each database."""

    sqlite: str
    postgres: str


@frozen
class Migration:
    """One schema step: ``statements`` run in order inside one transaction."""

    version: int
    description: str
    statements: tuple[str | Dialects, ...]

    def sql(self, dialect: Dialect) -> tuple[str, ...]:
        """The statements as ``dialect`` spells them (an empty spelling: nothing to run there)."""
        spelled = (s if isinstance(s, str) else getattr(s, dialect) for s in self.statements)
        return tuple(s for s in spelled if s)


def create_migrations_table(dialect: Dialect) -> str:
    """``schema_migrations`` itself, created before the first step can be recorded in it."""
    del dialect  # the same in both; kept as a parameter so a future difference has a place
    return """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at  TEXT NOT NULL
)
"""


#: The PostgreSQL channel migration 7's trigger notifies with a session's id on every commit
#: of its entries (readers ``LISTEN`` on it). Never renamed: old triggers keep this name.
LOG_CHANNEL = "agentsession_log"

#: What makes a session's row count an entry as a user-transcript message (``TRANSCRIPT_KINDS``).
_MESSAGE_KINDS = "('user', 'assistant', 'tool_result')"


def _per_insert_statement(trigger: str, function: str, *body: str) -> tuple[Dialects, ...]:
    """PostgreSQL only: a trigger running ``body`` once per statement that inserts entries.

    The body sees that statement's new rows as the table ``added``. The text of each statement
    is the one the migrations always ran (a database keeps a function's source as written).
    """
    lines = "".join(f"                    {line}\n" for line in body)
    return (
        Dialects(
            sqlite="",
            postgres=f"""
                CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
{lines}                    RETURN NULL;
                END
                $$
                """,
        ),
        Dialects(
            sqlite="",
            postgres=f"""
                CREATE TRIGGER {trigger} AFTER INSERT ON entries
                REFERENCING NEW TABLE AS added FOR EACH STATEMENT
                EXECUTE FUNCTION {function}()
                """,
        ),
    )


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
            # SQLite: WITHOUT ROWID keeps the rows in the (session_id, seq) B-tree itself, so a
            # range read is one index walk and max(seq) is one descent. PostgreSQL reaches the
            # same through the primary key index.
            Dialects(
                sqlite="""
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
                postgres="""
                CREATE TABLE entries (
                    session_id TEXT NOT NULL REFERENCES sessions (session_id),
                    seq        BIGINT NOT NULL,
                    kind       TEXT NOT NULL,
                    version    INTEGER NOT NULL,
                    data       TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    PRIMARY KEY (session_id, seq)
                )
                """,
            ),
            # "the newest entry of kind K" is the last key of the (session_id, K) prefix.
            "CREATE INDEX entries_kind ON entries (session_id, kind, seq)",
            "CREATE INDEX sessions_updated ON sessions (updated_at)",
        ),
    ),
    Migration(
        2,
        "next seq and listing counters on the session row, legacy file version, leases",
        (
            # The next seq as a column: the append's conflict check locks one session row, and a
            # listing reads rows only, with no per-session subquery (which sharding dislikes).
            Dialects(
                sqlite="ALTER TABLE sessions ADD COLUMN next_seq INTEGER NOT NULL DEFAULT 0",
                postgres="ALTER TABLE sessions ADD COLUMN next_seq BIGINT NOT NULL DEFAULT 0",
            ),
            """
            UPDATE sessions SET next_seq = coalesce(
                (SELECT max(e.seq) + 1 FROM entries e WHERE e.session_id = sessions.session_id), 0
            )
            """,
            "ALTER TABLE sessions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE sessions ADD COLUMN last_model TEXT",
            "ALTER TABLE sessions ADD COLUMN file_version INTEGER",
            f"""
            UPDATE sessions SET message_count = (
                SELECT count(*) FROM entries e
                WHERE e.session_id = sessions.session_id AND e.kind IN {_MESSAGE_KINDS}
            )
            """,
            # A damaged row must not block the migration: SQLite skips what is not JSON.
            # PostgreSQL databases start at this code, so they hold no version-1 rows.
            Dialects(
                sqlite="""
                UPDATE sessions SET last_model = (
                    SELECT json_extract(e.data, '$.model') FROM entries e
                    WHERE e.session_id = sessions.session_id AND e.kind = 'assistant'
                      AND json_valid(e.data) AND json_extract(e.data, '$.model') <> ''
                    ORDER BY e.seq DESC LIMIT 1
                )
                """,
                postgres="""
                UPDATE sessions SET last_model = (
                    SELECT e.data::jsonb ->> 'model' FROM entries e
                    WHERE e.session_id = sessions.session_id AND e.kind = 'assistant'
                      AND e.data::jsonb ->> 'model' <> ''
                    ORDER BY e.seq DESC LIMIT 1
                )
                """,
            ),
            # One row per session; expiry in seconds since the epoch by the database's clock.
            """
            CREATE TABLE leases (
                session_id TEXT PRIMARY KEY REFERENCES sessions (session_id),
                owner      TEXT NOT NULL,
                expires_at DOUBLE PRECISION NOT NULL
            )
            """,
        ),
    ),
    Migration(
        3,
        "baseline texts kept once per session, referred to by epochs",
        (
            # An epoch (version 4) names a long baseline text by its reference (log.texts);
            # the text is kept here once per session, whatever the number of epochs.
            Dialects(
                sqlite="""
                CREATE TABLE texts (
                    session_id TEXT NOT NULL REFERENCES sessions (session_id),
                    ref        TEXT NOT NULL,
                    text       TEXT NOT NULL,
                    PRIMARY KEY (session_id, ref)
                ) WITHOUT ROWID
                """,
                postgres="""
                CREATE TABLE texts (
                    session_id TEXT NOT NULL REFERENCES sessions (session_id),
                    ref        TEXT NOT NULL,
                    text       TEXT NOT NULL,
                    PRIMARY KEY (session_id, ref)
                )
                """,
            ),
        ),
    ),
    Migration(
        4,
        "SQLite: the log keyed by an integer session key, kinds as codes, no unread commit times",
        (
            # The text session id (32 characters) was repeated in every entry row and again in
            # every kind-index row: with a few hundred bytes per row, about a fifth of the file.
            # An integer key takes one to three bytes in both. The key is a column of its own
            # (a rowid alias could not be added to the existing table, and a plain rowid may
            # change at VACUUM). PostgreSQL keeps its layout (sharded by the text session id).
            Dialects(sqlite="ALTER TABLE sessions ADD COLUMN session_key INTEGER", postgres=""),
            Dialects(sqlite="UPDATE sessions SET session_key = rowid", postgres=""),
            Dialects(
                sqlite="CREATE UNIQUE INDEX sessions_key ON sessions (session_key)", postgres=""
            ),
            # Known kinds become their one-byte codes (``KIND_CODES``), in rows and index.
            Dialects(
                sqlite="CREATE TEMP TABLE temp_kind_codes (kind TEXT PRIMARY KEY, code INTEGER)",
                postgres="",
            ),
            Dialects(
                sqlite="INSERT INTO temp_kind_codes VALUES "
                + ", ".join(f"('{kind}', {code})" for kind, code in KIND_CODES.items()),
                postgres="",
            ),
            Dialects(
                sqlite="""
                CREATE TABLE entries_by_key (
                    session_key INTEGER NOT NULL REFERENCES sessions (session_key),
                    seq         INTEGER NOT NULL,
                    kind        NOT NULL,  -- no affinity: a code stays a number, a name text
                    version     INTEGER NOT NULL,
                    data        TEXT NOT NULL,
                    PRIMARY KEY (session_key, seq)
                ) WITHOUT ROWID
                """,
                postgres="",
            ),
            # The commit time of each row (32 bytes of ISO text) is left behind: nothing ever
            # read it, and every entry carries its own timestamps in its data.
            Dialects(
                sqlite="""
                INSERT INTO entries_by_key (session_key, seq, kind, version, data)
                SELECT s.session_key, e.seq, coalesce(c.code, e.kind), e.version, e.data
                FROM entries e JOIN sessions s ON s.session_id = e.session_id
                LEFT JOIN temp_kind_codes c ON c.kind = e.kind
                """,
                postgres="",
            ),
            Dialects(sqlite="DROP TABLE temp_kind_codes", postgres=""),
            Dialects(sqlite="DROP TABLE entries", postgres=""),
            Dialects(sqlite="ALTER TABLE entries_by_key RENAME TO entries", postgres=""),
            Dialects(
                sqlite="CREATE INDEX entries_kind ON entries (session_key, kind, seq)",
                postgres="",
            ),
            # How many entries of each kind a session holds, kept by the trigger below in the
            # inserting transaction: "how many user turns so far" at open is then one lookup,
            # not a count of the kind index (18 ms at a million items).
            Dialects(
                sqlite="""
                CREATE TABLE kind_counts (
                    session_key INTEGER NOT NULL,
                    kind        NOT NULL,
                    entries     INTEGER NOT NULL,
                    PRIMARY KEY (session_key, kind)
                ) WITHOUT ROWID
                """,
                postgres="",
            ),
            Dialects(
                sqlite="""
                INSERT INTO kind_counts (session_key, kind, entries)
                SELECT session_key, kind, count(*) FROM entries GROUP BY session_key, kind
                """,
                postgres="",
            ),
            Dialects(
                sqlite="""
                CREATE TRIGGER entries_counted AFTER INSERT ON entries BEGIN
                    INSERT INTO kind_counts (session_key, kind, entries)
                    VALUES (new.session_key, new.kind, 1)
                    ON CONFLICT (session_key, kind) DO UPDATE SET entries = entries + 1;
                END
                """,
                postgres="",
            ),
        ),
    ),
    Migration(
        5,
        "PostgreSQL: entries counted per session and kind, kept by a trigger",
        (
            # SQLite's ``kind_counts`` (migration 4) for PostgreSQL, keyed by the text session id
            # like every table here (so it shards with the rest): "how many user turns so far"
            # at open is one lookup instead of an index-only count (50 ms at a million items).
            # One row per session and kind: sessions never contend, and the writers of one
            # session are already queued on its row lock.
            Dialects(
                sqlite="",
                postgres="""
                CREATE TABLE kind_counts (
                    session_id TEXT NOT NULL REFERENCES sessions (session_id),
                    kind       TEXT NOT NULL,
                    entries    BIGINT NOT NULL,
                    PRIMARY KEY (session_id, kind)
                )
                """,
            ),
            # No insert may commit between the backfill's snapshot and the trigger (a process
            # still running the previous version may be appending): this lock waits for them
            # and holds new ones back until the migration commits.
            Dialects(sqlite="", postgres="LOCK TABLE entries IN SHARE ROW EXCLUSIVE MODE"),
            Dialects(
                sqlite="",
                postgres="""
                INSERT INTO kind_counts (session_id, kind, entries)
                SELECT session_id, kind, count(*) FROM entries GROUP BY session_id, kind
                """,
            ),
            # Per statement, over the statement's new rows: a COPY of 20,000 entries updates
            # each counter once, not 20,000 times (each update of a row leaves a version behind
            # until the transaction ends).
            *_per_insert_statement(
                "entries_counted",
                "entries_count_kinds",
                "INSERT INTO kind_counts AS c (session_id, kind, entries)",
                "SELECT session_id, kind, count(*) FROM added GROUP BY session_id, kind",
                "ON CONFLICT (session_id, kind)",
                "DO UPDATE SET entries = c.entries + excluded.entries;",
            ),
        ),
    ),
    Migration(
        6,
        "the full-text index of user, assistant and tool text, kept by triggers (search)",
        # The statements and why they look so: ``store._search_sql``.
        (
            *(Dialects(sqlite=statement, postgres="") for statement in SQLITE_SEARCH),
            *(Dialects(sqlite="", postgres=statement) for statement in POSTGRES_SEARCH),
        ),
    ),
    Migration(
        7,
        "PostgreSQL: every commit of entries notifies the log's channel, whoever writes",
        (
            # A follower of a session (``serve``'s ``/events``) waits on LISTEN. When only the
            # server said NOTIFY, a library user, the CLI or a durable worker writing the same
            # session woke nobody. Here the database says it, inside the inserting transaction,
            # so it is heard at commit and never for a rolled-back write. Per statement: one
            # notification per session a statement wrote, not one per row (and PostgreSQL
            # folds repeats within a transaction).
            *_per_insert_statement(
                "entries_notified",
                "entries_notify",
                f"PERFORM pg_notify('{LOG_CHANNEL}', s.session_id)",
                "FROM (SELECT DISTINCT session_id FROM added) AS s;",
            ),
        ),
    ),
)

#: The newest schema version this code knows.
LATEST: int = MIGRATIONS[-1].version

#: The oldest schema a read-only store reads without migrating. Migration 3 only added
#: ``texts``, which no row of an older database refers to (an epoch that refers to a kept text
#: is written by code that migrated first), so after an upgrade of the package, listing and
#: reading work before anything has written. Raise it when a migration changes what reads need.
READABLE_FROM = 2

#: From this schema on PostgreSQL keeps ``kind_counts`` (a read-only store on an older schema
#: counts in the kind index instead).
COUNTED_FROM = 5

#: The same for SQLite, whose log layout migration 4 changed: its reads need schema 4.
SQLITE_READABLE_FROM = 4

#: What a read-only open of an older database says (a write migrates it).
UPGRADE_HINT = (
    "open it once for writing to upgrade it (`agentsession upgrade` on the command line, or"
    " open it without read_only)"
)
