"""Cancel from any process: a cancel sent to one server process stops a turn another runs.

The turn waits at a gate that never opens (a tool that waits for a file), so it can only end by
being cancelled; the stream of the process running it then ends with ``turn_cancelled`` and the
log records the step as interrupted. The answer is 202 (the request is handed to the process
running the turn through the store) and names no host or process. With no turn running the
answer is 409. On PostgreSQL three processes take turns: each cancel goes to another process
than the one running the turn.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import Frame, Server, frames


@pytest.fixture
def two_sqlite(tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    db = str(tmp_path / "shared.sqlite")
    first, second = Server(db, tmp_path), Server(db, tmp_path)
    yield first, second
    first.stop()
    second.stop()


def _cancel_elsewhere(running: Server, other: Server, gate: str) -> None:
    sid = running.client.post("/sessions", json={}).json()["id"]
    seen: list[Frame] = []
    body = {"text": f"wait {gate}"}
    with running.client.stream("POST", f"/sessions/{sid}/prompt", json=body) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        for frame in frames(lines):
            seen.append(frame)
            if frame.event == "tool_call_started":
                break
        answer = other.client.post(f"/sessions/{sid}/cancel")
        assert answer.status_code == 202, answer.text
        assert answer.json()["cancelled"] is True
        for leak in (socket.gethostname(), str(running.process.pid)):
            assert leak not in answer.text
        seen.extend(frames(lines))  # ends when the running process stops the turn
    assert seen[-1].event == "turn_cancelled"
    kinds = [f.data["kind"] for f in seen if f.id is not None]
    assert "interrupted" in kinds
    nothing = other.client.post(f"/sessions/{sid}/cancel")
    assert nothing.status_code == 409
    # The session takes the next prompt at once, on either process: no stale request cancels it.
    after = other.client.post(f"/sessions/{sid}/prompt", json={"text": "one two"})
    assert list(frames(iter(after.text.splitlines())))[-1].event == "turn_finished"


def test_a_cancel_sent_to_another_process_stops_the_turn_on_sqlite(
    two_sqlite: tuple[Server, Server],
) -> None:
    first, second = two_sqlite
    _cancel_elsewhere(first, second, "never-1")
    _cancel_elsewhere(second, first, "never-2")


@pytest.mark.postgres
def test_a_cancel_sent_to_any_of_three_processes_stops_the_turn_on_postgres(
    pg_dsn: str, tmp_path: Path
) -> None:
    servers = [Server(pg_dsn, tmp_path, "--postgres") for _ in range(3)]
    try:
        for attempt in range(20):
            running = servers[attempt % 3]
            other = servers[(attempt + 1 + attempt // 3 % 2) % 3]
            assert other is not running
            _cancel_elsewhere(running, other, f"never-pg-{attempt}")
    finally:
        for server in servers:
            server.stop()
