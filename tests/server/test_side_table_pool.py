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
