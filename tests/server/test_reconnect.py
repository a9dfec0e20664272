"""A client that drops the prompt stream mid-turn and reconnects with ``Last-Event-ID``.

It receives every log entry exactly once — also when it reconnects to another server process on
the same database (a SQLite file, or PostgreSQL with LISTEN/NOTIFY). Dropping the stream never
stops the turn; a finished turn releases its lease so another process takes the next prompt; a
process killed mid-turn leaves a session that the next request on another process recovers.
Turns wait at gates (files) the test opens: nothing here depends on timing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..store import pg
from .harness import Frame, Server, frames


def _until_tool_started(client: httpx.Client, sid: str, text: str) -> list[Frame]:
    """Start a prompt, read until its tool call started, then drop the stream."""
    seen: list[Frame] = []
    with client.stream("POST", f"/sessions/{sid}/prompt", json={"text": text}) as response:
        assert response.status_code == 200
        for frame in frames(response.iter_lines()):
            seen.append(frame)
            if frame.event == "tool_call_started":
                break
    return seen


def _follow(client: httpx.Client, sid: str, after: int, gate: Path, answer: str) -> list[Frame]:
    """Reconnect after ``after``, open the gate once connected, read until ``answer``."""
    got: list[Frame] = []
    headers = {"Last-Event-ID": str(after)}
    with client.stream("GET", f"/sessions/{sid}/events", headers=headers) as response:
        assert response.status_code == 200
        gate.touch()  # the turn moves on only now: what follows arrives live
        for frame in frames(response.iter_lines()):
            got.append(frame)
            entry = frame.data.get("entry", {})
            if frame.data.get("kind") == "assistant" and entry.get("content") == answer:
                break
    return got


def _wait_idle(server: Server, sid: str) -> None:
    for _ in range(1200):  # a condition, polled within a generous bound
        if not server.client.get(f"/sessions/{sid}").json()["running_here"]:
            return
        threading.Event().wait(0.05)
    raise AssertionError("the turn never ended")


def _all_entries(server: Server, sid: str) -> dict[int, object]:
    count = server.client.get(f"/sessions/{sid}").json()["entries"]
    found: dict[int, object] = {}
    with server.client.stream("GET", f"/sessions/{sid}/events?after=-1") as response:
        for frame in frames(response.iter_lines()):
            if frame.id is None:  # a turn's end, sent after its last entry
                assert frame.event == "turn_finished"
                continue
            assert frame.id not in found
            found[frame.id] = frame.data
            if len(found) == count:
                break
    return found


def _reconnect_scenario(
    first: Server, second: Server, tmp_path: Path, text_travels: bool = False
) -> None:
    sid = first.client.post("/sessions", json={}).json()["id"]
    warm = first.client.post(f"/sessions/{sid}/prompt", json={"text": "warm up"})
    assert warm.status_code == 200
    before = _until_tool_started(first.client, sid, "wait g1")
    before_ids = [f.id for f in before if f.id is not None]
    assert before_ids, "entries arrive before the tool runs"

    if second is not first:
        # The turn runs on the first process: the second refuses to drive the session.
        refused = second.client.post(f"/sessions/{sid}/prompt", json={"text": "not now"})
        assert refused.status_code == 409
        error = refused.json()["error"]
        assert error["type"] == "ConflictError" and error["retryable"] is True
        assert error["lease_seconds_left"] > 0 and "lease_expires_at" in error

    after = _follow(second.client, sid, before_ids[-1], tmp_path / "g1", "answer: gate g1 open")
    after_ids = [f.id for f in after if f.id is not None]
    assert all(f.event == "entry" for f in after if f.id is not None)
    live = [f.event for f in after if f.id is None]
    if second is first:
        # The process running the turn hands its live events to its /events readers too.
        assert "tool_result" in live and "text_delta" in live, live
    elif text_travels:  # PostgreSQL carries text deltas between processes, nothing else
        assert set(live) <= {"text_delta"}, live
    else:
        assert live == [], "live events do not travel between SQLite processes"
    received = before_ids + after_ids
    assert received == sorted(set(received)), "no entry twice, in seq order"
    assert received[0] == before_ids[0] and received == list(range(received[0], received[-1] + 1))
    # Exactly what the log holds, as the same JSON, from whichever process.
    full = _all_entries(first, sid)
    sent = {f.id: f.data for f in before + after if f.id is not None}
    assert {seq: full[seq] for seq in sent} == sent
    assert max(full) == received[-1]

    # The finished turn released its lease: the other process takes the next prompt.
    _wait_idle(first, sid)
    nxt = second.client.post(f"/sessions/{sid}/prompt", json={"text": "next one"})
    assert nxt.status_code == 200 and "answer: 2" in nxt.text


@pytest.fixture
def two_sqlite(tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    db = str(tmp_path / "shared.db")
    first = Server(db, tmp_path)
    second = Server(db, tmp_path)
    yield first, second
    first.stop()
    second.stop()


def test_reconnect_to_the_same_process(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "one.db"), tmp_path)
    try:
        _reconnect_scenario(server, server, tmp_path)
    finally:
        server.stop()


def test_reconnect_to_another_process_on_sqlite(
    two_sqlite: tuple[Server, Server], tmp_path: Path
) -> None:
    _reconnect_scenario(*two_sqlite, tmp_path)


@pytest.mark.postgres
def test_reconnect_to_another_process_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    first = Server(pg_dsn, tmp_path, "--postgres")
    second = Server(pg_dsn, tmp_path, "--postgres")
    try:
        _reconnect_scenario(first, second, tmp_path, text_travels=True)
        assert pg.run(pg_dsn, "SELECT count(*) FROM entries")[0][0] > 0  # it ran on PostgreSQL
    finally:
        first.stop()
        second.stop()


def test_a_process_killed_mid_turn_leaves_a_session_another_recovers(
    two_sqlite: tuple[Server, Server], tmp_path: Path
) -> None:
    first, second = two_sqlite
    sid = first.client.post("/sessions", json={}).json()["id"]
    _until_tool_started(first.client, sid, "wait never")
    first.kill()
    resumed = second.client.post(f"/sessions/{sid}/prompt", json={"text": "after the crash"})
    assert resumed.status_code == 200
    got = list(frames(iter(resumed.text.splitlines())))
    kinds = [f.data["kind"] for f in got if f.event == "entry"]
    assert "interrupted" in kinds  # the dead process's step is recorded truthfully first
    assert got[-1].data["result"]["text"] == "answer: 3"
