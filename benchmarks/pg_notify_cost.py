"""What the log's notification trigger (schema 7) adds to an append on PostgreSQL.

    .ci/with-postgres .venv/bin/python benchmarks/pg_notify_cost.py --rounds 21 --appends 300

A fresh database of ``--sessions`` sessions of ``--entries`` entries (``search.py``'s builder;
its search triggers stay on in both configurations), one connection listening on the log's
channel and draining what arrives (as a ``serve`` process does), then ``--rounds`` rounds of
``--appends`` appends of one turn (four entries, one transaction) to one session, with the
trigger enabled and disabled (``ALTER TABLE entries … TRIGGER entries_notified``) next to each
other in each round, which goes first alternating. Each append's cost is the client's CPU plus
the CPU the database's server processes used (the listener's included: delivering the news is
part of its cost), read from the scheduler's counters around the same appends
(``search.postgres_append_cost``); the figures are the median of the rounds' ratios and the
ratio of the medians. Writes ``benchmarks/results/pg_notify_cost.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _pg import scratch_database
from _results import save
from search import build, postgres_append_cost, postgres_append_figures, postgres_sql

import agentsession as ags
from agentsession.store.migrations import LOG_CHANNEL

CONFIGURATIONS = (("with_trigger", "ENABLE"), ("without", "DISABLE"))


async def _drain(dsn: str, heard: list[int]) -> None:
    """A listener as ``serve`` keeps one: every notification is received and counted."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(f"LISTEN {LOG_CHANNEL}")
        async for _ in conn.notifies():
            heard[0] += 1


async def measure(dsn: str, name: str, args: argparse.Namespace) -> dict[str, Any]:
    figures: dict[str, Any] = {"sessions": args.sessions, "entries": args.sessions * args.entries}
    await build(ags.PostgresStore(dsn, pool_size=4), args.sessions, args.entries, 4)
    await postgres_sql(dsn, "VACUUM ANALYZE")
    heard = [0]
    listener = asyncio.create_task(_drain(dsn, heard))
    try:
        runs: dict[str, list[tuple[float, float, float]]] = {}
        for label, _ in CONFIGURATIONS:
            runs[label] = []
        for round_ in range(args.rounds):
            # Which goes first alternates, so a drift of the machine favours neither.
            for label, state in CONFIGURATIONS[:: 1 if round_ % 2 == 0 else -1]:
                await postgres_sql(dsn, f"ALTER TABLE entries {state} TRIGGER entries_notified")
                runs[label].append(await postgres_append_cost(dsn, name, args.appends))
            print(f"round {round_ + 1} of {args.rounds}", flush=True)
        await postgres_sql(dsn, "ALTER TABLE entries ENABLE TRIGGER entries_notified")
        figures["append_ms"] = postgres_append_figures(runs, "with_trigger", "without")
        figures["notifications_heard"] = heard[0]
    finally:
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await listener
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--entries", type=int, default=50)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    base = os.environ.get("AGENTSESSION_TEST_PG_DSN")
    if not base:
        raise SystemExit("needs a PostgreSQL server: run it under .ci/with-postgres")
    name = f"notify_bench_{os.getpid()}"
    async with scratch_database(base, name) as dsn:
        figures = await measure(dsn, name, args)
    print(figures)
    save("pg_notify_cost", figures, command=" ".join(sys.argv))


if __name__ == "__main__":
    asyncio.run(main())
