"""Figure 1 — the cost of one turn against the number of earlier turns, beside the peers.

One turn = the user's prompt → the model asks for a tool → the tool runs → the model answers,
durable on a file, with a fake model that answers at once (so only the framework is measured).
Each system gets its history of ``N`` earlier turns written straight into its own storage (see
``_systems.py``), then a few warm-up turns, then ``--rounds`` rounds in which every system runs
one turn, in a shuffled order each round: the systems share the machine's noise alike. Wall
time and CPU time (all threads of the process) are taken per turn; the figure is the median.
A system whose turns at one size take longer than ``--budget`` seconds in total stops early
there (at least one measured turn); the table says how many turns each cell rests on.

Ratios are against ``openai-agents`` ``Runner.run`` with ``SQLiteSession(limit=60)``, the
fastest peer. The peers that read every stored item at each turn (openai-agents' default
session, LangGraph, pydantic-ai) run up to ``--whole-history-max`` earlier turns (10,000): at
100,000 one of their turns takes minutes. Usage: ``python benchmarks/turn_cost.py
[--sizes 10,100,1000,10000,100000]``; writes
``benchmarks/results/turn_cost.json``.
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save, turn_cost_arguments
from _systems import System, all_systems

REFERENCE = "openai-agents limit=60"


async def measure_size(
    n: int, rounds: int, budget: float, warmup: int, whole_max: int
) -> dict[str, Any]:
    # Systems that read their whole history at every turn take minutes per turn at 100,000
    # turns (and grow linearly): above ``whole_max`` they are left out, and the table says so.
    systems = [s for s in all_systems() if n <= whole_max or not s.whole_history]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        live: list[System] = []
        for system in systems:
            folder = Path(tmp) / system.name.replace(" ", "_").replace("=", "")
            folder.mkdir()
            started = time.perf_counter()
            await system.setup(folder, n)
            out[system.name] = {"setup_s": time.perf_counter() - started, "wall": [], "cpu": []}
            live.append(system)
            print(f"  N={n:,}: {system.name} set up in {out[system.name]['setup_s']:.1f} s")
        turn = 1
        for system in live:
            for _ in range(warmup):
                await system.turn(turn)
                turn += 1
        spent = dict.fromkeys((s.name for s in live), 0.0)
        for _ in range(rounds):
            order = list(live)
            random.shuffle(order)
            gc.collect()
            for system in order:
                cell = out[system.name]
                if cell["wall"] and spent[system.name] > budget:
                    continue
                wall, cpu = time.perf_counter(), time.process_time()
                await system.turn(turn)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                turn += 1
                spent[system.name] += wall
                cell["wall"].append(wall)
                cell["cpu"].append(cpu)
        for system in live:
            await system.close()
    for cell in out.values():
        cell["turns"] = len(cell["wall"])
        cell["wall_ms"] = statistics.median(cell["wall"]) * 1000
        cell["cpu_ms"] = statistics.median(cell["cpu"]) * 1000
    ref = out[REFERENCE]
    for cell in out.values():
        cell["wall_ratio"] = cell["wall_ms"] / ref["wall_ms"]
        cell["cpu_ratio"] = cell["cpu_ms"] / ref["cpu_ms"]
        del cell["wall"], cell["cpu"]
    return out


def main() -> None:
    args = turn_cost_arguments(__doc__.splitlines()[0])
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {"reference": REFERENCE, "sizes": {}}
    for n in sizes:
        cells = asyncio.run(
            measure_size(n, args.rounds, args.budget, args.warmup, args.whole_history_max)
        )
        results["sizes"][str(n)] = cells
        for name, cell in cells.items():
            print(
                f"N={n:>7,}  {name:24}  wall {cell['wall_ms']:8.2f} ms ({cell['wall_ratio']:5.2f}x)"
                f"  cpu {cell['cpu_ms']:8.2f} ms ({cell['cpu_ratio']:5.2f}x)  turns {cell['turns']}"
            )
    save("turn_cost", results, command=" ".join(["python benchmarks/turn_cost.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
