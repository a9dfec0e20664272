"""Live text between server processes on PostgreSQL: a follower of one process sees, without
ids, the text deltas of a turn another process runs, then the entries and ``turn_finished``.

Two server processes share one database. The turn runs on the first (``slow NAME``: the model
streams its whole answer, then holds its reply until the test opens the gate NAME), the
follower reads ``/events`` on the second. The gate opens only once the follower got a text
delta, so that delta can only have come over the database, before the answer was committed.
Every frame is validated against the OpenAPI document by the SSE reader. Nothing is timed:
each wait is for an event, with a generous bound.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from .harness import Frame, Server, frames

pytestmark = pytest.mark.postgres

ANSWER = "streamed while gate {gate} was shut, then finished"


def _follow(
    client: httpx.Client, sid: str, after: int, got: list[Frame], first_delta: threading.Event
) -> None:
    """Read the session's ``/events`` after ``after`` until a ``turn_finished``."""
    headers = {"Last-Event-ID": str(after)}
    with client.stream("GET", f"/sessions/{sid}/events", headers=headers) as response:
        assert response.status_code == 200
        for frame in frames(response.iter_lines()):
            got.append(frame)
            if frame.event == "text_delta":
                first_delta.set()
            if frame.event == "turn_finished":
                return


def _prompt(client: httpx.Client, sid: str, text: str, got: list[Frame]) -> None:
    with client.stream("POST", f"/sessions/{sid}/prompt", json={"text": text}) as response:
        assert response.status_code == 200
        got.extend(frames(response.iter_lines()))


def _last_seq(server: Server, sid: str) -> int:
    """The last seq of a session that ran one turn."""
    with server.client.stream("GET", f"/sessions/{sid}/events?after=-1") as response:
        last = -1
        for frame in frames(response.iter_lines()):
            if frame.id is not None:
                last = frame.id
            if frame.event == "turn_finished":
                return last
    raise AssertionError("the warm-up turn never finished")


def _turn_seen_elsewhere(
    running: Server, following: Server, sid: str, after: int, gate: Path
) -> list[Frame]:
    """Run ``slow`` on ``running`` while ``following`` follows after ``after``; its frames."""
    got: list[Frame] = []
    first_delta = threading.Event()
    follower = threading.Thread(
        target=_follow, args=(following.client, sid, after, got, first_delta), daemon=True
    )
    follower.start()
    prompted: list[Frame] = []
    prompt = threading.Thread(
        target=_prompt, args=(running.client, sid, f"slow {gate.name}", prompted), daemon=True
    )
    prompt.start()
    try:
        # Generous: the delta comes within milliseconds of the follower asking for it.
        assert first_delta.wait(120), f"no live text reached the other process: {got}"
    finally:
        gate.touch()  # the reply commits only now
    follower.join(120)
    prompt.join(120)
    assert not follower.is_alive() and not prompt.is_alive()
    assert prompted[-1].event == "turn_finished"
    return got


def test_a_follower_on_another_process_gets_live_text_then_entries(
    pg_dsn: str, tmp_path: Path
) -> None:
    running = Server(pg_dsn, tmp_path, "--postgres")
    following = Server(pg_dsn, tmp_path, "--postgres")
    try:
        sid = running.client.post("/sessions", json={}).json()["id"]
        warm = running.client.post(f"/sessions/{sid}/prompt", json={"text": "warm up"})
        assert warm.status_code == 200
        after = _last_seq(following, sid)
        for n in range(2):  # the second turn: the follower's process asked before, once
            gate = tmp_path / f"live-{sid}-{n}"
            got = _turn_seen_elsewhere(running, following, sid, after, gate)
            answer = ANSWER.format(gate=gate.name)
            deltas = [f for f in got if f.event == "text_delta"]
            assert deltas and all(f.id is None for f in deltas)
            # Text that continues, never repeats: the whole answer or the start of it.
            text = "".join(f.data["text"] for f in deltas)
            assert text and answer.startswith(text), (text, answer)
            # The deltas come before the answer's entry, which carries the whole text.
            answered = next(
                i
                for i, f in enumerate(got)
                if f.event == "entry" and f.data["entry"].get("content") == answer
            )
            assert max(got.index(f) for f in deltas) < answered
            ids = [f.id for f in got if f.id is not None]
            assert ids == list(range(after + 1, after + 1 + len(ids)))  # each entry once, in order
            after = ids[-1]
            assert all(f.event == "entry" for f in got if f.id is not None)
            assert got[-1].event == "turn_finished"
            assert got[-1].data["result"]["text"] == answer
            # Only text travels: tool calls and other live frames stay in their process.
            assert {f.event for f in got if f.id is None} <= {"text_delta", "turn_finished"}
    finally:
        running.stop()
        following.stop()
