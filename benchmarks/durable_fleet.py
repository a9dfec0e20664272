"""Turns on DBOS across worker processes, one SIGKILLed every few seconds, beside ``serve``.

    .ci/with-postgres .venv/bin/python benchmarks/durable_fleet.py --workers 8 --sessions 1000 \\
        --prompts 10 --kill-every 10

``--sessions`` sessions each get ``--prompts`` prompts, all enqueued at once on the turn queue
(partitioned by session, so a session's turns run one at a time, in order) by a process that
is no worker: it only talks to DBOS's system database. ``--workers`` worker processes run the
turns: each prompt is one tool call and an answer, the tool appending its call id to a file.
Every ``--kill-every`` seconds a random worker is SIGKILLed and a fresh one started with its
executor id, which recovers its turns at launch. The sessions and DBOS share one PostgreSQL
database. At the end, from the logs and the file:

- lost: prompts whose user entry or final answer is missing, tool calls without a result,
  logs whose seqs are not 0..end;
- duplicates: prompts admitted twice, tool calls that ran twice;
- stuck: turns whose workflow did not succeed within ``--deadline`` seconds;
- closed unknown: calls a worker died inside, closed as "may have run" (not re-run: expected);
- turns/s over the whole run, p50/p99 from enqueue to completion; DBOS's bytes per turn,
  for each session's first and last turn (flat in session length).

Then ``benchmarks/server_load.py`` runs the same sessions × prompts on ``--workers``
``agentsession serve``-style processes (one killed a third of the way), in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _pg import asyncpg_url, fresh_database, server_dsn
from _results import save
from tests.durable.engine_state import engine_bytes

import agentsession as ags
from agentsession.engine.recovery import INTERRUPTED_RESULT
from agentsession.log import AssistantEntry, ToolResultEntry, UserEntry
from agentsession.request import ToolResultMessage, UserMessage, text_of

HERE = Path(__file__).parent
APP = "agentsession-fleet"


def reply(request: ags.Request) -> object:
    """One tool call per prompt, then the answer."""
    last = request.messages[-1] if request.messages else None
    if isinstance(last, ToolResultMessage):
        return f"answer: {text_of(last.content)}"
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    return [ags.ToolCall("note", {"text": text_of(users[-1].content)})]


def url_of(dsn: str) -> str:
    """A libpq DSN as the URL DBOS takes."""
    return asyncpg_url(dsn).replace("postgresql+asyncpg://", "postgresql://", 1)


def worker(dsn: str, executor: str, runs: str) -> None:
    """One worker process: runs turns until killed."""
    from dbos import DBOS

    from agentsession.durable import dbos as durable

    @ags.tool(effect="write")
    def note(text: str, context: ags.ToolContext) -> str:
        """Note a text.

        Args:
            text: What to note.
        """
        fd = os.open(runs, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{context.call_id}\n".encode())
        finally:
            os.close(fd)
        return f"noted {len(text.split())} words"

    runtime = ags.Runtime(
        store=ags.PostgresStore(dsn),
        model=ags.ScriptedModel(reply, name="scripted:fleet"),
        tools=[note],
        config=ags.Config(retry_base_delay=0, titles=False, environment=()),
    )
    DBOS(
        config={
            "name": APP,
            "system_database_url": url_of(dsn),
            "executor_id": executor,
            "log_level": "ERROR",
        }
    )
    durable.register(runtime, polling_interval=0.2, worker_concurrency=8)
    DBOS.launch()
    durable.turn_queue()
    threading.Event().wait()


class Fleet:
    """The worker processes; ``kill_one`` replaces a random one by a fresh process."""

    def __init__(self, count: int, dsn: str, runs: Path) -> None:
        self.dsn, self.runs = dsn, runs
        self.processes = [self._start(i) for i in range(count)]
        self.kills = 0

    def _start(self, index: int) -> subprocess.Popen[bytes]:
        command = [sys.executable, __file__, "--worker", self.dsn, f"w{index}", str(self.runs)]
        return subprocess.Popen(command, stderr=subprocess.DEVNULL)

    def kill_one(self) -> None:
        index = random.randrange(len(self.processes))
        self.processes[index].send_signal(signal.SIGKILL)
        self.processes[index].wait()
        self.processes[index] = self._start(index)
        self.kills += 1

    def stop(self) -> None:
        for process in self.processes:
            process.send_signal(signal.SIGKILL)
            process.wait()


def text_of_prompt(sid: str, n: int) -> str:
    return f"{sid[:8]} prompt {n} of the fleet run"


async def create_sessions(dsn: str, count: int) -> list[str]:
    runtime = ags.Runtime(store=ags.PostgresStore(dsn), model=ags.ScriptedModel(reply))
    try:
        return [(await runtime.create_session()).id for _ in range(count)]
    finally:
        await runtime.close()


def enqueue(dsn: str, ids: list[str], prompts: int) -> list[str]:
    """Every prompt of every session on the turn queue; the workflow ids, in prompt order."""
    from dbos import DBOSClient, EnqueueOptions

    from agentsession.durable.dbos import QUEUE

    client = DBOSClient(system_database_url=url_of(dsn), application_name=APP)
    workflow_ids = []
    try:
        for n in range(prompts):
            for sid in ids:
                options: EnqueueOptions = {
                    "workflow_name": "agentsession.turn",
                    "queue_name": QUEUE,
                    "queue_partition_key": sid,
                    "workflow_id": f"{sid}-{n}",
                }
                client.enqueue(options, sid, text_of_prompt(sid, n))
                workflow_ids.append(f"{sid}-{n}")
    finally:
        client.destroy()
    return workflow_ids


def statuses(dsn: str) -> dict[str, tuple[str, int, int]]:
    """Workflow id → (status, created ms, updated ms) of every turn."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT workflow_uuid, status, created_at, updated_at FROM dbos.workflow_status"
            " WHERE name = 'agentsession.turn'"
        ).fetchall()
    return {str(r[0]): (str(r[1]), int(r[2]), int(r[3])) for r in rows}


