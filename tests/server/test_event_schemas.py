"""Every Server-Sent Event is a JSON object with a string ``type`` and a ``schema_version``, and
validates against the schema ``GET /openapi.json`` names for its type (``Event.<type>``); the
turn's end is ``turn_finished`` on the prompt stream and on ``/events`` alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentsession.server.event_schemas import EVENT_TYPES

from .harness import Frame, Server, frames

jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(str(tmp_path / "events.db"), tmp_path)
    yield running
    running.stop()


def _stream(client: httpx.Client, path: str, body: object) -> list[Frame]:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return list(frames(iter(response.text.splitlines())))


def _cancelled(client: httpx.Client, sid: str) -> list[Frame]:
    seen: list[Frame] = []
    with client.stream("POST", f"/sessions/{sid}/prompt", json={"text": "wait never"}) as r:
        lines = r.iter_lines()
        for frame in frames(lines):
            seen.append(frame)
            if frame.event == "tool_call_started":
                break
        assert client.post(f"/sessions/{sid}/cancel").status_code == 200
        seen.extend(frames(lines))
    return seen


def test_every_event_validates_against_the_schema_of_its_type(server: Server) -> None:
    client = server.client
    document = client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    assert {f"Event.{name}" for name in EVENT_TYPES} <= set(schemas)
    sid = client.post("/sessions", json={}).json()["id"]
    got = _stream(client, f"/sessions/{sid}/prompt", {"text": "one two three"})
    assert got[-1].event == "turn_finished"
    paused = _stream(client, f"/sessions/{sid}/prompt", {"text": "approve staging"})
    call = next(f for f in paused if f.event == "approval_needed").data["request"]["call_id"]
    decision = {"decisions": [{"call_id": call, "approved": True}]}
    got += paused + _stream(client, f"/sessions/{sid}/resume", decision)
    got += _cancelled(client, sid)
    got += _stream(client, f"/sessions/{sid}/prompt", {"text": "fail now"})
    count = client.get(f"/sessions/{sid}").json()["entries"]
    followed: list[Frame] = []
    with client.stream("GET", f"/sessions/{sid}/events?after=-1") as response:
        for frame in frames(response.iter_lines()):
            followed.append(frame)
            if frame.id == count - 1:
                break
    assert [f.event for f in followed].count("turn_finished") >= 2  # on /events too
    seen = set()
    for frame in got + followed:
        assert isinstance(frame.data["type"], str) and frame.data["type"] == frame.event
        assert isinstance(frame.data["schema_version"], int)
        jsonschema.validate(frame.data, schemas[f"Event.{frame.event}"])
        seen.add(frame.event)
    # An entry travels in its public form: every field by name, never the stored, packed form.
    dispatches = [f.data["entry"] for f in followed if f.data.get("kind") == "dispatch"]
    assert dispatches and all("v" not in d and d["kind"] == "dispatch" for d in dispatches)
    assert all(isinstance(d["model"], str) and d["step"] >= 1 for d in dispatches)
    assert all("version" not in f.data for f in followed if f.event == "entry")
    expected = {"entry", "text_delta", "tool_call_started", "tool_result", "approval_needed"}
    assert seen >= expected | {"turn_finished", "turn_cancelled", "error", "context_admitted"}


def test_docs_is_an_html_reference_of_every_route_and_event(server: Server) -> None:
    page = server.client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script" not in page.text and "http://" not in page.text.replace("http://test", "")
    for name in EVENT_TYPES:
        assert f"Event.{name}" in page.text
    for path in ("/sessions/{id}/prompt", "/sessions/{id}/events", "/readyz"):
        assert path in page.text
