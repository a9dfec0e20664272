"""Search over every session: the same answers from SQLite's FTS5, PostgreSQL's tsvector and the
in-memory scan; kept in the append's transaction by triggers; existing databases indexed by
migration 6; deleted sessions leave the index with their log."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.log import AssistantEntry, ToolResultEntry, UserEntry, now
from agentsession.request import ImagePart, TextPart, ToolCall
from agentsession.store import PostgresStore, SessionInfo

from . import pg
from .test_pg_kind_counts import make_schema_4


def store_for(backend: str, tmp_path: Path, pg_dsn: str | None) -> ags.Store:
    if backend == "memory":
        return ags.MemoryStore()
    if backend == "sqlite":
        return ags.SQLiteStore(tmp_path / "s.db")
    assert pg_dsn is not None
    return PostgresStore(pg_dsn)


@pytest.fixture
def dsn(backend: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("pg_dsn") if backend == "postgres" else None


def info(session_id: str, stamp: str) -> SessionInfo:
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp, title=session_id)


async def fill(store: ags.Store) -> None:
    call = ToolCall("grep", {"pattern": "kettle"}, id="c1")
    await store.create_session(
        info("older", "2026-01-01T00:00:00+00:00"),
        [
            UserEntry("Where is the copper kettle?"),
            AssistantEntry("", (call,)),
            ToolResultEntry("c1", "grep", "kitchen.txt: the copper kettle sits on the stove"),
            AssistantEntry("On the stove, says kitchen.txt."),
        ],
    )
    await store.create_session(
        info("newer", "2026-02-01T00:00:00+00:00"),
        [
            UserEntry((TextPart("Is the kettle copper or steel?"), ImagePart("image/png", "aGk="))),
            AssistantEntry("Copper, like the old one."),
        ],
    )


async def test_search_finds_every_role_newest_first(
    backend: str, tmp_path: Path, dsn: str | None
) -> None:
    store = store_for(backend, tmp_path, dsn)
    try:
        await fill(store)
        async with ags.Runtime(store=store, project_dir=tmp_path) as runtime:
            hits = await runtime.search("copper kettle")
            assert [(h.session_id, h.seq, h.role) for h in hits] == [
                ("newer", 0, "user"),
                ("older", 2, "tool"),
                ("older", 0, "user"),
            ]
            assert all("[" in h.snippet and "]" in h.snippet for h in hits)
            # a tool call's name and arguments are the assistant's text
            (call,) = await runtime.search("grep kettle")
            assert (call.session_id, call.seq, call.role) == ("older", 1, "assistant")
            assert [h.seq for h in await runtime.search("copper", session="older")] == [2, 0]
            assert len(await runtime.search("copper", limit=1)) == 1
            # query syntax is text: quotes, operators and stars match nothing special
            assert await runtime.search('kettle" OR "zzz*') == []
            assert await runtime.search("   ") == []
            with pytest.raises(ags.UsageError):
                await runtime.search("copper", limit=0)
            await runtime.delete_session("older")
            assert {h.session_id for h in await runtime.search("copper")} == {"newer"}
    finally:
        await store.close()


async def test_an_append_and_a_fork_are_searchable_at_once(tmp_path: Path) -> None:
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=ags.ScriptedModel(["the walrus sleeps"]),
        project_dir=tmp_path,
    ) as runtime:
        session = await runtime.create_session()
        await session.prompt("what does the walrus do?")
        hits = await runtime.search("walrus")
        assert [h.role for h in hits] == ["assistant", "user"]  # the reply is newer
        fork = await session.fork()
        assert {h.session_id for h in await runtime.search("walrus")} == {session.id, fork.id}


def _drop_search(path: Path) -> None:
    """Make a current database look as schema 5 left it: no index, version 5."""
    db = sqlite3.connect(path)
    with db:
        db.execute("DROP TRIGGER entries_searched")
        db.execute("DROP TRIGGER entries_unsearched")
        db.execute("DROP TABLE entries_search")
        db.execute("DROP TABLE search_queue")
        db.execute("DELETE FROM schema_migrations WHERE version >= 6")
    db.close()


async def test_migration_6_indexes_an_existing_sqlite_database(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = ags.SQLiteStore(path)
    await fill(store)
    await store.close()
    _drop_search(path)
    reader = ags.SQLiteStore(path, read_only=True)
    with pytest.raises(ags.StoreError, match="no search index yet"):
        await ags.Runtime(store=reader, project_dir=tmp_path).search("kettle")
    await reader.close()
    store = ags.SQLiteStore(path)
    try:
        await store.list_sessions()  # a write-mode open migrates
        async with ags.Runtime(store=store, project_dir=tmp_path) as runtime:
            assert len(await runtime.search("copper kettle")) == 3
    finally:
        await store.close()


async def test_a_damaged_row_is_left_out_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = ags.SQLiteStore(path)
    await fill(store)
    await store.close()
    _drop_search(path)
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE entries SET data = '{not json' WHERE seq = 0")
    db.close()
    store = ags.SQLiteStore(path)
    try:
        await store.list_sessions()
        hits = await ags.Runtime(store=store, project_dir=tmp_path).search("copper")
        assert (("older", 0) not in {(h.session_id, h.seq) for h in hits}) and hits
    finally:
        await store.close()


@pytest.mark.postgres
async def test_migration_6_indexes_an_existing_postgres_database(pg_dsn: str) -> None:
    user = '{"content": "a teapot of pewter", "timestamp": ""}'
    nul = '{"content": "pewter \\u0000 with a NUL", "timestamp": ""}'
    make_schema_4(pg_dsn, {"a": [("user", user), ("user", nul), ("epoch", "{}")]})
    store = PostgresStore(pg_dsn)
    try:
        await store.list_sessions()  # migrates through 5 and 6
        hits = await ags.Runtime(store=store).search("pewter")
        # the row jsonb refuses is left out, and the migration went through
        assert [(h.session_id, h.seq, h.role) for h in hits] == [("a", 0, "user")]
        stamp = now()
        await store.create_session(info("b", stamp), [UserEntry("more pewter")])
        assert [h.session_id for h in await ags.Runtime(store=store).search("pewter")] == [
            "b",
            "a",
        ]
    finally:
        await store.close()
    assert pg.run(pg_dsn, "SELECT count(*) FROM entry_texts") == [(2,)]


def _indexed(path: Path, word: str) -> int:
    db = sqlite3.connect(path)
    try:
        found = db.execute(
            "SELECT count(*) FROM entries_search WHERE entries_search MATCH ?", (word,)
        )
        return int(found.fetchone()[0])
    finally:
        db.close()


async def test_sqlite_queues_appends_and_a_search_moves_them_into_the_index(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = ags.SQLiteStore(path)
    try:
        await fill(store)
        assert _indexed(path, "kettle") == 0  # queued by the trigger, not indexed yet
        reader = ags.SQLiteStore(path, read_only=True)
        try:
            # a read-only search writes nothing and still finds the queued entries
            hits = await ags.Runtime(store=reader, project_dir=tmp_path).search("kettle")
            assert len(hits) == 4 and _indexed(path, "kettle") == 0
        finally:
            await reader.close()
        runtime = ags.Runtime(store=store, project_dir=tmp_path)
        assert [(h.session_id, h.seq) for h in await runtime.search("kettle")] == [
            (h.session_id, h.seq) for h in hits
        ]
        assert _indexed(path, "kettle") == 4
        # a contentless row leaves the index when its entry goes (its text given again)
        await runtime.delete_session("newer")
        assert _indexed(path, "kettle") == 3 and _indexed(path, "steel") == 0
        assert {h.session_id for h in await runtime.search("kettle")} == {"older"}
    finally:
        await store.close()


@pytest.mark.postgres
async def test_postgres_queues_appends_and_a_search_moves_them(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    try:
        await fill(store)
        assert pg.run(pg_dsn, "SELECT count(*) FROM entry_texts") == [(0,)]
        reader = PostgresStore(pg_dsn, read_only=True)
        try:
            hits = await ags.Runtime(store=reader).search("kettle")
        finally:
            await reader.close()
        assert len(hits) == 4
        assert pg.run(pg_dsn, "SELECT count(*) FROM search_queue") == [(6,)]
        runtime = ags.Runtime(store=store)
        again = await runtime.search("kettle")
        assert [(h.session_id, h.seq, h.role) for h in again] == [
            (h.session_id, h.seq, h.role) for h in hits
        ]
        assert pg.run(pg_dsn, "SELECT count(*) FROM search_queue") == [(0,)]
        assert pg.run(pg_dsn, "SELECT count(*) FROM entry_texts") == [(6,)]
        await runtime.delete_session("newer")
        assert pg.run(pg_dsn, "SELECT count(*) FROM entry_texts") == [(4,)]
    finally:
        await store.close()


@pytest.mark.postgres
async def test_postgres_vacuums_the_queue_and_analyzes_after_a_large_drain(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = "SELECT pg_relation_size('search_queue')"
    tuples = "SELECT reltuples::int FROM pg_class WHERE oid = 'entry_texts'::regclass"
    # Whether VACUUM gives the pages back depends on every other transaction in the database
    # (the tests share one server): what the package controls is that it ran, so count runs.
    vacuums = "SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'search_queue'::regclass"
    store = PostgresStore(pg_dsn)
    try:
        await fill(store)
        runtime = ags.Runtime(store=store)
        await runtime.search("kettle")  # 6 moved: under the bar, the deleted rows stay
        assert pg.run(pg_dsn, size)[0][0] > 0
        assert pg.run(pg_dsn, tuples) == [(-1,)]  # never analyzed
        assert pg.run(pg_dsn, vacuums) == [(0,)]
        monkeypatch.setattr("agentsession.store.search.VACUUM_AFTER", 2)
        await store.append(
            "older",
            (await store.get_session("older")).next_seq,
            [UserEntry("a kettle again"), UserEntry("and again")],
        )
        assert len(await runtime.search("again")) == 2  # 2 moved: vacuumed
        assert pg.run(pg_dsn, vacuums) == [(1,)]
        assert pg.run(pg_dsn, tuples) == [(8,)]  # and the index's statistics taken
        assert pg.run(pg_dsn, "SELECT count(*) FROM search_queue") == [(0,)]
    finally:
        await store.close()


async def test_many_matches_are_read_session_by_session_in_the_same_order(
    backend: str, tmp_path: Path, dsn: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentsession.store import search

    store = store_for(backend, tmp_path, dsn)
    try:
        await fill(store)
        runtime = ags.Runtime(store=store, project_dir=tmp_path)
        few = [(h.session_id, h.seq, h.role) for h in await runtime.search("kettle")]
        monkeypatch.setattr(search, "_FEW", 1)  # every query now has "many" matches
        for limit in (1, 2, 3, 20):
            many = await runtime.search("kettle", limit=limit)
            assert [(h.session_id, h.seq, h.role) for h in many] == few[:limit]
        only = await runtime.search("kettle", session="older")
        assert [(h.session_id, h.seq) for h in only] == [(s, q) for s, q, _ in few if s == "older"]
    finally:
        await store.close()


async def test_a_long_queue_is_indexed_a_batch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentsession.store import _search_sql, search

    path = tmp_path / "s.db"
    monkeypatch.setattr(search, "DRAIN_BATCH", 2)
    batched = tuple(s.replace("LIMIT 5000", "LIMIT 2") for s in _search_sql.SQLITE_DRAIN)
    monkeypatch.setattr(search, "SQLITE_DRAIN", batched)
    store = ags.SQLiteStore(path)
    try:
        await fill(store)
        hits = await ags.Runtime(store=store, project_dir=tmp_path).search("kettle")
        assert len(hits) == 4 and _indexed(path, "kettle") == 4
        db = sqlite3.connect(path)
        assert db.execute("SELECT count(*) FROM search_queue").fetchone() == (0,)
        db.close()
    finally:
        await store.close()
