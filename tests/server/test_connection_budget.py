"""A server process keeps to its PostgreSQL connection budget (``--db-connections``) under a
burst of concurrent requests and turns; a budget too small to work is refused up front."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest

import agentsession as ags
from agentsession.errors import UsageError
from agentsession.server.db_budget import MIN_DB_CONNECTIONS, pool_size_for

from ..store import pg

BUDGET = MIN_DB_CONNECTIONS


def test_a_budget_below_what_the_server_keeps_is_refused() -> None:
    # blocking reads, presence, LISTEN and live text; the server's own table uses the pool
    assert pool_size_for(16) == 12
    with pytest.raises(UsageError, match="--db-connections must be 8 or more"):
        pool_size_for(MIN_DB_CONNECTIONS - 1)


def _sample(name: str, stop: threading.Event, peak: list[int]) -> None:
    """The most connections the application named ``name`` held at once, sampled until stop."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
    while not stop.is_set():
        peak[0] = max(peak[0], int(pg.run(pg.server_dsn(), query, (name,))[0][0]))
        stop.wait(0.01)


@pytest.mark.postgres
async def test_a_burst_stays_within_the_connection_budget(pg_dsn: str, tmp_path: Path) -> None:
    from psycopg.conninfo import conninfo_to_dict

    name = str(conninfo_to_dict(pg_dsn)["application_name"])
    store = ags.PostgresStore(pg_dsn, pool_size=pool_size_for(BUDGET))
    runtime = ags.Runtime(
        store=store,
        model=ags.ScriptedModel(["an answer"] * 40),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime, tokens=["alice-token-0123456789"])
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=_sample, args=(name, stop, peak))
    headers = {"Authorization": "Bearer alice-token-0123456789"}
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=headers) as c,
    ):
        sampler.start()
        try:
            made = await asyncio.gather(*(c.post("/sessions", json={}) for _ in range(12)))
            ids = [r.json()["id"] for r in made]
            turns = [c.post(f"/sessions/{sid}/prompt", json={"text": "hi"}) for sid in ids]
            reads = [c.get(f"/sessions/{sid}") for sid in ids] + [c.get("/sessions")] * 6
            answers = await asyncio.gather(*turns, *reads)
        finally:
            stop.set()
            await asyncio.to_thread(sampler.join)
    await runtime.close()
    assert all(a.status_code in (200, 201) for a in made + answers)
    assert 0 < peak[0] <= BUDGET, peak
