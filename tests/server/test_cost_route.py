"""``GET /sessions/{id}/cost``: the same figures as ``session.cost()`` and ``agentsession cost``."""

from __future__ import annotations

from pathlib import Path

import httpx

import agentsession as ags
from agentsession.ledger import cost_fields

PRICE = ags.ModelPrice(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
REPORTING = ags.ModelProfile(provider="test", reports_usage=True)


async def test_the_cost_route_answers_what_session_cost_says(tmp_path: Path) -> None:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel(["one", "two"], name="test-model", profile=REPORTING),
        project_dir=tmp_path,
        config=ags.Config(titles=False, prices={"test-model": PRICE}),
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        for text in ("a", "b"):
            answer = await client.post(f"/sessions/{sid}/prompt", json={"text": text})
            assert answer.status_code == 200
        answered = await client.get(f"/sessions/{sid}/cost")
        missing = await client.get("/sessions/nosuchsession/cost")
        documented = (await client.get("/openapi.json")).json()["paths"]
    session = await runtime.open_session(sid)
    expected = cost_fields(session.cost())
    await runtime.close()

    assert answered.status_code == 200
    body = answered.json()
    assert body["session_id"] == sid
    assert body["requests"] == 2 and body["total_usd"] is not None and body["total_usd"] > 0
    assert {k: body[k] for k in expected} == expected
    assert missing.status_code == 404
    assert "/sessions/{id}/cost" in documented


async def test_an_unpriced_model_costs_null_and_says_no_price(tmp_path: Path) -> None:
    runtime = ags.Runtime(
        store=ags.MemoryStore(),
        model=ags.ScriptedModel(["one"], name="unpriced-model", profile=REPORTING),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        assert (await client.post(f"/sessions/{sid}/prompt", json={"text": "a"})).status_code == 200
        body = (await client.get(f"/sessions/{sid}/cost")).json()
    await runtime.close()
    assert body["total_usd"] is None and body["no_price"] == ["unpriced-model"]
