"""Figure 2 — the store alone: a durable append of one turn and the next request's read.

At 1,000 / 10,000 / 100,000 transcript items (built with ``_systems.grow_agentsession`` and the
same items copied into the other two), side by side in one run:

- ``agentsession``: ``SQLiteStore.append`` of one turn's entries in one transaction; the next
  request's read as a session does it after a reopen (``LogWriter.epoch_view``: the last epoch
  by the kind index, then the log from its history start, decoded);
- plain ``sqlite3`` with the same settings (WAL, ``synchronous=FULL``): insert one turn's four
  items as JSON rows in one transaction; read the last 60 rows and ``json.loads`` them;
- ``SQLiteSession``: ``add_items`` of the four items; ``get_items(limit=60)``.

Reads use a fresh connection per measurement (reopen); a warm session reads nothing: the turn
benchmark counts store reads per turn (``reads_per_turn``). The disk's fsync rate is measured
on the same file system. Usage: ``python benchmarks/store_level.py``; writes
``benchmarks/results/store_level.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save
from _systems import AgentSession, OpenAIAgents, grow_agentsession


def fsync_rate(folder: Path, n: int = 300) -> float:
    path = folder / "fsync.probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    started = time.perf_counter()
    for _ in range(n):
        os.write(fd, b"x" * 100)
        os.fsync(fd)
    elapsed = time.perf_counter() - started
    os.close(fd)
    path.unlink()
    return n / elapsed


def plain_db(path: Path, items: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)"
    )
    conn.execute("CREATE INDEX items_session ON items (session_id, id)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO items (session_id, data) VALUES ('s', ?)", [(i,) for i in items])
    conn.execute("COMMIT")
    return conn


def plain_read(path: Path) -> list[Any]:
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT data FROM items WHERE session_id = 's' ORDER BY id DESC LIMIT 60"
    ).fetchall()
    conn.close()
    return [json.loads(r[0]) for r in reversed(rows)]


async def measure(items: int, repeat: int) -> dict[str, Any]:
    import agentsession as ags
    from agentsession.engine.writer import LogWriter

    out: dict[str, Any] = {"items": items}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ours = AgentSession()
        await ours.setup(folder, 1)
        session_id = ours.session.id
        await ours.close()
        store = ags.SQLiteStore(folder / "agentsession.db")
        await grow_agentsession(store, session_id, max(1, items // 4 - 1))
        log = await store.read(session_id, 0, 8)
        turn_entries = [r.entry for r in log if r.entry.kind != "epoch"][:8]
        from agentsession.codec import canonical_json
        from agentsession.projection import transcript_from

        transcript = transcript_from(log)
        messages = [canonical_json(m) for m in transcript] * (items // len(transcript) + 1)
        conn = plain_db(folder / "plain.db", messages[:items])

        peer = OpenAIAgents(60)
        (folder / "peer").mkdir()
        await peer.setup(folder / "peer", max(1, items // 4))
        peer_items = await peer.session.get_items(limit=4)

        rows: dict[str, list[float]] = {
            k: []
            for k in (
                "agentsession_append",
                "plain_append",
                "sqlitesession_append",
                "agentsession_read",
                "plain_read",
                "sqlitesession_read",
            )
        }
        from agents import SQLiteSession

        # Reads first (appends below would lengthen what the next request reads).
        for _ in range(repeat):
            fresh = ags.SQLiteStore(folder / "agentsession.db")
            info = await fresh.get_session(session_id)
            started = time.perf_counter()
            view = await LogWriter(fresh, session_id, info.next_seq, [], []).epoch_view()
            rows["agentsession_read"].append(time.perf_counter() - started)
            await fresh.close()
            assert view.records

            started = time.perf_counter()
            plain_read(folder / "plain.db")
            rows["plain_read"].append(time.perf_counter() - started)

            again = SQLiteSession("bench", folder / "peer" / "openai_agents.db")
            started = time.perf_counter()
            await again.get_items(limit=60)
            rows["sqlitesession_read"].append(time.perf_counter() - started)
            again.close()
        for _ in range(repeat):
            info = await store.get_session(session_id)
            started = time.perf_counter()
            await store.append(session_id, info.next_seq, turn_entries)
            rows["agentsession_append"].append(time.perf_counter() - started)

            started = time.perf_counter()
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT INTO items (session_id, data) VALUES ('s', ?)", [(m,) for m in messages[:4]]
            )
            conn.execute("COMMIT")
            rows["plain_append"].append(time.perf_counter() - started)

            started = time.perf_counter()
            await peer.session.add_items(peer_items)
            rows["sqlitesession_append"].append(time.perf_counter() - started)
        out["read_rows_agentsession"] = len(view.records)
        conn.close()
        await peer.close()
        await store.close()
    for key, values in rows.items():
        out[f"{key}_ms"] = statistics.median(values) * 1000
    out["append_ratio_vs_plain"] = out["agentsession_append_ms"] / out["plain_append_ms"]
    out["read_ratio_vs_plain"] = out["agentsession_read_ms"] / out["plain_read_ms"]
    out["read_ratio_vs_sqlitesession"] = out["agentsession_read_ms"] / out["sqlitesession_read_ms"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent) as tmp:
        rate = fsync_rate(Path(tmp))
    figures: dict[str, Any] = {"fsync_per_s": rate, "sizes": {}}
    for n in (int(s) for s in args.sizes.split(",")):
        figures["sizes"][str(n)] = cell = asyncio.run(measure(n, args.repeat))
        print(json.dumps(cell))
    save(
        "store_level",
        figures,
        command=" ".join(["python benchmarks/store_level.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
