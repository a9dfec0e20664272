"""What only the PostgreSQL store does: a server, migrations, many writers, dropped connections.

Every test here runs against the real server ``make test`` starts (see ``pg.py``), in a schema
of its own.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from agentsession.errors import ConflictError, SessionNotFoundError, StoreError
from agentsession.log import LogEntry, UserEntry, now
from agentsession.store import PostgresStore, SessionInfo
from agentsession.store.migrations import LATEST, MIGRATIONS, READABLE_FROM

from . import pg

pytestmark = pytest.mark.postgres


def new_info(session_id: str, **fields: Any) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp, **fields)


@pytest.fixture
async def db(pg_dsn: str) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(pg_dsn)
    try:
        yield store
    finally:
        await store.close()


def application(dsn: str) -> str:
    """The application name ``pg.schema`` gave this test's connections."""
    return str(psycopg.conninfo.conninfo_to_dict(dsn)["application_name"])


# -- opening ---------------------------------------------------------------------------------


async def test_migrations_are_recorded_once(pg_dsn: str) -> None:
    for _ in range(2):
        store = PostgresStore(pg_dsn)
        await store.list_sessions()
        await store.close()
    rows = pg.run(pg_dsn, "SELECT version, description, applied_at FROM schema_migrations")
    assert [(v, d) for v, d, _ in rows] == [(m.version, m.description) for m in MIGRATIONS]
    assert rows[-1][0] == LATEST


async def test_stores_starting_together_migrate_once(pg_dsn: str) -> None:
    stores = [PostgresStore(pg_dsn) for _ in range(5)]
    try:
        await asyncio.gather(*(s.list_sessions() for s in stores))
    finally:
        for store in stores:
            await store.close()
    versions = pg.run(pg_dsn, "SELECT version FROM schema_migrations ORDER BY version")
    assert versions == [(m.version,) for m in MIGRATIONS]


async def test_newer_schema_is_refused(db: PostgresStore, pg_dsn: str) -> None:
    await db.list_sessions()
    pg.run(pg_dsn, "INSERT INTO schema_migrations VALUES (%s, 'future', %s)", (LATEST + 1, now()))
    later = PostgresStore(pg_dsn)
    try:
        with pytest.raises(StoreError, match=f"schema version {LATEST + 1}, newer"):
            await later.list_sessions()
    finally:
        await later.close()


async def test_an_unreachable_server_is_a_store_error_without_the_password(
    tmp_path: Any,
) -> None:
    store = PostgresStore(f"postgresql://someone:s3cret-pw@/db?host={tmp_path}&connect_timeout=2")
    try:
        with pytest.raises(StoreError) as info:
            await store.get_session("a")
        assert "s3cret-pw" not in str(info.value)
        assert "s3cret-pw" not in repr(store)
        assert "PostgreSQL store" in str(info.value)
        assert isinstance(info.value.__cause__, psycopg.Error)
    finally:
        await store.close()


def test_a_malformed_connection_string_is_refused_at_once() -> None:
    with pytest.raises(StoreError, match="invalid PostgreSQL connection string"):
        PostgresStore("host=x port")


async def test_read_only_reads_and_refuses_writes(db: PostgresStore, pg_dsn: str) -> None:
    await db.create_session(new_info("a"), [UserEntry("kept")])
    reader = PostgresStore(pg_dsn, read_only=True)
    try:
        assert [r.entry for r in await reader.read("a")] == [UserEntry("kept")]
        assert [s.id for s in await reader.list_sessions()] == ["a"]
        for call in (
            reader.append("a", 1, [UserEntry("lost")]),
            reader.create_session(new_info("b")),
            reader.set_title("a", "no"),
            reader.acquire_lease("a", "me", 60),
        ):
            with pytest.raises(StoreError, match="read-only") as info:
                await call
            assert isinstance(info.value.__cause__, psycopg.Error)
    finally:
        await reader.close()
    assert [r.entry for r in await db.read("a")] == [UserEntry("kept")]


async def test_read_only_reads_a_schema_it_knows_without_upgrading_it(
    db: PostgresStore, pg_dsn: str
) -> None:
    await db.create_session(new_info("a"), [UserEntry("kept")])
    pg.run(pg_dsn, "DROP TABLE texts")
    pg.run(pg_dsn, f"DELETE FROM schema_migrations WHERE version > {READABLE_FROM}")
    reader = PostgresStore(pg_dsn, read_only=True)
    try:
        assert [r.entry for r in await reader.read("a")] == [UserEntry("kept")]
    finally:
        await reader.close()
    assert pg.run(pg_dsn, "SELECT max(version) FROM schema_migrations") == [(READABLE_FROM,)]
    pg.run(pg_dsn, f"DELETE FROM schema_migrations WHERE version = {READABLE_FROM}")
    reader = PostgresStore(pg_dsn, read_only=True)
    try:
        with pytest.raises(StoreError, match="open it once for writing"):
            await reader.list_sessions()
    finally:
        await reader.close()


