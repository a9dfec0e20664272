"""Whether inspecting a long session slows a server's other requests.

For each of ``--sizes``, a scripted session of that many entries is built on SQLite (as
``report_size.py`` builds it; ``--folder`` keeps the databases to measure again). Then one
in-process server per ``--where`` (``process``: long inspections answered in a child process,
the default; ``thread``: ``inspect_workers=0``, on a worker thread of the serving process)
answers, ``--repeats`` times, side by side in one run:

- ``--prompts`` prompts on a small other session, one after another, alone;
- the same while ``GET /sessions/{long}/{route}`` (``context``, then ``report``) of the long
  session runs, counting only the prompts that finished before the inspection did;

each prompt followed by a pause of ``PAUSE`` seconds.

The figure is the ratio of the median prompt time during the inspection to the median of the
prompts alone just before and just after it (1.0: as if nothing else ran; the issue asks for
at most 2). Beside it, the
longest the event loop went without running a 1 ms timer during the inspection
(``loop_lag_max_s``). The first inspection of a ``process`` server also starts its child.
Before the repeats, each route is inspected once with nothing else running, and the CPU
seconds the serving process spent on it are noted (``serving_cpu_s``: the benchmark's own
process, its in-process client included; a child's CPU is not in it).
Wall-clock seconds on the machine it runs on; the figures go to
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

#: Seconds between two prompts, alone and during an inspection alike: a person's pace, and
#: prompts spread over the whole inspection rather than crowded into its first seconds.
PAUSE = 0.25
#: The inspections measured, in order.
ROUTES = ("context", "report")


async def _prompt_times(client: httpx.AsyncClient, sid: str, count: int) -> list[float]:
    """Seconds each of ``count`` prompts took; every one is the same work (answered, no tool)."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        answer = await client.post(f"/sessions/{sid}/prompt", json={"text": "turn 0: hi"})
        assert answer.status_code == 200, answer.text
        times.append(time.perf_counter() - started)
        await asyncio.sleep(PAUSE)
    return times


async def _lag(done: asyncio.Event) -> float:
    """The longest a 1 ms sleep took beyond 1 ms until ``done``."""
    worst = 0.0
    while not done.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.001)
        worst = max(worst, time.perf_counter() - started - 0.001)
    return worst


async def measure(
    client: httpx.AsyncClient, other: str, long_id: str, route: str, prompts: int
) -> dict[str, Any]:
    """Prompts on ``other`` alone, while ``route`` of ``long_id`` runs, and alone again."""
    before = await _prompt_times(client, other, prompts)
    started = time.perf_counter()
    finished = asyncio.Event()
    lag = asyncio.create_task(_lag(finished))
    inspecting = asyncio.create_task(client.get(f"/sessions/{long_id}/{route}"))
    during: list[float] = []
    while not inspecting.done():
        times = await _prompt_times(client, other, 1)
        if not inspecting.done():
            during += times
        await asyncio.sleep(PAUSE)
    inspected = await inspecting
    inspection_s = time.perf_counter() - started
    finished.set()
    lag_max = await lag
    # Alone on both sides: on a shared machine the others' load drifts over minutes.
    alone = before + await _prompt_times(client, other, prompts)
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


async def _serving_cpu(
    client: httpx.AsyncClient, long_id: str, route: str, where: str
) -> dict[str, Any]:
    """The CPU seconds this process spends on one inspection of ``route``, nothing else running.

    In a child: taken twice, the second noted (the first may start the child and import).
    """
    spent = 0.0
    for _ in range(2 if where == "process" else 1):
        started = time.process_time()
        answer = await client.get(f"/sessions/{long_id}/{route}")
        spent = time.process_time() - started
        assert answer.status_code == 200, answer.text[:300]
    figures = {"route": route, "where": where, "serving_cpu_s": round(spent, 3)}
    print(figures, flush=True)
    return figures


async def serve(db: Path, long_id: str, where: str, args: argparse.Namespace) -> list[Any]:
    """One server whose inspections run ``where`` (``process``: a child; ``thread``: here).

    Each repeat measures ``context`` then ``report``; the first inspection in a child also
    starts that child (it stays for the next).
    """
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=ags.ScriptedModel(replies),
        tools=[lookup],
        config=ags.Config(titles=False, retry_base_delay=0),
    )
    app = ags.server.create_app(runtime, inspect_workers=1 if where == "process" else 0)
    found = []
    transport = httpx.ASGITransport(app=app)
    timeout = httpx.Timeout(3600.0)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=transport, base_url="http://localhost", timeout=timeout
        ) as client,
    ):
        other = (await client.post("/sessions", json={})).json()["id"]
        await _prompt_times(client, other, 2)  # warm: the first turns import and cache
        found += [await _serving_cpu(client, long_id, route, where) for route in ROUTES]
        for repeat in range(args.repeats):
            for route in ROUTES:
                figures = await measure(client, other, long_id, route, args.prompts)
                figures |= {"where": where, "repeat": repeat + 1}
                print(figures, flush=True)
                found.append(figures)
    await runtime.close()
    return found


async def long_session(folder: Path, entries: int) -> tuple[Path, str]:
    """The database holding a session of ``entries`` entries (built when not kept)."""
    db = folder / f"inspect-{entries}.db"
    if db.exists():
        store = ags.SQLiteStore(db)
        long_id = max(await store.list_sessions(), key=lambda i: i.next_seq).id
        await store.close()
        return db, long_id
    started = time.perf_counter()
    long_id, _ = await build(db, entries)
    print(f"built {entries} entries in {time.perf_counter() - started:.0f} s", flush=True)
    return db, long_id


async def main_async(args: argparse.Namespace) -> None:
    folder = Path(args.folder) if args.folder else Path(tempfile.mkdtemp(prefix="inspect-"))
    folder.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {}
    for entries in (int(n) for n in args.sizes.split(",")):
        db, long_id = await long_session(folder, entries)
        runs = []
        for where in args.where.split(","):
            runs += await serve(db, long_id, where, args)
        figures[str(entries)] = runs
    save("inspect_while_serving", figures, command=" ".join(sys.argv))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="entries of the long session")
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--where", default="process,thread", help="process, thread or both")
    parser.add_argument("--folder", help="keep (or reuse) the long sessions' databases here")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
