"""A ``serve`` process killed mid-turn on PostgreSQL: another process takes over, not after the TTL.

The first process runs as if on another machine (``--host-name``), so the second cannot see
that its pid is gone: only the presence lock the database drops with the dead process's
connection can void its lease. The lease's TTL is ten minutes, far beyond every bound here:
a takeover that waited for it would fail the test. While the holder lives, the second process
refuses the session (409); after the SIGKILL it takes the next prompt. Nothing here measures time:
the second process is asked again until it accepts, within a bound far below the TTL.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ..store import pg
from .harness import Server, frames

pytestmark = pytest.mark.postgres

_TTL = "600"


def test_a_killed_process_s_session_is_taken_over_before_its_lease_expires(
    tmp_path: Path,
) -> None:
    with pg.schema(pg.server_dsn()) as dsn:
        holder = Server(
            dsn, tmp_path, "--postgres", "--lease-ttl", _TTL, "--host-name", "elsewhere.invalid"
        )
        taker = Server(dsn, tmp_path, "--postgres", "--lease-ttl", _TTL)
        try:
            sid = holder.client.post("/sessions", json={}).json()["id"]
            with holder.client.stream(
                "POST", f"/sessions/{sid}/prompt", json={"text": "wait never"}
            ) as response:
                for frame in frames(response.iter_lines()):
                    if frame.event == "tool_call_started":
                        break  # the turn now waits at a gate nobody opens
            busy = taker.client.post(f"/sessions/{sid}/prompt", json={"text": "too early"})
            assert busy.status_code == 409  # a live holder keeps its session
            holder.kill()  # SIGKILL: nothing released, the lease row stays for ten minutes
            for _ in range(600):  # a bound far below the TTL; each try is a real request
                resumed = taker.client.post(
                    f"/sessions/{sid}/prompt", json={"text": "after the crash"}
                )
                if resumed.status_code != 409:
                    break
                threading.Event().wait(0.1)
            assert resumed.status_code == 200, resumed.text
            got = list(frames(iter(resumed.text.splitlines())))
            kinds = [f.data["kind"] for f in got if f.event == "entry"]
            assert "interrupted" in kinds  # the dead process's step, recorded truthfully
            assert got[-1].data["result"]["text"] == "answer: 3"
        finally:
            holder.stop()
            taker.stop()
