"""On PostgreSQL the server's own table (owners, settings, cancel requests) is read and written
on the store's pool: no connection of its own per statement, which cost a turn's start on a
loaded machine a new database backend for each of its reads. Two processes creating the table
at once still both work.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import agentsession as ags
from agentsession.server.cancels import Cancels
from agentsession.server.models import SessionSettings, Settings
from agentsession.server.owners import Owners
from agentsession.server.side_table import SideTable


@pytest.mark.postgres
async def test_the_servers_own_table_uses_the_stores_pool(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def own_connection(*args: Any) -> Any:
        raise AssertionError("a statement opened a connection of its own")

    monkeypatch.setattr(SideTable, "_postgres", own_connection)
    stores = [ags.PostgresStore(pg_dsn, pool_size=2), ags.PostgresStore(pg_dsn, pool_size=2)]
    try:
        # Two processes' first statements at once: each creates the tables it needs.
        owners = [Owners(store) for store in stores]
        settings = [SessionSettings(store) for store in stores]
        cancels = [Cancels(store) for store in stores]
        await asyncio.gather(
            owners[0].set("s1", "alice"),
            owners[1].set("s2", "bob"),
            settings[0].set("s1", Settings("small", ("pdf",))),
            settings[1].set("s2", Settings(None, ())),
            cancels[0].request("s1", 7),
            cancels[1].request("s2", 3),
        )
        assert await owners[1].get("s1") == "alice"
        assert await owners[0].owned("bob") == {"s2"}
        chosen = await settings[1].get("s1")
        assert (chosen.model, chosen.skills) == ("small", ("pdf",))
        assert await cancels[1].due({"s1": 5, "s2": 4}) == ["s1"]
        await cancels[0].clear("s1", before=8)
        assert await cancels[1].due({"s1": 5}) == []
    finally:
        for store in stores:
            await store.close()


async def _until_a_creation_waits(dsn: str) -> None:
    """Until one of this test's connections waits on a lock for its ``CREATE TABLE``."""
    import psycopg

    waiting = (
        "SELECT count(*) FROM pg_stat_activity WHERE application_name ="
        " current_setting('application_name') AND wait_event_type = 'Lock'"
        " AND query LIKE 'CREATE TABLE%%'"
    )
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        for _ in range(6000):  # bounded only to end a hang; the lock wait is the event
            row = await (await conn.execute(waiting)).fetchone()
            if row is not None and row[0] > 0:
                return
            await asyncio.sleep(0.05)
    raise AssertionError("the table's creation never waited for the other one")


@pytest.mark.postgres
@pytest.mark.parametrize("pooled", [True, False], ids=["store-pool", "own-connection"])
async def test_a_table_another_process_is_creating_is_used_not_failed(
    pg_dsn: str, pooled: bool
) -> None:
    # The race made certain: another connection has created the table and not yet committed,
    # so this creation passes "IF NOT EXISTS", waits on the catalog, then meets the winner's row.
    import psycopg

    create = "CREATE TABLE IF NOT EXISTS race_probe (k TEXT PRIMARY KEY)"
    store = ags.PostgresStore(pg_dsn, pool_size=2)
    table = SideTable(store, create)
    if not pooled:
        table._pooled = None  # the path of a store with an address but no pool of its own
    other = await psycopg.AsyncConnection.connect(pg_dsn)
    try:
        await other.execute(create)
        first = asyncio.create_task(table.sql("INSERT INTO race_probe VALUES (?)", ("a",)))
        await _until_a_creation_waits(pg_dsn)
        await other.commit()
        assert await first == []
        assert await table.sql("SELECT k FROM race_probe", ()) == [("a",)]
    finally:
        await other.close()
        await store.close()
