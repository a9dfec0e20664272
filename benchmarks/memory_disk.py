"""Figure 3 — memory and disk: bytes on disk per transcript item, bytes written per turn, RSS.

Disk: the same scripted conversation (``--turns`` turns of prompt → tool call → tool → answer,
the default Config: a window of 60 messages, so the window moves at every turn once full) runs
through ``session.prompt()`` on SQLite and through ``Runner.run`` + ``SQLiteSession`` (what a
peer keeps for the same items); the transcript items are also written as plain JSON rows (the
neutral messages, one row each, in a table keyed like the session store's). Each database is
checkpointed and vacuumed, then its file size is divided by the number of transcript items.

Written per turn: the bytes of the rows one turn appends (every kind), at the start and at the
end of the run — flat means proportional to the turn, not to the history.

Memory: the resident memory a fresh process adds when it opens a session of ``--items`` items
and builds the next request, and when it then reads the whole transcript.

Usage: ``python benchmarks/memory_disk.py [--turns 1000] [--items 100000]``; writes
``benchmarks/results/memory_disk.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _systems
from _results import save
from _systems import AgentSession, OpenAIAgents
from startup import build

CHILD = r"""
import asyncio, json, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
import agentsession as ags
path, sid = sys.argv[1], sys.argv[2]
async def main():
    base = rss()
    runtime = ags.Runtime(store=ags.SQLiteStore(path), model=ags.ScriptedModel(["ok"]))
    session = await runtime.open_session(sid)
    await session.preview_request("next question")
    opened = rss()
    everything = list(session.messages)
    loaded = rss()
    print(json.dumps({"open_mib": (opened - base) / 2**20,
                      "all_messages_mib": (loaded - base) / 2**20, "items": len(everything)}))
    await runtime.close()
asyncio.run(main())
"""


def file_bytes(path: Path) -> int:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()
    return path.stat().st_size


def data_bytes(conn: sqlite3.Connection, seq_from: int, seq_to: int) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(length(CAST(data AS BLOB))), 0) FROM entries"
        " WHERE seq >= ? AND seq < ?",
        (seq_from, seq_to),
    ).fetchone()
    return int(row[0])


async def disk(turns: int, pad: int) -> dict[str, Any]:
    from agentsession.codec import canonical_json

    _systems.RESULT_PAD = pad
    out: dict[str, Any] = {"turns": turns, "result_pad": pad}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ours = AgentSession()
        await ours.setup(folder, 1)
        sizes: list[int] = []
        for i in range(1, turns):
            before = ours.session._writer.next_seq
            await ours.turn(i)
            sizes.append((before, ours.session._writer.next_seq))
        messages = list(ours.session.messages)
        await ours.close()
        db = folder / "agentsession.db"
        conn = sqlite3.connect(db)
        from agentsession.store._sqlite_sql import KIND_CODES

        names = {code: kind for kind, code in KIND_CODES.items()}  # SQLite stores kind codes
        kinds = {
            names.get(k, k): v
            for k, v in conn.execute(
                "SELECT kind, sum(length(CAST(data AS BLOB))) FROM entries GROUP BY kind"
            )
        }
        early = [data_bytes(conn, a, b) for a, b in sizes[30:50]]
        late = [data_bytes(conn, a, b) for a, b in sizes[-20:]]
        conn.close()
        items = len(messages)
        out["items"] = items
        out["agentsession_bytes_per_item"] = file_bytes(db) / items
        out["agentsession_data_bytes_per_item_by_kind"] = {k: v / items for k, v in kinds.items()}
        out["written_per_turn_early"] = sum(early) / len(early)
        out["written_per_turn_late"] = sum(late) / len(late)

        plain = folder / "plain.db"
        conn = sqlite3.connect(plain)
        conn.execute(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,"
            " data TEXT NOT NULL)"
        )
        conn.execute("CREATE INDEX items_session ON items (session_id, id)")
        with conn:
            conn.executemany(
                "INSERT INTO items (session_id, data) VALUES (?, ?)",
                [("0" * 32, canonical_json(m)) for m in messages],
            )
        conn.close()
        out["plain_json_bytes_per_item"] = file_bytes(plain) / items

        peer = OpenAIAgents(60)
        await peer.setup(folder / "peer" if (folder / "peer").mkdir() is None else folder, 1)
        for i in range(1, turns):
            await peer.turn(i)
        await peer.close()
        peer_db = folder / "peer" / "openai_agents.db"
        conn = sqlite3.connect(peer_db)
        peer_items = conn.execute("SELECT count(*) FROM agent_messages").fetchone()[0]
        conn.close()
        out["sqlitesession_bytes_per_item"] = file_bytes(peer_db) / peer_items
    out["ratio_vs_plain_json"] = (
        out["agentsession_bytes_per_item"] / out["plain_json_bytes_per_item"]
    )
    out["ratio_vs_sqlitesession"] = (
        out["agentsession_bytes_per_item"] / out["sqlitesession_bytes_per_item"]
    )
    return out


def memory(items: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agentsession.db"
        session_id = asyncio.run(build(path, items))
        runs = []
        for _ in range(3):
            child = subprocess.run(
                [sys.executable, "-c", CHILD, str(path), session_id],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(child.stdout))
    return {
        "items": runs[0]["items"],
        "open_and_next_request_mib": sorted(r["open_mib"] for r in runs)[1],
        "all_messages_mib": sorted(r["all_messages_mib"] for r in runs)[1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument(
        "--larger", type=int, default=1_200, help="padding of each tool result, second run"
    )
    args = parser.parse_args()
    figures = {
        "disk": asyncio.run(disk(args.turns, 40)),
        "disk_larger_results": asyncio.run(disk(args.turns, args.larger)),
        "memory": memory(args.items),
    }
    print(json.dumps(figures, indent=1))
    save(
        "memory_disk",
        figures,
        command=" ".join(["python benchmarks/memory_disk.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
