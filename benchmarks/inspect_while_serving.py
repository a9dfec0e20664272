"""Whether inspecting a long session slows a server's other requests.

A scripted session of ``--entries`` entries is built on SQLite (as ``report_size.py`` builds
it; ``--db`` keeps the database to measure again). One in-process server (``create_app``, the
same event loop a ``serve`` process has) then answers, side by side in one run:

- ``--prompts`` prompts on a small other session, one after another, alone;
- the same while ``GET /sessions/{long}/{route}`` (``context`` or ``report``) of the long
  session runs, counting only the prompts that finished before the inspection did.

The figure is the ratio of the median prompt time during the inspection to the median alone
(1.0: as if nothing else ran; the issue asks for at most 2). Beside it, the longest the event
loop went without running a 1 ms timer during the inspection (``loop_lag_max_s``): a stalled
loop shows there, a loop slowed by the worker thread's share of the interpreter lock shows in
the ratio alone. Wall-clock seconds on the machine it runs on; the figures go to
``results/inspect_while_serving.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import httpx
from _results import save
from report_size import build, lookup, replies

import agentsession as ags


async def _prompt_times(client: httpx.AsyncClient, sid: str, count: int) -> list[float]:
    times = []
    for n in range(count):
        started = time.perf_counter()
        answer = await client.post(f"/sessions/{sid}/prompt", json={"text": f"turn {n}: hi"})
        assert answer.status_code == 200, answer.text
        times.append(time.perf_counter() - started)
    return times


async def _lag(done: asyncio.Event) -> float:
    """The longest a 1 ms sleep took beyond 1 ms until ``done``."""
    worst = 0.0
    while not done.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.001)
        worst = max(worst, time.perf_counter() - started - 0.001)
    return worst


async def measure(db: Path, long_id: str, route: str, prompts: int) -> dict[str, Any]:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=ags.ScriptedModel(replies),
        tools=[lookup],
        config=ags.Config(titles=False, retry_base_delay=0),
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    timeout = httpx.Timeout(3600.0)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://localhost", timeout=timeout
    ) as client:
        other = (await client.post("/sessions", json={})).json()["id"]
        await _prompt_times(client, other, 2)  # warm: the first turns import and cache
        alone = await _prompt_times(client, other, prompts)
        started = time.perf_counter()
        finished = asyncio.Event()
        lag = asyncio.create_task(_lag(finished))
        inspecting = asyncio.create_task(client.get(f"/sessions/{long_id}/{route}"))
        during: list[float] = []
        while not inspecting.done() and len(during) < prompts * 10:
            times = await _prompt_times(client, other, 1)
            if not inspecting.done():
                during += times
        inspected = await inspecting
        inspection_s = time.perf_counter() - started
        finished.set()
        lag_max = await lag
    await runtime.close()
    assert inspected.status_code == 200, inspected.text[:300]
    ratio = statistics.median(during) / statistics.median(alone) if during else None
    return {
        "route": route,
        "inspection_s": round(inspection_s, 2),
        "prompt_alone_median_s": round(statistics.median(alone), 4),
        "prompt_during_median_s": round(statistics.median(during), 4) if during else None,
        "prompts_during": len(during),
        "ratio": round(ratio, 2) if ratio is not None else None,
        "loop_lag_max_s": round(lag_max, 3),
    }


async def main_async(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="inspect-serving-"))
    db = Path(args.db) if args.db else folder / "long.db"
    if args.db and db.exists():
        store = ags.SQLiteStore(db)
        long_id = max(await store.list_sessions(), key=lambda i: i.next_seq).id
        await store.close()
    else:
        started = time.perf_counter()
        long_id, _ = await build(db, args.entries)
        print(f"built {args.entries} entries in {time.perf_counter() - started:.0f} s")
    figures: dict[str, Any] = {"entries": args.entries}
    for route in ("context", "report"):
        found = await measure(db, long_id, route, args.prompts)
        figures[route] = found
        print(route, found)
    save("inspect_while_serving", figures, command=" ".join(sys.argv))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--db", help="keep (or reuse) the long session's database here")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
