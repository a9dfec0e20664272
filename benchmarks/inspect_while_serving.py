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

The first figure (``ratio``) is the median prompt time during the inspection over the median
of the prompts alone just before and just after it (1.0: as if nothing else ran; the issue asks
for at most 2). On a shared machine the prompt alone drifts several-fold from one minute to the
next, and an inspection of 100,000 entries lasts minutes, so that ratio mostly measures the
drift. The second (``paired_ratio``, ``process`` path only) compares like with like: during the
inspection the prompts alternate between the child working and the child held (``SIGSTOP``,
then ``SIGCONT``: the inspection is in flight, it takes no CPU), each "working" prompt paired
with the "held" one right after it, under the same load; the figure is the median of the pairs'
ratios. Beside them, the longest the event loop went without running a 1 ms timer during the
inspection (``loop_lag_max_s``), split by the pairs' halves (``loop_lag_working_s``,
``loop_lag_held_s``), and the CPU the loop's own thread spent inside its longest stall
(``loop_busy_s``): a stall with little CPU is the process waiting for a core, one with as much
CPU as wall time is work on the loop; and the longest garbage collection of the serving process
(``gc_longest_s``), work on the loop that no request asked for. The first inspection of a
``process`` server also starts its child.
Before the repeats, each route is inspected once with nothing else running, and the CPU
seconds the serving process spent on it are noted (``serving_cpu_s``: the benchmark's own
process, its in-process client included; a child's CPU is not in it).
Wall-clock seconds on the machine it runs on; the figures go to
``results/inspect_while_serving.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import multiprocessing
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import httpx
from _results import save
from report_size import build, lookup, replies

import agentsession as ags
from agentsession.providers.base import ModelEvent
from agentsession.request import Request

#: Seconds between two prompts, alone and during an inspection alike: a person's pace, and
#: prompts spread over the whole inspection rather than crowded into its first seconds.
PAUSE = 0.25
#: The inspections measured, in order.
ROUTES = ("context", "report")


class _Forgetful(ags.ScriptedModel):
    """The scripted model without its record of every request it got (a test's aid).

    Kept, that record grows the serving process's heap by a request and its window per prompt
    (70,000 objects per 200 prompts), and the garbage collections that walk it grew with the
    run; a real model keeps nothing.
    """

    async def stream(self, request: Request) -> AsyncIterator[ModelEvent]:
        async for event in super().stream(request):
            yield event
        self.requests.clear()


async def _prompt_time(client: httpx.AsyncClient, sid: str) -> float:
    """Seconds one prompt took; every one is the same work (answered, no tool)."""
    started = time.perf_counter()
    answer = await client.post(f"/sessions/{sid}/prompt", json={"text": "turn 0: hi"})
    assert answer.status_code == 200, answer.text
    return time.perf_counter() - started


async def _prompt_times(client: httpx.AsyncClient, sid: str, count: int) -> list[float]:
    """Seconds each of ``count`` prompts took, ``PAUSE`` after each."""
    times = []
    for _ in range(count):
        times.append(await _prompt_time(client, sid))
        await asyncio.sleep(PAUSE)
    return times


class _Lag:
    """How late a 1 ms timer ran, the longest per window (``window`` names the current one).

    For the longest stall of all it also keeps the CPU the loop's thread spent in it, and the
    longest garbage collection of this process (the loop's own work that no request asked for).
    """

    def __init__(self) -> None:
        self.window = "during"
        self.worst: dict[str, float] = {}
        self.busy = 0.0
        self.collection = 0.0
        self._worst_all = 0.0
        self._collecting = 0.0

    def collected(self, phase: str, info: dict[str, int]) -> None:
        """A ``gc.callbacks`` entry: the longest collection's wall time."""
        if phase == "start":
            self._collecting = time.perf_counter()
        elif self._collecting:
            self.collection = max(self.collection, time.perf_counter() - self._collecting)

    async def run(self, done: asyncio.Event) -> None:
        while not done.is_set():
            started, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(0.001)
            late = time.perf_counter() - started - 0.001
            self.worst[self.window] = max(self.worst.get(self.window, 0.0), late)
            if late > self._worst_all:
                self._worst_all, self.busy = late, time.thread_time() - cpu


def _children() -> list[int]:
    """The pids of this process's children: the pool's inspecting process, when started."""
    return [p.pid for p in multiprocessing.active_children() if p.pid is not None]


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


async def _paired(
    client: httpx.AsyncClient, sid: str, inspecting: asyncio.Task[Any], lag: _Lag
) -> tuple[list[float], list[tuple[float, float]]]:
    """Prompts until the inspection ends: all with the child working, and (working, held) pairs.

    Each round: one prompt with the child working and (when there is a child to hold) one with
    it held, each followed by a pause with it working; the order alternates from one round to
    the next, so a trend in the machine's load weighs on both halves alike. A prompt that
    outlived the inspection is not counted.
    """
    during: list[float] = []
    pairs: list[tuple[float, float]] = []
    rounds = 0
    while not inspecting.done():
        found: dict[bool, float] = {}
        for held in (False, True) if rounds % 2 == 0 else (True, False):
            children = _children() if held else []
            if held and not children:
                continue  # the child is not started yet
            _signal(children, signal.SIGSTOP)
            lag.window = "held" if held else "working"
            try:
                took = await _prompt_time(client, sid)
            finally:
                _signal(children, signal.SIGCONT)
                lag.window = "working"
            if inspecting.done():
                break
            found[held] = took
            await asyncio.sleep(PAUSE)
        if False in found:
            during.append(found[False])
        if len(found) == 2:
            pairs.append((found[False], found[True]))
        rounds += 1
    return during, pairs


async def measure(
    client: httpx.AsyncClient, other: str, long_id: str, route: str, prompts: int
) -> dict[str, Any]:
    """Prompts on ``other`` alone, while ``route`` of ``long_id`` runs, and alone again."""
    before = await _prompt_times(client, other, prompts)
    started = time.perf_counter()
    finished = asyncio.Event()
    lag = _Lag()
    gc.callbacks.append(lag.collected)
    ticking = asyncio.create_task(lag.run(finished))
    inspecting = asyncio.create_task(client.get(f"/sessions/{long_id}/{route}"))
    try:
        during, pairs = await _paired(client, other, inspecting, lag)
        inspected = await inspecting
    finally:
        gc.callbacks.remove(lag.collected)
    inspection_s = time.perf_counter() - started
    finished.set()
    await ticking
    lag_max = max(lag.worst.values())
    # Alone on both sides: on a shared machine the others' load drifts over minutes.
    alone = before + await _prompt_times(client, other, prompts)
    assert inspected.status_code == 200, inspected.text[:300]
    ratio = statistics.median(during) / statistics.median(alone) if during else None
    paired = statistics.median(w / h for w, h in pairs) if pairs else None
    return {
        "route": route,
        "inspection_s": round(inspection_s, 2),
        "prompt_alone_median_s": round(statistics.median(alone), 4),
        "prompt_during_median_s": round(statistics.median(during), 4) if during else None,
        "prompts_during": len(during),
        "ratio": round(ratio, 2) if ratio is not None else None,
        "pairs": len(pairs),
        "paired_ratio": round(paired, 2) if paired is not None else None,
        "pair_working_median_s": _median([w for w, _ in pairs]),
        "pair_held_median_s": _median([h for _, h in pairs]),
        "loop_lag_max_s": round(lag_max, 3),
        "loop_lag_working_s": round(lag.worst.get("working", 0.0), 3),
        "loop_lag_held_s": round(lag.worst["held"], 3) if "held" in lag.worst else None,
        "loop_busy_s": round(lag.busy, 3),
        "gc_longest_s": round(lag.collection, 3),
    }


def _median(times: list[float]) -> float | None:
    return round(statistics.median(times), 4) if times else None


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
        model=_Forgetful(replies),
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
        if args.serving_cpu:
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
    _summary(figures)


def _summary(figures: dict[str, list[dict[str, Any]]]) -> None:
    """Per size, path and route: the ratios' medians and how many runs were within 2×."""
    for entries, runs in figures.items():
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for run in runs:
            if "ratio" in run:
                groups.setdefault((run["where"], run["route"]), []).append(run)
        for (where, route), found in groups.items():
            line = [f"{entries} {where} {route}: {len(found)} runs"]
            for name in ("ratio", "paired_ratio"):
                values = [r[name] for r in found if r[name] is not None]
                if values:
                    within = sum(v <= 2 for v in values)
                    line.append(
                        f"{name} median {statistics.median(values):.2f}"
                        f" ({min(values):.2f}-{max(values):.2f}), {within} of {len(values)} <= 2"
                    )
            lags = [r["loop_lag_max_s"] for r in found]
            line.append(f"loop lag {min(lags):.3f}-{max(lags):.3f} s")
            print("; ".join(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="entries of the long session")
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--where", default="process,thread", help="process, thread or both")
    parser.add_argument("--folder", help="keep (or reuse) the long sessions' databases here")
    parser.add_argument(
        "--no-serving-cpu",
        dest="serving_cpu",
        action="store_false",
        help="skip the inspections alone that note the serving process's CPU",
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
