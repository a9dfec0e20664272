"""The full-text index of the messages, for both databases: kept by triggers, read by ``search``.

The index holds the text of user, assistant (its text, and each tool call's name and
arguments) and tool-result entries, at most ``INDEXED_CHARS`` characters of each. Triggers on
``entries`` keep it in the inserting transaction, so the append code knows nothing of it;
deleting entries (a deleted session) removes their rows. Migration 6 creates it and indexes what
a database already holds.

- SQLite: a trigger records each new message's key in ``search_queue`` (two integers: an
  FTS5 insert at every commit would cost the append about half its CPU again, a queue row a few
  percent); a search first moves the queue into the contentless FTS5 table ``entries_search``
  (tokenizer ``unicode61``, diacritics folded, ``detail=none``: the words, not their positions)
  in one write transaction, and reads what it could not move (a read-only file, a busy writer)
  straight from the log. So an entry is findable exactly when it is committed either way. The
  FTS rowid is ``session_key * 2**32 + seq``; contentless rows are deleted by giving FTS5 their
  text again, computed from the deleted row by the same expression. A row whose data is not
  valid JSON is never indexed (no trigger fails an append).
- PostgreSQL: the same queue (``search_queue``, filled by a statement-level trigger from the
  inserted rows: computing the ``tsvector`` and updating GIN in the append cost it about 40% of
  its time) and a table ``entry_texts`` (keyed by session id and seq, like every table, so it
  shards with the rest) with a generated ``tsvector`` (configuration ``simple``: no language's
  stemming) under a GIN index. A search moves the queue in one statement (``DELETE …
  RETURNING`` into the index); data that ``jsonb`` refuses (a NUL or lone surrogate escape, a
  row that is not JSON) is left out: only when the fast move fails is it done again row by row,
  each refused row caught.
"""

from __future__ import annotations

__all__ = [
    "DRAIN_BATCH",
    "INDEXED_CHARS",
    "KEY_SHIFT",
    "POSTGRES_DRAIN",
    "POSTGRES_DRAIN_CAREFULLY",
    "POSTGRES_SEARCH",
    "SQLITE_DRAIN",
    "SQLITE_SEARCH",
]

#: The most characters of one entry the index holds.
INDEXED_CHARS = 100_000
#: A SQLite index row's rowid is ``session_key * KEY_SHIFT + seq``.
KEY_SHIFT = 1 << 32


def _sqlite_text(data: str) -> str:
    """SQLite: the searchable text of a user, assistant or tool-result row's ``data``.

    Only objects are looked into (``json_extract`` of a bare string would raise).
    """
    return f"""substr(
        coalesce(CASE json_type({data}, '$.content')
            WHEN 'text' THEN json_extract({data}, '$.content')
            WHEN 'array' THEN (SELECT group_concat(json_extract(value, '$.text'), ' ')
                               FROM json_each({data}, '$.content') WHERE type = 'object')
        END, '')
        || coalesce((SELECT ' ' || group_concat(
                        json_extract(value, '$.name') || ' ' || json_extract(value, '$.arguments'),
                        ' ')
                     FROM json_each({data}, '$.tool_calls') WHERE type = 'object'), ''),
        1, {INDEXED_CHARS})"""


_KEY = f"session_key * {KEY_SHIFT} + seq"

#: Queued entries moved into the index per write transaction (a writer waits at most one).
DRAIN_BATCH = 5_000

#: Move one batch of queued entries into the index (a search repeats it, one write transaction
#: each, until a batch comes out short).
SQLITE_DRAIN: tuple[str, ...] = (
    "CREATE TEMP TABLE IF NOT EXISTS search_batch (session_key INTEGER, seq INTEGER)",
    "DELETE FROM temp.search_batch",
    f"INSERT INTO temp.search_batch SELECT session_key, seq FROM search_queue LIMIT {DRAIN_BATCH}",
    f"""
    INSERT INTO entries_search (rowid, text)
    SELECT key, t FROM (
        SELECT e.session_key * {KEY_SHIFT} + e.seq AS key, {_sqlite_text("e.data")} AS t
        FROM temp.search_batch q
        JOIN entries e ON e.session_key = q.session_key AND e.seq = q.seq
        WHERE e.kind IN (1, 2, 3) AND json_valid(e.data)
    ) WHERE t <> ''
    """,
    """
    DELETE FROM search_queue
    WHERE (session_key, seq) IN (SELECT session_key, seq FROM temp.search_batch)
    """,
)

