"""Search over every session: query time, the index's disk, and what it adds to an append.

A SQLite database of ``--sessions`` sessions of ``--entries`` transcript entries each (user,
assistant with a tool call every other turn, tool result; words drawn from a fixed vocabulary
with a long tail, so some words are everywhere and some in a handful of entries) is built with
``create_session``; then, side by side in one run:

- the first search (which moves every queued entry into the FTS5 index) and its time;
- query time, median and worst of ``--queries`` searches (limit 20) for common, rare and
  two-word queries, after that;
- the index's share of the file (``dbstat``: the FTS5 tables against the log and the rest);
- the append of one turn (four entries, one transaction) into a session of the database,
  CPU time (all threads) per append, with the search triggers and with them dropped, alternated
  run by run on two copies of the same file.

With ``--postgres`` the same runs against the PostgreSQL server named by ``--dsn`` (default
the ``AGENTSESSION_TEST_PG_DSN`` environment variable, as ``.ci/with-postgres`` sets it), in a
fresh database: sessions are created ``--concurrency`` at a time; the index's share is the
search tables' ``pg_total_relation_size`` against every table of the store's; the append is
timed in wall time (the trigger runs in the server, which the client's CPU does not see), with
the search trigger enabled and disabled (``ALTER TABLE … DISABLE TRIGGER``), alternated run by
run on the same database.

Usage: ``python benchmarks/search.py [--sessions 10000 --entries 100] [--postgres]``; writes
``benchmarks/results/search.json`` (``search_postgres.json`` with ``--postgres``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _pg import scratch_database
from _results import save

import agentsession as ags
from agentsession.log import AssistantEntry, LogEntry, ToolResultEntry, UserEntry
from agentsession.request import ToolCall
from agentsession.store.base import SessionInfo

WORDS = [f"w{i}" for i in range(20_000)]
RARE = ["zephyrine", "quillbark", "ombrelux", "tarnwick"]


def sentence(rng: random.Random, length: int) -> str:
    # A long tail: low-numbered words are common, high-numbered ones rare.
    return " ".join(
        WORDS[min(int(rng.paretovariate(0.6)) - 1, len(WORDS) - 1)] for _ in range(length)
    )


def session_entries(rng: random.Random, count: int, index: int) -> list[LogEntry]:
    entries: list[LogEntry] = []
    turn = 0
    while len(entries) < count:
        text = sentence(rng, 20)
        if index % 2_500 == 0 and turn == 0:
            text += " " + RARE[(index // 2_500) % len(RARE)]
        entries.append(UserEntry(text))
        if turn % 2 == 0:
            call = ToolCall("read_file", {"path": f"src/{sentence(rng, 2)}.py"}, id=f"c{turn}")
            entries += [
                AssistantEntry("", (call,)),
                ToolResultEntry(call.id, "read_file", sentence(rng, 80)),
            ]
        entries.append(AssistantEntry(sentence(rng, 40)))
        turn += 1
    return entries[:count]


async def build(store: ags.Store, sessions: int, entries: int, concurrency: int = 1) -> float:
    rng = random.Random(7)
    started = time.perf_counter()
    try:
        for first in range(0, sessions, concurrency):
            made = []
            for i in range(first, min(first + concurrency, sessions)):
                stamp = f"2026-01-01T00:00:{i % 60:02d}.{i:06d}+00:00"
                info = SessionInfo(f"s{i:06d}", stamp, stamp, f"session {i}")
                made.append(store.create_session(info, session_entries(rng, entries, i)))
            await asyncio.gather(*made)
    finally:
        await store.close()
    return time.perf_counter() - started


def index_share(path: Path) -> dict[str, Any]:
    db = sqlite3.connect(path)
    try:
        sizes = dict(db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
    finally:
        db.close()
    total = sum(sizes.values())
    search = sum(v for k, v in sizes.items() if k.startswith(("entries_search", "search_queue")))
    return {"file_bytes": total, "index_bytes": search, "index_share": search / total}


async def queries(store: ags.Store, runs: int) -> dict[str, Any]:
    runtime = ags.Runtime(store=store)
    results: dict[str, Any] = {}
    try:
        started = time.perf_counter()
        await runtime.search("w1")
        results["first_search_s"] = time.perf_counter() - started
        for name, text in (("common", "w1"), ("rare", RARE[0]), ("two words", "w2 w3")):
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                hits = await runtime.search(text, limit=20)
                times.append(time.perf_counter() - started)
            results[name] = {
                "median_ms": statistics.median(times) * 1000,
                "worst_ms": max(times) * 1000,
                "hits": len(hits),
            }
    finally:
        await store.close()
    return results


def drop_triggers(path: Path) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute("DROP TRIGGER entries_searched")
        db.execute("DROP TRIGGER entries_unsearched")
    db.close()


async def append_cpu(store: ags.Store, turns: int, *, wall: bool = False) -> float:
    """CPU seconds (all threads; with ``wall``, wall seconds) per append of one turn."""
    clock = time.perf_counter if wall else time.process_time
    try:
        info = await store.get_session("s000001")
        seq = info.next_seq
        rng = random.Random(11)
        started = clock()
        for _ in range(turns):
            batch = session_entries(rng, 4, 1)
            await store.append("s000001", seq, batch)
            seq += len(batch)
        return (clock() - started) / turns
    finally:
        await store.close()


async def postgres_sql(dsn: str, statement: str, *, commit: bool = True) -> list[Any]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=commit) as conn:
        cursor = await conn.execute(statement)
        return await cursor.fetchall() if cursor.description else []


async def postgres_share(dsn: str) -> dict[str, Any]:
    rows = await postgres_sql(
        dsn,
        """SELECT relname, pg_total_relation_size(oid) FROM pg_class
           WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace""",
    )
    sizes = {str(name): int(size) for name, size in rows}
    total = sum(sizes.values())
    search = sum(v for k, v in sizes.items() if k in ("entry_texts", "search_queue"))
    return {"tables_bytes": total, "index_bytes": search, "index_share": search / total}


def backend_cpu(pids: list[int]) -> float:
    """CPU seconds the server processes ``pids`` have run so far (the scheduler's nanoseconds)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    return total / 1e9


async def postgres_append_cost(dsn: str, name: str, turns: int) -> tuple[float, float, float]:
    """Per append of one turn: (client CPU, server CPU, wall) seconds.

    The trigger runs in the server, so the client's CPU alone cannot see it, and wall time on a
    shared machine mostly measures the neighbours: the server's share is read from the CPU
    counters of the database's backend processes (the server runs on this machine), before and
    after, around the same appends.
    """
    store = ags.PostgresStore(dsn)
    try:
        info = await store.get_session("s000001")
        seq = info.next_seq
        rng = random.Random(11)
        warm = session_entries(rng, 4, 1)
        await store.append("s000001", seq, warm)
        seq += len(warm)
        rows = await postgres_sql(
            dsn,
            f"SELECT pid FROM pg_stat_activity WHERE datname = '{name}'"
            " AND pid <> pg_backend_pid()",
        )
        pids = [int(row[0]) for row in rows]
        server, client, wall = backend_cpu(pids), time.process_time(), time.perf_counter()
        for _ in range(turns):
            batch = session_entries(rng, 4, 1)
            await store.append("s000001", seq, batch)
            seq += len(batch)
        return (
            (time.process_time() - client) / turns,
            (backend_cpu(pids) - server) / turns,
            (time.perf_counter() - wall) / turns,
        )
    finally:
        await store.close()


def postgres_append_figures(
    runs: dict[str, list[tuple[float, float, float]]], on: str = "with_index", off: str = "without"
) -> dict[str, Any]:
    """Medians and best of client + server CPU and of wall, ``on`` ÷ ``off`` (the trigger)."""
    figures: dict[str, Any] = {}
    for label, samples in runs.items():
        cpu = [(client + server) * 1000 for client, server, _ in samples]
        figures[label] = {
            "cpu_ms_runs": cpu,
            "server_cpu_ms_runs": [server * 1000 for _, server, _ in samples],
            "wall_ms_runs": [wall * 1000 for _, _, wall in samples],
        }
    for measure in ("cpu_ms_runs", "wall_ms_runs"):
        with_, without = figures[on][measure], figures[off][measure]
        name = measure.removesuffix("_runs")
        figures[f"{name}_ratio_of_medians"] = statistics.median(with_) / statistics.median(without)
        # Each round's two runs ran next to each other in time: their ratio sees the same
        # neighbours, so the median of the rounds' ratios is the steadiest figure.
        figures[f"{name}_ratio_paired_median"] = statistics.median(
            a / b for a, b in zip(with_, without, strict=True)
        )
    return figures


async def postgres_main(args: argparse.Namespace) -> dict[str, Any]:
    base = args.dsn or os.environ.get("AGENTSESSION_TEST_PG_DSN")
    if not base:
        raise SystemExit("--postgres needs --dsn or AGENTSESSION_TEST_PG_DSN")
    name = f"search_bench_{os.getpid()}"
    async with scratch_database(base, name) as dsn:
        figures: dict[str, Any] = {
            "backend": "postgres",
            "sessions": args.sessions,
            "entries": args.sessions * args.entries,
        }
        pool = max(2, args.concurrency)
        figures["build_s"] = await build(
            ags.PostgresStore(dsn, pool_size=pool), args.sessions, args.entries, args.concurrency
        )
        print("built", figures, flush=True)
        await postgres_sql(dsn, "VACUUM ANALYZE")
        store = ags.PostgresStore(dsn)
        figures["queries"] = await queries(store, args.queries)
        # The first search's drain left the queue's million rows dead until a vacuum: the
        # queries again once (auto)vacuum has run, and where their time goes.
        await postgres_sql(dsn, "VACUUM ANALYZE")
        figures["queries_vacuumed"] = await queries(ags.PostgresStore(dsn), args.queries)
        figures["plans"] = {
            name: [
                str(row[0])
                for row in await postgres_sql(
                    dsn,
                    "EXPLAIN (ANALYZE, COSTS OFF) SELECT session_id, seq FROM entry_texts"
                    f" WHERE doc @@ plainto_tsquery('simple', '{text}') LIMIT 2001",
                )
            ]
            for name, text in (("common", "w1"), ("rare", RARE[0]))
        }
        started = time.perf_counter()
        for _ in range(20):
            await postgres_sql(dsn, "SELECT 1")
        figures["connect_and_select_1_ms"] = (time.perf_counter() - started) / 20 * 1000
        figures["disk"] = await postgres_share(dsn)
        print("searched", figures, flush=True)
        runs: dict[str, list[tuple[float, float, float]]] = {"with_index": [], "without": []}
        configurations = (("with_index", "ENABLE"), ("without", "DISABLE"))
        for round_ in range(args.rounds):
            # Which goes first alternates, so a drift of the machine favours neither.
            for label, state in configurations[:: 1 if round_ % 2 == 0 else -1]:
                await postgres_sql(dsn, f"ALTER TABLE entries {state} TRIGGER entries_searched")
                runs[label].append(await postgres_append_cost(dsn, name, args.appends))
        await postgres_sql(dsn, "ALTER TABLE entries ENABLE TRIGGER entries_searched")
        figures["append_ms"] = postgres_append_figures(runs)
        return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL, not SQLite")
    parser.add_argument("--dsn", help="the PostgreSQL server (default: $AGENTSESSION_TEST_PG_DSN)")
    parser.add_argument("--concurrency", type=int, default=4, help="PostgreSQL: sessions at once")
    args = parser.parse_args()
    if args.postgres:
        figures = await postgres_main(args)
        print(figures)
        save("search_postgres", figures, command=" ".join(sys.argv))
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "search.db")
        figures: dict[str, Any] = {
            "sessions": args.sessions,
            "entries": args.sessions * args.entries,
        }
        figures["build_s"] = await build(ags.SQLiteStore(path), args.sessions, args.entries)
        figures["queries"] = await queries(ags.SQLiteStore(path), args.queries)
        figures["disk"] = index_share(path)
        plain = Path(folder, "plain.db")
        shutil.copy(path, plain)
        drop_triggers(plain)
        with_index, without = [], []
        for _ in range(args.rounds):
            with_index.append(await append_cpu(ags.SQLiteStore(path), args.appends))
            without.append(await append_cpu(ags.SQLiteStore(plain), args.appends))
        figures["append_cpu_ms"] = {
            "with_index": min(with_index) * 1000,
            "without": min(without) * 1000,
            "ratio": min(with_index) / min(without),
        }
    print(figures)
    save("search", figures, command=" ".join(sys.argv))


if __name__ == "__main__":
    asyncio.run(main())
