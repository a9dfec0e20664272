"""``POST /sessions/{id}/input``: steer the turn the server runs, queue a prompt after it, or
start the turn that delivers it while the session is idle; typed in ``/openapi.json``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

import agentsession as ags

from ..held import Hold


def user_texts(request: ags.Request) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, ags.UserMessage)]  # type: ignore[misc]


async def test_input_steers_and_queues_a_running_turn_and_starts_one_when_idle(
    tmp_path: Path,
) -> None:
    hold = Hold()
    model = ags.ScriptedModel(
        [[ags.ToolCall("work", {"step": "one"})], "steered", "queued ran", "idle ran"]
    )
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=model,
        tools=[hold.tool()],
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        turn = asyncio.create_task(client.post(f"/sessions/{sid}/prompt", json={"text": "go"}))
        await hold.started.wait()
        steer = await client.post(f"/sessions/{sid}/input", json={"text": "b", "mode": "steer"})
        queue = await client.post(f"/sessions/{sid}/input", json={"text": "c", "mode": "queue"})
        bad = await client.post(f"/sessions/{sid}/input", json={"text": "x", "mode": "later"})
        empty = await client.post(f"/sessions/{sid}/input", json={"text": " ", "mode": "steer"})
        hold.go.set()
        assert (await turn).status_code == 200
        # Idle now: the input is recorded and a turn that delivers it starts here.
        idle = await client.post(f"/sessions/{sid}/input", json={"text": "d", "mode": "queue"})
        missing = await client.post("/sessions/nope/input", json={"text": "d", "mode": "queue"})
        schema = (await client.get("/openapi.json")).json()
        await app.state.server.turns.close(grace=120)  # the idle input's turn runs to its end
    session = await runtime.open_session(sid)
    assert session.pending_input() == []
    users = [m.content for m in session.messages if isinstance(m, ags.UserMessage)]
    await runtime.close()
    assert steer.status_code == 202, steer.text
    assert steer.json()["mode"] == "steer" and steer.json()["turn"] == "running"
    assert queue.status_code == 202 and queue.json()["turn"] == "running"
    assert len(steer.json()["id"]) == 32 and steer.json()["state"] == "pending"
    assert bad.status_code == 400 and "mode" in bad.text
    assert empty.status_code == 400
    assert idle.status_code == 202, idle.text
    assert idle.json()["turn"] == "started"
    assert missing.status_code == 404
    assert users == ["go", "b", "c", "d"]
    assert user_texts(model.requests[1]) == ["go", "b"]  # the steer, after the tool result
    assert type(model.requests[1].messages[-2]).__name__ == "ToolResultMessage"
    post = schema["paths"]["/sessions/{id}/input"]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["mode"]["enum"] == ["steer", "queue"]
    accepted = schema["components"]["schemas"]["InputAccepted"]
    assert set(accepted["required"]) == {"id", "mode", "state", "turn"}


async def test_input_for_a_session_another_process_drives_is_added_for_it(
    tmp_path: Path,
) -> None:
    store = ags.SQLiteStore(tmp_path / "db.sqlite")
    runtime = ags.Runtime(store=store, model=ags.ScriptedModel([]), project_dir=tmp_path)
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        # Another machine's process holds the lease and runs a turn: a step is under way.
        step: list[ags.log.LogEntry] = [
            ags.log.UserEntry("there"),
            ags.log.Dispatch("m", 0, "d1", timestamp="t"),
        ]
        await store.append(sid, 0, step)
        assert await store.acquire_lease(sid, "another-machine:4242", 600)
        given = await client.post(f"/sessions/{sid}/input", json={"text": "hi", "mode": "queue"})
    records = await store.read(sid)
    await runtime.close()
    assert given.status_code == 202, given.text
    assert given.json()["turn"] == "elsewhere"
    assert [(r.entry.kind, getattr(r.entry, "input_id", "")) for r in records] == [
        ("user", ""),
        ("dispatch", ""),
        ("input_queued", given.json()["id"]),
    ]
