"""Where one turn's time goes: cProfile of ``session.prompt()`` at ``--history`` earlier turns.

The same turn as the turn-cost figure (prompt → tool call → tool → answer, on SQLite, the
default Config). The README quotes the functions with the most time of their own and the
package's own share. Usage: ``python benchmarks/profile_turn.py [--history 1000]``; writes
``benchmarks/results/profile_turn.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save
from _systems import AgentSession


async def profile(history: int, turns: int) -> dict[str, Any]:
    system = AgentSession()
    with tempfile.TemporaryDirectory() as tmp:
        await system.setup(Path(tmp), history)
        for i in range(10):
            await system.turn(i)
        # Unprofiled first: how a turn's CPU splits between the event loop's thread and the
        # others (the store's worker thread, the tool's daemon thread; cProfile sees only the
        # first).
        cpu, main_cpu = time.process_time(), time.thread_time()
        for i in range(turns):
            await system.turn(i)
        cpu, main_cpu = time.process_time() - cpu, time.thread_time() - main_cpu
        split = {
            "process_cpu_ms_per_turn": cpu / turns * 1000,
            "event_loop_thread_cpu_ms_per_turn": main_cpu / turns * 1000,
            "other_threads_cpu_ms_per_turn": (cpu - main_cpu) / turns * 1000,
        }
        profiler = cProfile.Profile()
        cpu = time.process_time()
        profiler.enable()
        for i in range(turns):
            await system.turn(i)
        profiler.disable()
        cpu = time.process_time() - cpu
        await system.close()
    stats = pstats.Stats(profiler)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    rows = []
    for (file, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        short = file.split("/src/")[-1] if "/src/" in file else Path(file).name
        rows.append((f"{short}:{line}({name})", calls, tottime, cumtime))
    own = sorted(rows, key=lambda r: -r[2])[:15]
    package = sum(r[2] for r in rows if r[0].startswith("agentsession/"))
    wanted = {
        "admission (boundary, projection, window, preflight)": "engine/admission.py",
        "store appends (event loop's part: encoding, the hop)": "store/sqlite.py",
        "fingerprint": "inspection/rebuild.py",
        "request digest": "agentsession/request.py",
        "token count (preflight)": "budget/__init__.py",
        "tool run": "_daemon.py",
    }
    parts = {}
    for label, marker in wanted.items():
        best = max((r[3] for r in rows if marker in r[0]), default=0.0)
        parts[label] = best / turns * 1000
    return {
        "history": history,
        "turns": turns,
        "cpu_ms_per_turn_profiled": cpu / turns * 1000,
        "unprofiled": split,
        "package_share_of_own_time": package / total if total else 0.0,
        "top_own_time": [
            {"function": f, "calls_per_turn": c / turns, "own_ms_per_turn": t / turns * 1000}
            for f, c, t, _ in own
        ],
        "largest_cumulative_ms_per_turn": parts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    figures = asyncio.run(profile(args.history, args.turns))
    for row in figures["top_own_time"]:
        print(f"{row['own_ms_per_turn']:7.3f} ms  {row['function']}")
    save(
        "profile_turn",
        figures,
        command=" ".join(["python benchmarks/profile_turn.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
