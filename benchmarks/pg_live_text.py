"""Live text between ``serve`` processes on PostgreSQL (issue 41): what idle followers and a turn
cost.

    .ci/with-postgres .venv/bin/python benchmarks/pg_live_text.py --followers 1000 --rounds 11

Two applications (``create_app``), each over a store of its own on one fresh database, stand
for two server processes: A runs the turns, B has the followers.

- Idle followers: ``--followers`` sessions, each followed (``follow_log``, the ``/events``
  loop) on A or B alternately, after its last entry. Once every follower has read and settled,
  the database's committed transactions (``pg_stat_database.xact_commit``) are counted over
  ``--idle-seconds``, less the reads of the counter itself. Runs on code without live text
  between processes too (``PYTHONPATH`` pointing at another ``src``): the before/after figure.
- A turn: a model that streams its answer in ``--chunks`` pieces of 16 characters, one every
  ``--chunk-ms`` milliseconds (as a provider does), through A's prompt route; with a follower
  of that session on B and without, next to each other in each of ``--rounds`` rounds, which
  goes first alternating. Per turn: this process's CPU (both applications: B's forwarding is
  in it, so it bounds the turn's own from above), the database server's CPU, the ``NOTIFY``
  statements and payloads the live relays sent, the text deltas B's follower received, wall.

Writes ``benchmarks/results/pg_live_text.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _pg import ServerCPU, fresh_database
from _results import save

import agentsession as ags
from agentsession.providers.base import ModelEvent, ModelTextDelta
from agentsession.server.follow import follow_log

TOKEN = "bench-token-0123456789abcdef"


class PacedModel(ags.ScriptedModel):
    """The scripted model, its text streamed at a provider's pace."""

    def __init__(self, text: str, pause: float) -> None:
        super().__init__(lambda request: text, name="scripted:paced")
        self._pause = pause

    async def stream(self, request: ags.Request) -> AsyncIterator[ModelEvent]:
        async for event in super().stream(request):
            if isinstance(event, ModelTextDelta):
                await asyncio.sleep(self._pause)
            yield event


async def _sql(dsn: str, query: str) -> list[tuple[Any, ...]]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cursor = await conn.execute(query)
        return list(await cursor.fetchall())


async def _commits(dsn: str) -> int:
    rows = await _sql(
        dsn,
        "SELECT pg_stat_clear_snapshot(), xact_commit FROM pg_stat_database"
        " WHERE datname = current_database()",
    )
    return int(rows[0][1])


def _app(dsn: str, model: ags.Model, tmp: Path) -> tuple[Any, ags.Runtime]:
    runtime = ags.Runtime(
        store=ags.PostgresStore(dsn),
        model=model,
        project_dir=tmp,
        config=ags.Config(titles=False),
    )
    return ags.server.create_app(runtime, open_tokens=[TOKEN]), runtime


def _client(app: Any) -> Any:
    import httpx

    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )


async def _settle(frames: AsyncIterator[bytes], into: list[bytes]) -> None:
    async for frame in frames:
        into.append(frame)


async def idle_followers(apps: list[Any], count: int, seconds: float, dsn: str) -> dict[str, Any]:
    """Committed transactions per second while ``count`` followers wait and nothing happens."""
    runtime = apps[0].state.server.runtime
    ids = []
    for _ in range(count):
        session = await runtime.create_session()
        ids.append(session.id)
        await session.close()
    received: list[bytes] = []
    tasks = []
    for n, sid in enumerate(ids):
        state = apps[n % 2].state.server
        frames = follow_log(state.runtime.store, state.notifier, sid, -1)
        tasks.append(asyncio.create_task(_settle(frames, received)))
    try:
        # Every follower reads once, looks once more at its first quiet moment (15 s), and the
        # backends' statistics reach the counter (an idle backend reports within 10 s).
        await asyncio.sleep(40)
        before = await _commits(dsn)
        await asyncio.sleep(seconds)
        after = await _commits(dsn)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    counted = after - before - 1  # the first read of the counter commits inside the window
    return {
        "followers": count,
        "seconds": seconds,
        "transactions": counted,
        "transactions_per_second": counted / seconds,
    }


def _relays(apps: list[Any]) -> tuple[int, int]:
    """NOTIFY statements and payloads the applications' live relays sent (0 without relays)."""
    relays = [getattr(app.state.server.notifier, "relay", None) for app in apps]
    return (
        sum(getattr(r, "statements", 0) for r in relays),
        sum(getattr(r, "sent", 0) for r in relays),
    )