async def test_a_role_without_create_rights_works_on_a_current_schema(
    db: PostgresStore, pg_dsn: str
) -> None:
    # Production: migrations run by the owner, the application role only reads and writes rows.
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    await db.create_session(new_info("a"), [UserEntry("kept")])
    schema = str(conninfo_to_dict(pg_dsn)["options"]).split("search_path=")[1]
    role = f"app_{uuid.uuid4().hex[:12]}"
    pg.run(pg_dsn, f"CREATE ROLE {role} LOGIN")
    try:
        pg.run(pg_dsn, f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
        pg.run(
            pg_dsn,
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO {role}',
        )
        app = PostgresStore(make_conninfo(pg_dsn, user=role))
        try:
            await app.append("a", 1, [UserEntry("from the app")])
            assert [r.entry for r in await app.read("a")][-1] == UserEntry("from the app")
        finally:
            await app.close()
    finally:
        pg.run(pg_dsn, f"REASSIGN OWNED BY {role} TO CURRENT_USER")
        pg.run(pg_dsn, f"DROP OWNED BY {role}")
        pg.run(pg_dsn, f"DROP ROLE {role}")


async def test_read_only_never_creates_the_schema(pg_dsn: str) -> None:
    reader = PostgresStore(pg_dsn, read_only=True)
    try:
        with pytest.raises(StoreError, match="schema version 0, older"):
            await reader.list_sessions()
    finally:
        await reader.close()
    assert pg.run(pg_dsn, "SELECT to_regclass('sessions') IS NULL") == [(True,)]


# -- several writers -------------------------------------------------------------------------


async def test_concurrent_appends_from_two_stores_never_interleave(pg_dsn: str) -> None:
    one, two = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    try:
        for round_ in range(10):
            session_id = f"s{round_}"
            await one.create_session(new_info(session_id))
            batches = [[UserEntry(f"{who}-{j}") for j in range(4)] for who in ("one", "two")]
            results = await asyncio.gather(
                one.append(session_id, 0, batches[0]),
                two.append(session_id, 0, batches[1]),
                return_exceptions=True,
            )
            losers = [r for r in results if isinstance(r, BaseException)]
            assert len(losers) == 1
            assert isinstance(losers[0], ConflictError)
            assert "next seq is 4, this write expected 0" in str(losers[0])
            winner = 0 if not isinstance(results[0], BaseException) else 1
            assert [r.entry for r in await two.read(session_id)] == batches[winner]
            assert (await one.get_session(session_id)).next_seq == 4
    finally:
        await one.close()
        await two.close()


async def test_many_writers_each_seq_once(pg_dsn: str) -> None:
    stores = [PostgresStore(pg_dsn) for _ in range(4)]
    try:
        await stores[0].create_session(new_info("s"))

        async def writer(index: int, store: PostgresStore) -> int:
            written = 0
            while written < 5:
                seq = (await store.get_session("s")).next_seq
                try:
                    await store.append("s", seq, [UserEntry(f"w{index}-{written}")])
                except ConflictError:
                    continue
                written += 1
            return written

        assert await asyncio.gather(*(writer(i, s) for i, s in enumerate(stores))) == [5] * 4
        log = [r.entry for r in await stores[0].read("s")]
        assert len(log) == 20
        assert len(set(log)) == 20
        for index in range(4):  # each writer's entries in its own order
            mine = [
                e
                for e in log
                if isinstance(e, UserEntry) and str(e.content).startswith(f"w{index}-")
            ]
            assert mine == [UserEntry(f"w{index}-{j}") for j in range(5)]
    finally:
        for store in stores:
            await store.close()


async def test_append_to_a_session_deleted_meanwhile(db: PostgresStore, pg_dsn: str) -> None:
    await db.create_session(new_info("a"))
    other = PostgresStore(pg_dsn)
    try:
        await other.delete_session("a")
    finally:
        await other.close()
    with pytest.raises(SessionNotFoundError):
        await db.append("a", 0, [UserEntry("x")])


# -- dropped connections ---------------------------------------------------------------------


async def wait_for_backend(dsn: str, condition: str) -> int:
    """The pid of this test's backend matching ``condition`` (polls, bounded)."""
    for _ in range(500):
        rows = await asyncio.to_thread(
            pg.run,
            dsn,
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND pid <>"
            f" pg_backend_pid() AND {condition}",
            (application(dsn),),
        )
        if rows:
            return int(rows[0][0])
        await asyncio.sleep(0.01)
    raise AssertionError(f"no backend with {condition}")


async def test_a_backend_killed_during_commit_leaves_nothing(
    db: PostgresStore, pg_dsn: str
) -> None:
    await db.create_session(new_info("s"), [UserEntry("before")])
    # A deferred trigger runs at COMMIT; it waits for a lock this test holds, so the commit
    # is caught in the middle, where the backend is killed.
    pg.run(
        pg_dsn,
        "CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN PERFORM pg_advisory_lock(4242); PERFORM pg_advisory_unlock(4242);"
        " RETURN NULL; END $$",
    )
    pg.run(
        pg_dsn,
        "CREATE CONSTRAINT TRIGGER hold AFTER INSERT ON entries DEFERRABLE INITIALLY DEFERRED"
        " FOR EACH ROW EXECUTE FUNCTION hold_commit()",
    )
    batch: list[LogEntry] = [UserEntry("one"), UserEntry("two"), UserEntry("three")]
    with psycopg.connect(pg_dsn, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(4242)")
        writing = asyncio.create_task(db.append("s", 1, batch))
        pid = await wait_for_backend(pg_dsn, "wait_event_type = 'Lock'")
        pg.run(pg_dsn, "SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StoreError) as info:
            await writing
        assert isinstance(info.value.__cause__, psycopg.OperationalError)
    pg.run(pg_dsn, "DROP TRIGGER hold ON entries")

    # Nothing of the batch happened; the store reconnects and the same write goes in.
    assert (await db.get_session("s")).next_seq == 1
    assert [r.entry for r in await db.read("s")] == [UserEntry("before")]
    await db.append("s", 1, batch)
    assert [r.entry for r in await db.read("s")] == [UserEntry("before"), *batch]


async def test_appends_under_random_backend_kills_stay_whole(
    db: PostgresStore, pg_dsn: str
) -> None:
    """Backends die at random moments of their work; each batch is then whole or absent.

    Only busy backends are killed (running a statement, or inside a transaction): an idle
    pooled connection dying is the pool's business, and killing every new connection at once
    would only measure the pool's reconnect back-off.
    """
    await db.create_session(new_info("s"))
    rng = random.Random(1234)
    stop = asyncio.Event()
    kills = 0

    async def killer() -> None:
        nonlocal kills
        while not stop.is_set():
            await asyncio.sleep(rng.uniform(0, 0.005))
            killed = await asyncio.to_thread(
                pg.run,
                pg_dsn,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s AND pid <> pg_backend_pid()"
                " AND state IN ('active', 'idle in transaction')",
                (application(pg_dsn),),
            )
            kills += len(killed)

    async def retrying(call: Any) -> Any:
        for _ in range(50):
            try:
                return await call()
            except StoreError:
                await asyncio.sleep(0.005)
        raise AssertionError("the store never came back")

    running = asyncio.create_task(killer())
    failures = 0
    try:
        for number in range(60):
            batch = [UserEntry(f"batch {number} part {p}") for p in range(3)]
            seq = (await retrying(lambda: db.get_session("s"))).next_seq
            try:
                await db.append("s", seq, batch)
            except StoreError:
                failures += 1
                after = (await retrying(lambda: db.get_session("s"))).next_seq
                assert after in (seq, seq + 3)  # whole or nothing, never part
    finally:
        stop.set()
        await running
    log = [r.entry for r in await retrying(lambda: db.read("s"))]
    assert len(log) % 3 == 0
    batches = [log[i : i + 3] for i in range(0, len(log), 3)]
    numbers: list[int] = []
    for batch in batches:
        texts = [str(e.content) for e in batch if isinstance(e, UserEntry)]
        label = texts[0].split()[1]
        assert texts == [f"batch {label} part {p}" for p in range(3)]
        numbers.append(int(label))
    assert numbers == sorted(set(numbers))  # in order, none twice
    assert len(numbers) >= 60 - failures
    assert kills > 0


# -- long batches and the blocking reads ------------------------------------------------------


async def test_a_long_batch_is_streamed_whole_or_not_at_all(db: PostgresStore) -> None:
    """A batch long enough to be streamed with COPY reads back in order; a stale one writes none."""
    await db.create_session(new_info("s"))
    batch: list[LogEntry] = [UserEntry(f"item {i}") for i in range(500)]
    await db.append("s", 0, batch)
    assert [r.entry for r in await db.read("s")] == batch
    assert (await db.get_session("s")).message_count == 500
    with pytest.raises(ConflictError):
        await db.append("s", 0, batch)  # stale: the log is at 500
    assert (await db.get_session("s")).next_seq == 500
    assert [r.seq for r in await db.read("s", 498)] == [498, 499]


async def test_blocking_reads_reconnect_after_their_connection_was_dropped(
    db: PostgresStore, pg_dsn: str
) -> None:
    await db.create_session(new_info("s"), [UserEntry("one"), UserEntry("two")])
    assert db._count_now("s", ["user"], 2) == 2
    pg.run(
        pg_dsn,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE application_name = %s AND pid <> pg_backend_pid()",
        (application(pg_dsn),),
    )
    # Every backend of this test is gone: the read can only succeed on a new connection (a
    # read is run once more when its connection turns out dropped).
    assert [r.entry for r in db._read_now("s", 0, 2, ["user"])] == [
        UserEntry("one"),
        UserEntry("two"),
    ]
    found = db._last_now("s", ["user"])
    assert found is not None and found.entry == UserEntry("two")
    with pytest.raises(SessionNotFoundError):
        db._read_now("nobody", 0, 2, ["user"])