def wait_for_queue(dsn: str) -> None:
    import psycopg

    for _ in range(600):
        with psycopg.connect(dsn) as conn:
            try:
                if conn.execute("SELECT count(*) FROM dbos.queues").fetchone() != (0,):
                    return
            except psycopg.errors.UndefinedTable:
                pass
        time.sleep(0.5)
    raise RuntimeError("no worker registered the turn queue")


async def check(
    dsn: str, ids: list[str], prompts: int, runs: Path, succeeded: set[str]
) -> dict[str, int]:
    """Lost and duplicated work, from the logs: a turn still running (stuck) is not lost."""
    runtime = ags.Runtime(store=ags.PostgresStore(dsn), model=ags.ScriptedModel(reply))
    lost = admitted_twice = unknown = 0
    try:
        for sid in ids:
            records = await runtime.store.read(sid)
            lost += [r.seq for r in records] != list(range(len(records)))
            users = Counter(r.entry.content for r in records if isinstance(r.entry, UserEntry))
            done = [n for n in range(prompts) if f"{sid}-{n}" in succeeded]
            for n in range(prompts):
                seen = users[text_of_prompt(sid, n)]
                lost += seen == 0 and n in done
                admitted_twice += max(0, seen - 1)
            entries = [r.entry for r in records]
            answers = [e for e in entries if isinstance(e, AssistantEntry) and not e.tool_calls]
            lost += len(answers) < len(done)
            results = Counter(e.call_id for e in entries if isinstance(e, ToolResultEntry))
            unknown += sum(
                isinstance(e, ToolResultEntry) and e.content == INTERRUPTED_RESULT["process"]
                for e in entries
            )
            if len(done) == prompts:  # every turn finished: every call has one result
                calls = [
                    c.id for e in entries if isinstance(e, AssistantEntry) for c in e.tool_calls
                ]
                lost += sum(results[c] != 1 for c in calls)
    finally:
        await runtime.close()
    ran = Counter(runs.read_text().splitlines()) if runs.exists() else Counter()  # noqa: ASYNC240
    return {
        "lost": lost,
        "duplicate_admissions": admitted_twice,
        "duplicate_tool_runs": sum(c - 1 for c in ran.values() if c > 1),
        "closed_unknown": unknown,
    }


