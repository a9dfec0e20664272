"""A whole session driven over HTTP against a real server process, with the scripted model.

Prompt stream, the same entries on the events endpoint, an approval round trip, cancel, retry,
export and import, report, context and request, management, and JSON errors.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .harness import Frame, Server, frames


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(str(tmp_path / "sessions.db"), tmp_path)
    yield running
    running.stop()


def run_stream(client: httpx.Client, path: str, body: object) -> list[Frame]:
    with client.stream("POST", path, json=body) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(frames(response.iter_lines()))


def replay(client: httpx.Client, session_id: str, after: int, count: int) -> list[Frame]:
    """The first ``count`` entries the events endpoint sends after ``after``."""
    found: list[Frame] = []
    headers = {"Last-Event-ID": str(after)}
    with client.stream("GET", f"/sessions/{session_id}/events", headers=headers) as response:
        assert response.status_code == 200
        for frame in frames(response.iter_lines()):
            if frame.id is None:
                continue  # a turn's end (turn_finished): not an entry
            found.append(frame)
            if len(found) == count:
                break
    return found


def entries(got: list[Frame]) -> dict[int, dict[str, object]]:
    return {f.id: f.data for f in got if f.id is not None}


def test_a_whole_session_over_http(server: Server, tmp_path: Path) -> None:
    client = server.client
    created = client.post("/sessions", json={})
    assert created.status_code == 201
    sid = created.json()["id"]

    # The prompt stream: live events without ids, every log entry under its seq, answer last.
    got = run_stream(client, f"/sessions/{sid}/prompt", {"text": "three little words"})
    assert got[-1].event == "turn_finished"
    assert got[-1].data["result"]["text"] == "answer: 3"
    ids = [f.id for f in got if f.id is not None]
    assert ids == list(range(len(ids))), ids
    assert all(f.data["seq"] == f.id for f in got if f.id is not None)
    assert [f.event for f in got if f.id is not None] == ["entry"] * len(ids)
    assert any(f.event == "text_delta" for f in got)
    assert all(f.id is None for f in got if f.event != "entry")
    # The events endpoint sends the same JSON for the same seq, from any point on.
    assert entries(replay(client, sid, -1, len(ids))) == entries(got)
    tail = replay(client, sid, 3, len(ids) - 4)
    assert [f.id for f in tail] == ids[4:]

    # Approval round trip: the turn pauses, the call is approved, the turn resumes.
    paused = run_stream(client, f"/sessions/{sid}/prompt", {"text": "approve staging"})
    assert paused[-1].data["result"]["stop_reason"] == "approval_required"
    asked = [f for f in paused if f.event == "approval_needed"]
    assert len(asked) == 1
    call_id = asked[0].data["request"]["call_id"]
    waiting = client.get(f"/sessions/{sid}/approvals").json()["waiting"]
    assert [w["call_id"] for w in waiting] == [call_id]
    early = client.post(f"/sessions/{sid}/prompt", json={"text": "too early"})
    assert early.status_code == 409
    assert early.json()["error"]["type"] == "SessionBusyError"
    answered = client.post(f"/sessions/{sid}/approvals/{call_id}", json={"approved": True})
    assert answered.json()["waiting"] == []
    resumed = run_stream(client, f"/sessions/{sid}/resume", {})
    results = [f.data for f in resumed if f.event == "tool_result"]
    assert [r["content"] for r in results] == ["deployed to staging"]
    assert resumed[-1].data["result"]["text"] == "answer: deployed to staging"
    resumed_ids = [f.id for f in resumed if f.id is not None]
    assert resumed_ids[0] > max(f.id for f in paused if f.id is not None)

    # A denial given with the resume itself (any process can take it).
    paused = run_stream(client, f"/sessions/{sid}/prompt", {"text": "approve prod"})
    call_id = next(f for f in paused if f.event == "approval_needed").data["request"]["call_id"]
    decisions = [{"call_id": call_id, "approved": False, "note": "not today"}]
    denied = run_stream(client, f"/sessions/{sid}/resume", {"decisions": decisions})
    assert "deployed" not in denied[-1].data["result"]["text"]
    assert [f.data["is_error"] for f in denied if f.event == "tool_result"] == [True]

    # Cancel: the turn waits at a gate that never opens; cancelling ends it truthfully.
    with client.stream("POST", f"/sessions/{sid}/prompt", json={"text": "wait never"}) as response:
        lines = response.iter_lines()
        seen: list[Frame] = []
        for frame in frames(lines):
            seen.append(frame)
            if frame.event == "tool_call_started":
                break
        busy = client.post(f"/sessions/{sid}/prompt", json={"text": "meanwhile"})
        assert busy.status_code == 409
        assert busy.json()["error"] == {
            "type": "SessionBusyError",
            "message": f"session {sid} is running a turn",
            "retryable": True,
        }
        assert client.post(f"/sessions/{sid}/cancel").json() == {"cancelled": True}
        seen.extend(frames(lines))
    assert seen[-1].event == "turn_cancelled"
    assert any(f.data["kind"] == "interrupted" for f in seen if f.event == "entry")
    nothing = client.post(f"/sessions/{sid}/cancel")
    assert nothing.status_code == 409 and nothing.json()["error"]["type"] == "NoTurnError"

    # Retry: the provider fails once; the error is the stream's last event; retry finishes.
    failed = run_stream(client, f"/sessions/{sid}/prompt", {"text": "fail once"})
    assert failed[-1].event == "error"
    assert failed[-1].data["error"]["type"] == "ProviderError"
    retried = run_stream(client, f"/sessions/{sid}/retry", {})
    assert retried[-1].data["result"]["text"] == "answer: 2"

    # Export, import as a copy, report, context, request.
    exported = client.get(f"/sessions/{sid}/export")
    assert exported.status_code == 200
    lines_out = exported.text.splitlines()
    assert json.loads(lines_out[0])["id"] == sid
    info = client.get(f"/sessions/{sid}").json()
    assert len(lines_out) - 1 == info["entries"]
    imported = client.post("/sessions/import?copy=1", content=exported.content)
    assert imported.status_code == 201
    copy_id = imported.json()["id"]
    # Every entry of the file, and the import's empty epoch that sets its System Context aside.
    assert copy_id != sid and imported.json()["entries"] == info["entries"] + 1
    report = client.get(f"/sessions/{sid}/report")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert sid in report.text
    context = client.get(f"/sessions/{sid}/context").json()
    assert context["session_id"] == sid and context["context"]
    neutral = client.get(f"/sessions/{sid}/request").json()["request"]
    assert neutral["messages"][0]["role"] == "user"
    first = client.get(f"/sessions/{sid}/request", params={"step": 1}).json()["request"]
    assert first["messages"][-1]["content"] == "three little words"
    wire = client.get(f"/sessions/{sid}/request", params={"format": "openai-chat"}).json()
    assert "messages" in wire["request"]

    # Management: rename, fork, list (paged), delete.
    assert client.patch(f"/sessions/{sid}", json={"title": "Kept"}).json()["title"] == "Kept"
    fork = client.post(f"/sessions/{sid}/fork", json={"at": 3}).json()
    assert fork["entries"] == 4
    listed = client.get("/sessions", params={"limit": 2}).json()
    assert len(listed["sessions"]) == 2 and listed["next_cursor"]
    rest = client.get("/sessions", params={"limit": 2, "cursor": listed["next_cursor"]}).json()
    assert len(rest["sessions"]) == 1 and rest["next_cursor"] is None
    assert {s["id"] for s in listed["sessions"] + rest["sessions"]} >= {sid, fork["id"]}
    assert client.delete(f"/sessions/{fork['id']}").status_code == 204
    assert client.get(f"/sessions/{fork['id']}").status_code == 404


def test_errors_are_json_with_type_message_and_retryable(server: Server) -> None:
    client = server.client
    missing = client.post("/sessions/nope/prompt", json={"text": "hi"})
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "SessionNotFoundError"
    assert missing.json()["error"]["retryable"] is False
    sid = client.post("/sessions", json={}).json()["id"]
    for body in ({}, {"text": 3}, [1]):
        bad = client.post(f"/sessions/{sid}/prompt", json=body)
        assert bad.status_code == 400
        assert set(bad.json()["error"]) == {"type", "message", "retryable"}
    not_json = client.post(f"/sessions/{sid}/prompt", content=b"{nope")
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]["message"]
    big = client.post(f"/sessions/{sid}/prompt", json={"text": "x" * 100_000})
    assert big.status_code == 413
    bad_after = client.get(f"/sessions/{sid}/events", params={"after": "x"})
    assert bad_after.status_code == 400


def test_a_number_in_other_digits_is_a_400_not_a_crash(server: Server) -> None:
    """``"²".isdigit()`` holds but ``int("²")`` fails: each numeric query parameter says 400."""
    client = server.client
    sid = client.post("/sessions", json={}).json()["id"]
    for path, params in (
        ("/sessions", {"limit": "²"}),
        ("/search", {"q": "one", "limit": "²"}),
        (f"/sessions/{sid}/events", {"after": "²"}),
        (f"/sessions/{sid}/events", {"after": "-²"}),
        (f"/sessions/{sid}/request", {"step": "²"}),
    ):
        refused = client.get(path, params=params)
        assert refused.status_code == 400, (path, refused.text)
        assert refused.json()["error"]["type"] == "UsageError"


def test_a_last_event_id_beyond_the_log_is_refused_not_followed_in_silence(
    server: Server,
) -> None:
    """No client was ever sent an entry the log does not hold: a forged id (or one from a log
    since restored from an older copy) made the follower skip every entry up to it without a
    word, and one past SQLite's integers broke the stream. Both are a 400 naming the log's last
    seq; the last real id is followed as before."""
    client = server.client
    sid = client.post("/sessions", json={}).json()["id"]
    run_stream(client, f"/sessions/{sid}/prompt", {"text": "one two"})
    last = client.get(f"/sessions/{sid}").json()["entries"] - 1
    path = f"/sessions/{sid}/events"
    for headers, params in (
        ({"Last-Event-ID": str(last + 1)}, {}),
        ({"Last-Event-ID": "99999999999999999999999"}, {}),
        ({}, {"after": str(last + 5)}),
    ):
        # Streamed: a stream that was followed would never end by itself.
        with client.stream("GET", path, headers=headers, params=params) as refused:
            assert refused.status_code == 400, (headers, params)
            assert f"ends at seq {last}" in json.loads(refused.read())["error"]["message"]
    with client.stream("GET", path, headers={"Last-Event-ID": str(last)}) as followed:
        assert followed.status_code == 200


def test_openapi_names_every_route(server: Server) -> None:
    document = server.client.get("/openapi.json").json()
    assert document["openapi"].startswith("3.")
    for path in ("/sessions", "/sessions/{id}/prompt", "/sessions/{id}/events"):
        assert path in document["paths"]
    prompt = document["paths"]["/sessions/{id}/prompt"]["post"]
    assert prompt["requestBody"]["content"]["application/json"]["schema"]["required"] == ["text"]
