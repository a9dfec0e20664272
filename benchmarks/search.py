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

Usage: ``python benchmarks/search.py [--sessions 10000 --entries 100]``; writes
``benchmarks/results/search.json``.
"""

from __future__ import annotations

import argparse
import asyncio
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


async def build(path: Path, sessions: int, entries: int) -> float:
    rng = random.Random(7)
    store = ags.SQLiteStore(path)
    started = time.perf_counter()
    try:
        for i in range(sessions):
            stamp = f"2026-01-01T00:00:{i % 60:02d}.{i:06d}+00:00"
            info = SessionInfo(f"s{i:06d}", stamp, stamp, f"session {i}")
            await store.create_session(info, session_entries(rng, entries, i))
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


async def queries(path: Path, runs: int) -> dict[str, Any]:
    store = ags.SQLiteStore(path)
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


async def append_cpu(path: Path, turns: int) -> float:
    """CPU seconds (all threads) per append of one turn to an existing session."""
    store = ags.SQLiteStore(path)
    try:
        info = await store.get_session("s000001")
        seq = info.next_seq
        rng = random.Random(11)
        started = time.process_time()
        for _ in range(turns):
            batch = session_entries(rng, 4, 1)
            await store.append("s000001", seq, batch)
            seq += len(batch)
        return (time.process_time() - started) / turns
    finally:
        await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "search.db")
        figures: dict[str, Any] = {
            "sessions": args.sessions,
            "entries": args.sessions * args.entries,
        }
        figures["build_s"] = await build(path, args.sessions, args.entries)
        figures["queries"] = await queries(path, args.queries)
        figures["disk"] = index_share(path)
        plain = Path(folder, "plain.db")
        shutil.copy(path, plain)
        drop_triggers(plain)
        with_index, without = [], []
        for _ in range(args.rounds):
            with_index.append(await append_cpu(path, args.appends))
            without.append(await append_cpu(plain, args.appends))
        figures["append_cpu_ms"] = {
            "with_index": min(with_index) * 1000,
            "without": min(without) * 1000,
            "ratio": min(with_index) / min(without),
        }
    print(figures)
    save("search", figures, command=" ".join(sys.argv))


if __name__ == "__main__":
    asyncio.run(main())
