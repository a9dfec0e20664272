"""The server's ``POST /sessions/{id}/prompt`` takes the explicit skill selection, and
``PATCH /sessions/{id}`` changes the permission preset while idle (409 during a turn).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

import agentsession as ags
from agentsession.log import PermissionChanged

from ..held import Gated

PDF = ags.Skill(name="pdf", description="Read PDF files.", instructions="Read PDFs carefully.")


async def test_the_prompt_route_honours_a_skill_selection(tmp_path: Path) -> None:
    model = ags.ScriptedModel(["read it", "again"])
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=model,
        project_dir=tmp_path,
        skills=[PDF],
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        body = {"text": "summarise a.pdf", "skills": ["pdf"]}
        answer = await client.post(f"/sessions/{sid}/prompt", json=body)
        assert answer.status_code == 200, answer.text
        unknown = {"text": "x", "skills": ["nosuch"]}
        refused = await client.post(f"/sessions/{sid}/prompt", json=unknown)
        wrong = await client.post(f"/sessions/{sid}/prompt", json={"text": "x", "skills": "pdf"})
    session = await runtime.open_session(sid)
    contexts = session.runtime_contexts()
    await runtime.close()
    assert [[s.name for s in c.skills] for c in contexts] == [["pdf"]]
    first_user = model.requests[0].messages[0]
    # A Python skill's block names where it came from as well: python:<name>.
    assert '<skill name="pdf" location="python:pdf">' in ags.request.text_of(first_user.content)
    assert refused.status_code == 400 and "nosuch" in refused.text
    assert wrong.status_code == 400 and "skills" in wrong.text


async def test_patch_changes_the_preset_while_idle_and_refuses_during_a_turn(
    tmp_path: Path,
) -> None:
    model = Gated()
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=model,
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        turn = asyncio.create_task(client.post(f"/sessions/{sid}/prompt", json={"text": "a"}))
        await model.entered.wait()
        busy = await client.patch(f"/sessions/{sid}", json={"preset": "read-only"})
        model.release.set()
        assert (await turn).status_code == 200
        changed = await client.patch(f"/sessions/{sid}", json={"preset": "read-only"})
        unknown = await client.patch(f"/sessions/{sid}", json={"preset": "no-such-preset"})
        empty = await client.patch(f"/sessions/{sid}", json={})
        renamed = await client.patch(f"/sessions/{sid}", json={"title": "Kept"})
        again = await client.post(f"/sessions/{sid}/prompt", json={"text": "b"})
        assert again.status_code == 200, again.text
    log = [r.entry for r in await runtime.store.read(sid, 0)]
    await runtime.close()
    assert busy.status_code == 409
    assert changed.status_code == 200, changed.text
    assert unknown.status_code == 400 and "no-such-preset" in unknown.text
    assert empty.status_code == 400
    assert renamed.status_code == 200 and renamed.json()["title"] == "Kept"
    presets = [e.preset for e in log if isinstance(e, PermissionChanged)]
    assert presets == ["read-only"]  # recorded once, as set_permission_preset records it
    told = ags.request.text_of(model.requests[-1].messages[-1].content)
    assert "read-only" in told  # the next request tells the model
