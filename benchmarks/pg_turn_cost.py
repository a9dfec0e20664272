"""Figure 1 on PostgreSQL — the cost of one turn against the number of earlier turns, beside the
peers' PostgreSQL stores, all on one server.

The turn of ``turn_cost.py`` (prompt → tool call → tool → answer, a fake model that answers at
once) by:

- agentsession: ``session.prompt()`` with ``PostgresStore``, the default ``Config`` (window of
  60 messages);
- openai-agents: ``Runner.run`` with ``SQLAlchemySession`` (asyncpg), ``limit=60`` (the
  reference: the peer with a window) and the default settings (every item, every turn);
- LangGraph: ``create_react_agent`` with ``PostgresSaver`` (no window: the whole state).

Histories are copied ``N − 1`` times straight into each system's tables (``_pg.py``): COPY into
openai-agents' message table, one ``update_state`` for LangGraph, ``PostgresStore.append`` in
batches of 20,000 entries for agentsession. Then warm-up turns and ``--rounds`` shuffled rounds
of one turn per system. Per turn: wall time, the client's CPU time, and the server's (every
backend of the server, from ``/proc``: the database work runs there). A system whose turns at one
size take more than ``--budget`` seconds in total stops early there; the systems that read the
whole history run up to ``--whole-history-max`` earlier turns.

Usage: ``.ci/with-postgres python benchmarks/pg_turn_cost.py [--sizes 10,100,1000,10000,100000]``;
writes ``benchmarks/results/pg_turn_cost.json``.
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

from _pg import ServerCPU, fresh_database, pg_systems
from _results import save, turn_cost_arguments
from _systems import System

REFERENCE = "openai-agents SQLAlchemy limit=60"


async def measure_size(
    n: int, rounds: int, budget: float, warmup: int, whole_max: int
) -> dict[str, Any]:
    dsn = fresh_database(f"turns_{n}")
    server = ServerCPU(dsn)
    systems = [s for s in pg_systems(dsn) if n <= whole_max or not s.whole_history]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        live: list[System] = []
        for system in systems:
            folder = Path(tmp) / system.name.replace(" ", "_").replace("=", "")
            folder.mkdir()
            started = time.perf_counter()
            await system.setup(folder, n)
            cell = {"setup_s": time.perf_counter() - started, "wall": [], "cpu": [], "server": []}
            out[system.name] = cell
            live.append(system)
            print(f"  N={n:,}: {system.name} set up in {cell['setup_s']:.1f} s", flush=True)
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
                served = server.seconds()
                wall, cpu = time.perf_counter(), time.process_time()
                await system.turn(turn)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                cell["server"].append(server.seconds() - served)
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
        cell["server_ms"] = statistics.median(cell["server"]) * 1000
        cell["total_cpu_ms"] = (
            statistics.median(c + s for c, s in zip(cell["cpu"], cell["server"], strict=True))
            * 1000
        )
    ref = out[REFERENCE]
    for cell in out.values():
        cell["wall_ratio"] = cell["wall_ms"] / ref["wall_ms"]
        cell["cpu_ratio"] = cell["cpu_ms"] / ref["cpu_ms"]
        cell["total_cpu_ratio"] = cell["total_cpu_ms"] / ref["total_cpu_ms"]
        del cell["wall"], cell["cpu"], cell["server"]
    return out


def main() -> None:
    args = turn_cost_arguments(__doc__.splitlines()[0])
    results: dict[str, Any] = {"reference": REFERENCE, "sizes": {}}
    for n in (int(s) for s in args.sizes.split(",")):
        cells = asyncio.run(
            measure_size(n, args.rounds, args.budget, args.warmup, args.whole_history_max)
        )
        results["sizes"][str(n)] = cells
        for name, cell in cells.items():
            print(
                f"N={n:>7,}  {name:34}  wall {cell['wall_ms']:8.2f} ms ({cell['wall_ratio']:5.2f}x)"
                f"  cpu {cell['cpu_ms']:7.2f} + server {cell['server_ms']:6.2f} ms"
                f" ({cell['total_cpu_ratio']:5.2f}x)  turns {cell['turns']}",
                flush=True,
            )
    save(
        "pg_turn_cost",
        results,
        command=" ".join([".ci/with-postgres python benchmarks/pg_turn_cost.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