async def one_turn(apps: list[Any], sid: str, follow: bool, server: ServerCPU) -> dict[str, float]:
    b = apps[1].state.server
    got: list[bytes] = []
    follower = None
    if follow:
        last = await b.runtime.store.last(sid, [])
        after = last.seq if last is not None else -1
        follower = asyncio.create_task(
            _settle(follow_log(b.runtime.store, b.notifier, sid, after), got)
        )
        await asyncio.sleep(0.5)  # it asked for the text (one want), as a follower waiting would
    statements, payloads = _relays(apps)
    cpu, db, wall = time.process_time(), server.seconds(), time.perf_counter()
    async with _client(apps[0]) as client:
        answer = await client.post(f"/sessions/{sid}/prompt", json={"text": "go"}, timeout=600)
    assert answer.status_code == 200, answer.text
    figures = {
        "cpu_ms": (time.process_time() - cpu) * 1000,
        "server_cpu_ms": (server.seconds() - db) * 1000,
        "wall_ms": (time.perf_counter() - wall) * 1000,
    }
    if follower is not None:
        await asyncio.sleep(0.5)  # the entries reach the follower
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
    sent_statements, sent_payloads = _relays(apps)
    figures["notify_statements"] = sent_statements - statements
    figures["notify_payloads"] = sent_payloads - payloads
    figures["deltas_received"] = sum(frame.startswith(b"event: text_delta") for frame in got)
    return figures


async def turns(apps: list[Any], rounds: int, server: ServerCPU) -> dict[str, Any]:
    runtime = apps[0].state.server.runtime
    sessions = {}
    for label in ("with_follower", "without"):
        session = await runtime.create_session()
        sessions[label] = session.id
        await session.close()
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in sessions}
    for label, sid in sessions.items():  # warm-up, not counted
        await one_turn(apps, sid, label == "with_follower", server)
    for round_ in range(rounds):
        order = list(sessions.items())
        for label, sid in order if round_ % 2 == 0 else order[::-1]:
            runs[label].append(await one_turn(apps, sid, label == "with_follower", server))
        print(f"round {round_ + 1} of {rounds}", flush=True)
    figures: dict[str, Any] = {"runs": runs}
    for measure in ("cpu_ms", "server_cpu_ms", "wall_ms"):
        with_ = [r[measure] for r in runs["with_follower"]]
        without = [r[measure] for r in runs["without"]]
        figures[f"{measure}_median"] = {
            "with_follower": statistics.median(with_),
            "without": statistics.median(without),
        }
        figures[f"{measure}_ratio_paired_median"] = statistics.median(
            a / b for a, b in zip(with_, without, strict=True)
        )
    for measure in ("notify_statements", "notify_payloads", "deltas_received"):
        figures[f"{measure}_median"] = {
            label: statistics.median(r[measure] for r in runs[label]) for label in runs
        }
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--followers", type=int, default=1000)
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--chunks", type=int, default=100)
    parser.add_argument("--chunk-ms", type=float, default=10.0)
    parser.add_argument("--skip-turns", action="store_true", help="idle followers only")
    args = parser.parse_args()
    dsn = fresh_database("live_text")
    server = ServerCPU(dsn)
    text = ("A provider streams its answer a few words at a time. " * 40)[: 16 * args.chunks]
    figures: dict[str, Any] = {"chunks": args.chunks, "chunk_ms": args.chunk_ms}
    with tempfile.TemporaryDirectory() as folder:
        made = [_app(dsn, PacedModel(text, args.chunk_ms / 1000), Path(folder)) for _ in range(2)]
        apps = [app for app, _ in made]
        async with contextlib.AsyncExitStack() as running:
            for app in apps:
                await running.enter_async_context(app.router.lifespan_context(app))
            figures["idle"] = await idle_followers(apps, args.followers, args.idle_seconds, dsn)
            print(figures["idle"], flush=True)
            if not args.skip_turns:
                figures["turn"] = await turns(apps, args.rounds, server)
        for _, runtime in made:
            await runtime.close()
    summary = {k: v for k, v in figures.get("turn", {}).items() if k != "runs"}
    print(figures["idle"], summary)
    save("pg_live_text", figures, command=" ".join(sys.argv))


if __name__ == "__main__":
    asyncio.run(main())
