"""What a hostile or careless client sends: a clear typed 400, nothing stored, no traceback.

A field a route does not take is refused (a misspelt ``preest`` must not leave a session at the
default preset silently), a body nested past what a parser can read is a 400, not a 500, and a
session file that cannot be imported is the client's error (400, not retryable), not the
store's (503, retryable).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

import agentsession as ags

NDJSON = {"Content-Type": "application/x-ndjson"}


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel(["ok"] * 4),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield http
    await runtime.close()


def _refused(answer: httpx.Response, *fragments: str) -> str:
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["type"] == "UsageError" and error["retryable"] is False
    for fragment in fragments:
        assert fragment in error["message"], error["message"]
    return str(error["message"])


async def test_a_field_a_route_does_not_take_is_refused_and_nothing_is_stored(
    client: httpx.AsyncClient,
) -> None:
    _refused(await client.post("/sessions", json={"preest": "full-access"}), "'preest'", "'preset'")
    assert (await client.get("/sessions")).json()["sessions"] == []  # nothing was created
    sid = (await client.post("/sessions", json={"title": "kept"})).json()["id"]
    for method, path, body, named in (
        ("POST", f"/sessions/{sid}/prompt", {"text": "hi", "skill": ["pdf"]}, "skill"),
        ("POST", f"/sessions/{sid}/input", {"text": "hi", "mode": "queue", "when": 1}, "when"),
        ("PATCH", f"/sessions/{sid}", {"title": "new", "permission_preset": "x"}, "permission_"),
        ("POST", f"/sessions/{sid}/fork", {"at": 0, "title": "x"}, "title"),
        ("POST", f"/sessions/{sid}/approvals/c1", {"approved": True, "forever": 1}, "forever"),
        ("POST", f"/sessions/{sid}/resume", {"decisions": [], "force": True}, "force"),
        ("POST", f"/sessions/{sid}/resume", {"decisions": [{"approved": True, "x": 1}]}, "'x'"),
    ):
        _refused(await client.request(method, path, json=body), named)
    shown = (await client.get(f"/sessions/{sid}")).json()
    assert shown["title"] == "kept" and shown["message_count"] == 0  # nothing ran or changed


async def test_a_body_nested_too_deep_is_a_400_not_a_crash(client: httpx.AsyncClient) -> None:
    deep = b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    headers = {"Content-Type": "application/json"}
    _refused(await client.post("/sessions", content=deep, headers=headers), "nests too deeply")


async def test_a_session_file_that_cannot_be_imported_is_the_clients_error(
    client: httpx.AsyncClient,
) -> None:
    sid = (await client.post("/sessions", json={})).json()["id"]
    assert (await client.post(f"/sessions/{sid}/prompt", json={"text": "hi"})).status_code == 200
    exported = (await client.get(f"/sessions/{sid}/export")).content
    header = exported.split(b"\n", 1)[0]
    for body in (header + b'\n{"kind": "user", "content": 5}\n', b'{"kind": "session"}\n'):
        answer = await client.post("/sessions/import", content=body, headers=NDJSON)
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["type"] == "SessionFileError" and error["retryable"] is False
    assert len((await client.get("/sessions")).json()["sessions"]) == 1  # nothing imported


async def test_an_unknown_route_or_method_is_answered_in_json(client: httpx.AsyncClient) -> None:
    sid = (await client.post("/sessions", json={})).json()["id"]
    missing = await client.get("/sessions/../../etc/passwd")
    assert missing.status_code == 404
    assert missing.json()["error"] == {
        "type": "NotFoundError",
        "message": "no such route (see /openapi.json)",
        "retryable": False,
    }
    wrong = await client.put(f"/sessions/{sid}", json={})
    assert wrong.status_code == 405 and "GET" in wrong.headers["allow"]
    assert wrong.json()["error"]["type"] == "MethodNotAllowedError"


async def test_an_export_carries_no_path_of_the_server(tmp_path: Path) -> None:
    root = tmp_path / "workspaces"
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel(["ok"]),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime, workspaces=root, inspect_workers=0)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        sid = (await client.post("/sessions", json={"workspace": "site"})).json()["id"]
        prompted = await client.post(f"/sessions/{sid}/prompt", json={"text": "hi"})
        assert prompted.status_code == 200
        exported = await client.get(f"/sessions/{sid}/export")
        again = await client.post("/sessions/import?copy=1", content=exported.content,
                                  headers=NDJSON)  # fmt: skip
    await runtime.close()
    assert exported.status_code == 200 and str(root) not in exported.text
    assert json.loads(exported.text.split("\n", 1)[0])["project_dir"] is None
    assert again.status_code == 201, again.text  # the file still imports


async def test_a_title_longer_than_a_listing_shows_is_refused(client: httpx.AsyncClient) -> None:
    """Every listing carries each title: one of 100,000 characters is a 400 on create (nothing
    stored) and on PATCH (the old title kept); 200 characters are taken."""
    _refused(await client.post("/sessions", json={"title": "x" * 100_000}), "at most 200")
    assert (await client.get("/sessions")).json()["sessions"] == []
    sid = (await client.post("/sessions", json={"title": "first"})).json()["id"]
    _refused(await client.patch(f"/sessions/{sid}", json={"title": "y" * 201}), "at most 200")
    assert (await client.get(f"/sessions/{sid}")).json()["title"] == "first"
    longest = await client.patch(f"/sessions/{sid}", json={"title": "z" * 200})
    assert longest.status_code == 200 and longest.json()["title"] == "z" * 200
