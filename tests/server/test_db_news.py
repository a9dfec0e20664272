"""Followers on PostgreSQL hear every writer: the database's trigger notifies each commit.

A server process's ``/events`` follower waits on ``LISTEN``. The entries here are written by a
plain library ``Runtime`` in the test process — not a server, so nothing but the database's
trigger (schema 7) can say that they were committed. The server polls at most every ten
minutes (``--poll-interval 600``), and while it listens a follower reads the log only on news:
without the trigger the follower would wait for good, which the generous bound turns into a
failure. No timing is measured.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest

import agentsession as ags

from ..store import pg
from .harness import Frame, Server, frames

pytestmark = pytest.mark.postgres

TURNS = 3


def _follow(
    client: httpx.Client, sid: str, after: int, got: list[Frame], finished: threading.Semaphore
) -> None:
    """Read the session's ``/events`` until ``TURNS`` turns ended; release once per turn."""
    headers = {"Last-Event-ID": str(after)}
    with client.stream("GET", f"/sessions/{sid}/events", headers=headers) as response:
        assert response.status_code == 200
        ended = 0
        for frame in frames(response.iter_lines()):
            got.append(frame)
            if frame.event == "turn_finished":
                ended += 1
                finished.release()
                if ended == TURNS:
                    return


async def _prompt(dsn: str, sid: str, text: str) -> None:
    """One turn by a library user: its own runtime, store and connections."""
    runtime = ags.Runtime(
        store=ags.PostgresStore(dsn),
        model=ags.ScriptedModel([f"answer to {text}"]),
        config=ags.Config(titles=False),
    )
    try:
        session = await runtime.open_session(sid)
        await session.prompt(text)
        await session.close()
    finally:
        await runtime.close()


async def _create(dsn: str) -> tuple[str, int]:
    runtime = ags.Runtime(
        store=ags.PostgresStore(dsn),
        model=ags.ScriptedModel(["warm"]),
        config=ags.Config(titles=False),
    )
    try:
        session = await runtime.create_session()
        await session.prompt("before anyone follows")
        records = await runtime.store.read(session.id)
        await session.close()
        return session.id, records[-1].seq
    finally:
        await runtime.close()


def test_a_follower_hears_entries_a_library_runtime_commits(tmp_path: Path) -> None:
    with pg.schema(pg.server_dsn()) as dsn:
        sid, last = asyncio.run(_create(dsn))
        server = Server(dsn, tmp_path, "--postgres", "--poll-interval", "600")
        got: list[Frame] = []
        finished = threading.Semaphore(0)
        follower = threading.Thread(
            target=_follow, args=(server.client, sid, last, got, finished), daemon=True
        )
        try:
            follower.start()
            for n in range(TURNS):
                asyncio.run(_prompt(dsn, sid, f"turn {n}"))
                # Generous: only news can bring it, and news comes within milliseconds.
                assert finished.acquire(timeout=120), f"turn {n} never reached the follower"
            follower.join(120)
            assert not follower.is_alive()
        finally:
            server.stop()
    answers = [f.data["result"]["text"] for f in got if f.event == "turn_finished"]
    assert answers == [f"answer to turn {n}" for n in range(TURNS)]
    ids = [f.id for f in got if f.id is not None]
    assert ids == list(range(last + 1, last + 1 + len(ids)))  # every entry once, in order