SQLITE_SEARCH: tuple[str, ...] = (
    """
    CREATE VIRTUAL TABLE entries_search USING fts5(
        text, content = '', detail = none, tokenize = 'unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE TABLE search_queue (
        session_key INTEGER NOT NULL,
        seq         INTEGER NOT NULL,
        PRIMARY KEY (session_key, seq)
    ) WITHOUT ROWID
    """,
    f"""
    INSERT INTO entries_search (rowid, text)
    SELECT key, t FROM (
        SELECT {_KEY} AS key, {_sqlite_text("data")} AS t
        FROM entries WHERE kind IN (1, 2, 3) AND json_valid(data)
    ) WHERE t <> ''
    """,
    """
    CREATE TRIGGER entries_searched AFTER INSERT ON entries
    WHEN new.kind IN (1, 2, 3) BEGIN
        INSERT OR IGNORE INTO search_queue VALUES (new.session_key, new.seq);
    END
    """,
    # An indexed row (not queued) leaves the contentless index by its own text, given again.
    f"""
    CREATE TRIGGER entries_unsearched AFTER DELETE ON entries
    WHEN old.kind IN (1, 2, 3) BEGIN
        INSERT INTO entries_search (entries_search, rowid, text)
        SELECT 'delete', old.session_key * {KEY_SHIFT} + old.seq, t
        FROM (SELECT CASE WHEN json_valid(old.data) THEN {_sqlite_text("old.data")} END AS t)
        WHERE t <> '' AND NOT EXISTS (
            SELECT 1 FROM search_queue WHERE session_key = old.session_key AND seq = old.seq
        );
        DELETE FROM search_queue WHERE session_key = old.session_key AND seq = old.seq;
    END
    """,
)

POSTGRES_SEARCH: tuple[str, ...] = (
    """
    CREATE TABLE entry_texts (
        session_id TEXT NOT NULL,
        seq        BIGINT NOT NULL,
        role       TEXT NOT NULL,
        body       TEXT NOT NULL,
        doc        tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED,
        PRIMARY KEY (session_id, seq)
    )
    """,
    "CREATE INDEX entry_texts_doc ON entry_texts USING gin (doc)",
    f"""
    CREATE FUNCTION entry_search_text(data TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE WHEN data ~ '\\\\u(0000|[dD][89a-fA-F])' THEN '' ELSE (
            SELECT left(
                coalesce(CASE jsonb_typeof(d -> 'content')
                    WHEN 'string' THEN d ->> 'content'
                    WHEN 'array' THEN (SELECT string_agg(p ->> 'text', ' ')
                                       FROM jsonb_array_elements(d -> 'content') p)
                END, '')
                || coalesce((SELECT ' ' || string_agg(
                                (c ->> 'name') || ' ' || coalesce(c -> 'arguments', '{{}}')::text,
                                ' ')
                             FROM jsonb_array_elements(CASE jsonb_typeof(d -> 'tool_calls')
                                 WHEN 'array' THEN d -> 'tool_calls' ELSE '[]'::jsonb END) c),
                            ''),
                {INDEXED_CHARS})
            FROM (SELECT data::jsonb AS d) j
        ) END
    $$
    """,
    # The same, for a row ``jsonb`` refuses anyway (written behind the store's back): ''.
    """
    CREATE FUNCTION entry_search_text_or_none(data TEXT) RETURNS TEXT LANGUAGE plpgsql AS $$
    BEGIN
        RETURN entry_search_text(data);
    EXCEPTION WHEN others THEN
        RETURN '';
    END
    $$
    """,
    """
    CREATE TABLE search_queue (
        session_id TEXT NOT NULL,
        seq        BIGINT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )
    """,
    # No insert may commit between the backfill's snapshot and the trigger (see migration 5).
    "LOCK TABLE entries IN SHARE ROW EXCLUSIVE MODE",
    """
    INSERT INTO entry_texts (session_id, seq, role, body)
    SELECT session_id, seq, role, body FROM (
        SELECT session_id, seq,
               CASE kind WHEN 'user' THEN 'user' WHEN 'assistant' THEN 'assistant'
                         ELSE 'tool' END AS role,
               entry_search_text_or_none(data) AS body
        FROM entries WHERE kind IN ('user', 'assistant', 'tool_result')
    ) x WHERE body <> ''
    """,
    """
    CREATE FUNCTION entries_queue_texts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO search_queue (session_id, seq)
        SELECT session_id, seq FROM added WHERE kind IN ('user', 'assistant', 'tool_result');
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER entries_searched AFTER INSERT ON entries
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION entries_queue_texts()
    """,
    """
    CREATE FUNCTION entries_unindex_texts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM entry_texts t USING removed r
        WHERE t.session_id = r.session_id AND t.seq = r.seq;
        DELETE FROM search_queue q USING removed r
        WHERE q.session_id = r.session_id AND q.seq = r.seq;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER entries_unsearched AFTER DELETE ON entries
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT
    EXECUTE FUNCTION entries_unindex_texts()
    """,
)

_POSTGRES_MOVE = """
WITH moved AS (DELETE FROM search_queue RETURNING session_id, seq)
INSERT INTO entry_texts (session_id, seq, role, body)
SELECT session_id, seq, role, body FROM (
    SELECT e.session_id, e.seq,
           CASE e.kind WHEN 'user' THEN 'user' WHEN 'assistant' THEN 'assistant'
                       ELSE 'tool' END AS role,
           {function}(e.data) AS body
    FROM moved m JOIN entries e ON e.session_id = m.session_id AND e.seq = m.seq
) x WHERE body <> ''
ON CONFLICT (session_id, seq) DO NOTHING
"""
#: Move the queued entries into the index, all at once (a search runs it in a transaction of
#: its own; concurrent searches wait on the queue rows' locks and find them gone).
POSTGRES_DRAIN = _POSTGRES_MOVE.format(function="entry_search_text")
#: The same, each row ``jsonb`` refuses left out (when the fast form failed).
POSTGRES_DRAIN_CAREFULLY = _POSTGRES_MOVE.format(function="entry_search_text_or_none")