def run_dbos(args: argparse.Namespace) -> dict[str, Any]:
    dsn = fresh_database("durable_fleet")
    runs = Path(tempfile.mkdtemp()) / "tool_runs.txt"
    ids = asyncio.run(create_sessions(dsn, args.sessions))
    fleet = Fleet(args.workers, dsn, runs)
    try:
        wait_for_queue(dsn)
        began = time.time()
        workflow_ids = enqueue(dsn, ids, args.prompts)
        deadline = began + args.deadline
        next_kill = time.time() + args.kill_every
        while time.time() < deadline:
            state = statuses(dsn)
            if sum(s[0] in ("SUCCESS", "ERROR") for s in state.values()) == len(workflow_ids):
                break
            if args.kill_every > 0 and time.time() >= next_kill:
                fleet.kill_one()
                next_kill = time.time() + args.kill_every
            time.sleep(0.5)
        state = statuses(dsn)
        elapsed = max(s[2] for s in state.values()) / 1000 - began
    finally:
        fleet.stop()
    done = [s for s in state.values() if s[0] == "SUCCESS"]
    latencies = sorted((s[2] - s[1]) / 1000 for s in done)
    succeeded = {w for w, s in state.items() if s[0] == "SUCCESS"}
    firsts = [f"{sid}-0" for sid in ids if f"{sid}-0" in succeeded]
    lasts = [f"{sid}-{args.prompts - 1}" for sid in ids if f"{sid}-{args.prompts - 1}" in succeeded]
    sizes = engine_bytes(url_of(dsn), firsts + lasts)
    checks = asyncio.run(check(dsn, ids, args.prompts, runs, succeeded))
    return {
        "workers": args.workers,
        "sessions": args.sessions,
        "prompts_per_session": args.prompts,
        "kill_every_s": args.kill_every,
        "killed": fleet.kills,
        "turns": len(workflow_ids),
        "succeeded": len(done),
        "stuck": len(workflow_ids) - len(done),
        "seconds": round(elapsed, 1),
        "turns_per_second": round(len(done) / elapsed, 2),
        "p50_ms": round(statistics.median(latencies) * 1000) if latencies else None,
        "p99_ms": round(latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000)
        if latencies
        else None,
        "engine_bytes_first_turn": _mean([sizes[w] for w in firsts]),
        "engine_bytes_last_turn": _mean([sizes[w] for w in lasts]),
        **checks,
    }


def _mean(values: list[int]) -> int | None:
    return round(statistics.mean(values)) if values else None


def run_serve(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from server_load import run

    dsn = fresh_database("durable_fleet_serve")
    options = argparse.Namespace(
        servers=args.workers,
        sessions=args.sessions,
        prompts=args.prompts,
        clients=min(args.sessions, 4 * args.workers),
        # The DBOS side has no followers and no database restart: the same here.
        followers=0,
        workspaces=True,
        restart_postgres=False,
    )
    figures: dict[str, Any] = asyncio.run(run(options, dsn))
    return figures


def main() -> int:
    if sys.argv[1:2] == ["--worker"]:
        worker(*sys.argv[2:5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--kill-every", type=float, default=10.0)
    parser.add_argument("--deadline", type=float, default=3600.0)
    parser.add_argument("--no-serve", action="store_true", help="skip the serve comparison")
    args = parser.parse_args()
    server_dsn()  # exits with a hint when there is no server
    figures: dict[str, Any] = {"dbos": run_dbos(args)}
    command = "benchmarks/durable_fleet.py " + " ".join(sys.argv[1:])
    # Kept before the comparison starts: an hour of DBOS figures must not hang on it.
    print(json.dumps(figures, indent=1), flush=True)
    save("durable_fleet", figures, command=command)
    if not args.no_serve:
        figures["serve"] = run_serve(args)
    path = save("durable_fleet", figures, command=command)
    print(json.dumps(figures, indent=1))
    print(f"saved {path}")
    dbos = figures["dbos"]
    bad = dbos["lost"] + dbos["duplicate_admissions"] + dbos["duplicate_tool_runs"] + dbos["stuck"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
