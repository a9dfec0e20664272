"""Many workers on PostgreSQL: processes sharing one database's sessions, as a job queue would.

``--workers`` processes (8) share ``--sessions`` sessions (100) on one fresh database; every
session takes ``--prompts`` prompts (20): 2,000 turns. Each worker walks all sessions in an
order of its own, again and again, and runs the next prompt of each session it can take — the
turn of the turn figure: prompt → the model asks for a tool → the tool runs → the answer — then
lets the session go (``session.close()``), as a job queue's worker would: it opens the session
when it takes the job (``open_session``), runs the prompt and closes it. Two workers that take
the same session at once meet: the one that finds the lease taken gets ``ConflictError`` (a
lease conflict, lost before the model is called) and moves on. Every worker
runs ``PostgresStore(pool_size=2)``, the scripted model, titles off.

The figures: answered prompts per second of the whole run (from the moment every worker has
started to the last one's end), each prompt's latency (``session.prompt`` call to return, the
answered ones), the lease conflicts and stale-log races, then the check: every session's log
holds each of its prompts exactly once, in order, each answered exactly once; anything else
counts as lost (the script exits non-zero unless it is 0).

Usage: ``.ci/with-postgres python benchmarks/pg_workers.py [--workers 8 --sessions 100
--prompts 20]``; writes ``benchmarks/results/pg_workers.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _pg import fresh_database
from _results import save


def prompt_text(number: int, k: int) -> str:
    return f"session {number} prompt {k}: please look this up"


def answer_text(prompt: str) -> str:
    return f"the answer to <{prompt}>"


def runtime(dsn: str, project: Path) -> Any:
    import agentsession as ags

    @ags.tool
    def lookup(text: str) -> str:
        """Look a text up."""
        return f"looked up <{text}>"

    def reply(request: ags.Request) -> Any:
        last = request.messages[-1]
        if last.role == "user":
            return [ags.ToolCall("lookup", {"text": str(last.content)})]
        return answer_text(str(last.content).split("<", 1)[1].rsplit(">", 1)[0])

    return ags.Runtime(
        store=ags.PostgresStore(dsn, pool_size=2),
        model=ags.ScriptedModel(reply),
        tools=[lookup],
        project_dir=project,
        config=ags.Config(titles=False, retry_base_delay=0, lease_ttl=10.0),
    )


# -- a worker --------------------------------------------------------------------------------


async def drive(job: dict[str, Any]) -> dict[str, Any]:
    import agentsession as ags

    rt = runtime(job["dsn"], Path(job["project"]))
    ids: list[str] = job["sessions"]
    order = list(range(len(ids)))
    random.Random(job["seed"]).shuffle(order)
    counts: dict[str, Any] = {"prompts": 0, "lease_conflicts": 0, "append_races": 0}
    latencies: list[float] = []
    left = set(order)
    try:
        while left:
            for number in order:
                if number not in left:
                    continue
                # A job queue's worker: open the session when it takes the job, close after.
                session = await rt.open_session(ids[number])
                try:
                    k = sum(m.role == "user" for m in session.messages)
                    if k >= job["prompts"]:
                        left.discard(number)
                        continue
                    started = time.perf_counter()
                    await session.prompt(prompt_text(number, k))
                    latencies.append(time.perf_counter() - started)
                    counts["prompts"] += 1
                except ags.ConflictError as exc:
                    lease = "being driven by another process" in str(exc)
                    counts["lease_conflicts" if lease else "append_races"] += 1
                finally:
                    await session.close()  # let the others in
    finally:
        await rt.close()
    counts["latencies"] = latencies
    return counts


def worker(job_path: Path) -> None:
    job = json.loads(job_path.read_text())
    go = Path(job["go"])
    while not go.exists():  # start together
        time.sleep(0.005)
    out = asyncio.run(drive(job))
    out["ended"] = time.time()
    Path(job["result"]).write_text(json.dumps(out))


# -- the run ---------------------------------------------------------------------------------


async def create_sessions(dsn: str, project: Path, count: int) -> list[str]:
    rt = runtime(dsn, project)
    try:
        ids = []
        for _ in range(count):
            session = await rt.create_session()
            ids.append(session.id)
            await session.close()
        return ids
    finally:
        await rt.close()


async def check(dsn: str, ids: list[str], prompts: int) -> dict[str, int]:
    """Each prompt once, in order, each answered once; the rest counted as lost or extra."""
    import agentsession as ags
    from agentsession.log import AssistantEntry, UserEntry

    store = ags.PostgresStore(dsn)
    lost = extra = out_of_order = 0
    try:
        for number, session_id in enumerate(ids):
            records = await store.read(session_id, kinds=["user", "assistant"])
            users = [str(r.entry.content) for r in records if isinstance(r.entry, UserEntry)]
            answers = [
                r.entry.content
                for r in records
                if isinstance(r.entry, AssistantEntry) and not r.entry.tool_calls
            ]
            wanted = [prompt_text(number, k) for k in range(prompts)]
            for prompt in wanted:
                lost += users.count(prompt) != 1 or answers.count(answer_text(prompt)) != 1
            extra += max(0, len(users) - prompts) + max(0, len(answers) - prompts)
            out_of_order += users != wanted
    finally:
        await store.close()
    return {"lost": lost, "extra": extra, "out_of_order": out_of_order}


def run(args: argparse.Namespace) -> dict[str, Any]:
    dsn = fresh_database("workers")
    total = args.sessions
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        project = folder / "project"
        (project / ".git").mkdir(parents=True)
        ids = asyncio.run(create_sessions(dsn, project, total))
        go = folder / "go"
        processes = []
        for w in range(args.workers):
            job = {
                "dsn": dsn,
                "project": str(project),
                "sessions": ids,
                "prompts": args.prompts,
                "seed": w,
                "go": str(go),
                "result": str(folder / f"result-{w}.json"),
            }
            path = folder / f"job-{w}.json"
            path.write_text(json.dumps(job))
            processes.append(subprocess.Popen([sys.executable, __file__, "--worker", str(path)]))
        time.sleep(1.0)  # every worker imported and waiting
        started = time.time()
        go.touch()
        for process in processes:
            if process.wait() != 0:
                raise SystemExit("a worker failed")
        results = [
            json.loads((folder / f"result-{w}.json").read_text()) for w in range(args.workers)
        ]
    seconds = max(r["ended"] for r in results) - started
    latencies = sorted(x for r in results for x in r["latencies"])
    answered = sum(r["prompts"] for r in results)
    checked = asyncio.run(check(dsn, ids, args.prompts))
    return {
        "workers": args.workers,
        "sessions": total,
        "prompts": args.prompts,
        "answered": answered,
        "seconds": seconds,
        "turns_per_s": answered / seconds,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "lease_conflicts": sum(r["lease_conflicts"] for r in results),
        "append_races": sum(r["append_races"] for r in results),
        **checked,
        "run": uuid.uuid4().hex[:8],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=100, help="shared by every worker")
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker)
        return
    figures = run(args)
    print(json.dumps(figures, indent=1))
    save(
        "pg_workers",
        figures,
        command=" ".join([".ci/with-postgres python benchmarks/pg_workers.py", *sys.argv[1:]]),
    )
    if figures["lost"] or figures["extra"] or figures["out_of_order"]:
        raise SystemExit("lost, repeated or reordered prompts: see above")


if __name__ == "__main__":
    main()
