"""Many workers: 2 processes × 50 sessions × 20 prompts on one SQLite file, and on PostgreSQL.

Both processes walk all 50 shared sessions (``many_worker``) and race for each one: a lost race
is a ``ConflictError`` (the lease is taken, or the log moved on) that the loser recovers from
with ``session.refresh()``. Afterwards:

- every session holds prompts 0..19 once each, in order, each turn answered;
- no interleaving: every entry of a turn was written by the worker whose prompt opened it;
- no fork: the appends both workers saw acknowledged agree seq by seq, and the log holds them;
- no lost race wasted a model response; each tool call ran once; every request rebuilds exactly
  and passes all four wire formats' rules.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.log import AssistantEntry, Record, ToolResultEntry, UserEntry, now

from .common import check_log, fingerprint, side_runs, side_tool, text_of
from .many_worker import config
from .soak_worker import open_store, read_lines

ROOT = Path(__file__).resolve().parents[2]
WORKERS = ("w0", "w1")
SESSIONS = 50
PROMPTS = 20
_PROMPT = re.compile(r"^(w\d) s(\d+) prompt (\d+): ")


async def create_sessions(db: str, postgres: bool, project: Path) -> list[str]:
    store = open_store(db, postgres)
    try:
        ids = [uuid.uuid4().hex for _ in range(SESSIONS)]
        for session_id in ids:
            await store.create_session(
                ags.SessionInfo(session_id, now(), now(), None, str(project))
            )
        return ids
    finally:
        await store.close()


def run_workers(db: str, postgres: bool, folder: Path) -> dict[str, dict[str, int]]:
    """Start both workers together and wait for them; their counts by name."""
    project = folder / "project"
    (project / ".git").mkdir(parents=True)
    ids = asyncio.run(create_sessions(db, postgres, project))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = []
    for name in WORKERS:
        job = {
            "db": db,
            "postgres": postgres,
            "folder": str(folder),
            "name": name,
            "sessions": ids,
            "prompts": PROMPTS,
        }
        (folder / f"job-{name}.json").write_text(json.dumps(job), encoding="utf-8")
        with (folder / f"{name}.err").open("wb") as err:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tests.durability.many_worker", f"job-{name}.json"],
                    cwd=folder,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                )
            )
    (folder / "go").touch()
    try:
        for name, process in zip(WORKERS, processes, strict=True):
            code = process.wait(timeout=600)
            assert code == 0, (folder / f"{name}.err").read_text()
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return {
        name: json.loads((folder / f"result-{name}.json").read_text(encoding="utf-8"))
        for name in WORKERS
    }


def check_turns(records: list[Record], number: int) -> list[str]:
    """Prompts 0..19 once each, in order; every turn written by its prompt's worker, answered."""
    problems = []
    turns: list[list[Record]] = []
    for record in records:
        if isinstance(record.entry, UserEntry):
            turns.append([])
        if turns:
            turns[-1].append(record)
    ks = []
    for turn in turns:
        opened = turn[0].entry
        assert isinstance(opened, UserEntry)
        found = _PROMPT.match(text_of(opened.content))
        if found is None or int(found.group(2)) != number:
            problems.append(f"session {number}: a foreign prompt {opened.content!r}")
            continue
        worker = found.group(1)
        ks.append(int(found.group(3)))
        for record in turn[1:]:
            entry = record.entry
            if isinstance(entry, AssistantEntry):
                by = {c.arguments.get("by") for c in entry.tool_calls}
                if by - {worker} or (entry.content and not entry.content.startswith(worker)):
                    problems.append(f"session {number} seq {record.seq}: interleaved")
            elif isinstance(entry, ToolResultEntry) and not text_of(entry.content).endswith(
                f"for {worker}"
            ):
                problems.append(f"session {number} seq {record.seq}: interleaved result")
        last = turn[-1].entry
        if not (isinstance(last, AssistantEntry) and not last.tool_calls):
            problems.append(f"session {number}: prompt {ks[-1]} was not answered")
    if ks != list(range(PROMPTS)):
        problems.append(f"session {number}: prompts {ks}")
    return problems


async def check_store(db: str, postgres: bool, folder: Path) -> list[str]:
    """Every check of the module docstring; the problems found."""
    ids: list[str] = json.loads((folder / "job-w0.json").read_text(encoding="utf-8"))["sessions"]
    acked: dict[tuple[str, int], set[str]] = {}
    for name in WORKERS:
        for note in read_lines(folder / f"notes-{name}.jsonl"):
            for offset, fp in enumerate(note["fp"]):
                acked.setdefault((note["s"], note["seq"] + offset), set()).add(fp)
    runs: Counter[str] = Counter()
    for name in WORKERS:
        runs.update(side_runs(folder / f"side-{name}.txt"))
    problems = [f"call {c} ran {n} times" for c, n in runs.items() if n != 1]
    problems += [f"{key}: forked, {fps}" for key, fps in acked.items() if len(fps) > 1]
    results: set[str] = set()
    store = open_store(db, postgres)
    try:
        for number, session_id in enumerate(ids):
            records = await store.read(session_id)
            found = check_log(records, [side_tool(Path("unused"))], config())
            problems += found.problems()
            problems += check_turns(records, number)
            for (sid, seq), fps in acked.items():
                if sid == session_id and (
                    seq >= len(records) or fingerprint(records[seq].entry) not in fps
                ):
                    problems.append(f"session {number}: acknowledged entry {seq} lost")
            results.update(
                r.entry.call_id
                for r in records
                if isinstance(r.entry, ToolResultEntry) and not r.entry.is_error
            )
    finally:
        await store.close()
    if results != set(runs):
        problems.append("the tool runs and the stored results differ")
    return problems


def assert_many_workers(db: str, postgres: bool, folder: Path) -> None:
    counts = run_workers(db, postgres, folder)
    total: Counter[str] = Counter()
    for worker_counts in counts.values():
        total.update(worker_counts)
    problems = asyncio.run(check_store(db, postgres, folder))
    assert problems == [], (counts, problems[:20])
    assert total["prompts"] == SESSIONS * PROMPTS, counts  # each prompt ran once, by someone
    assert all(c["prompts"] > 0 for c in counts.values()), counts  # both did work
    assert total["lease_races"] + total["append_races"] > 0, counts  # they did meet
    assert total["wasted_responses"] == 0, counts


def test_two_workers_share_fifty_sessions_on_one_sqlite_file(tmp_path: Path) -> None:
    assert_many_workers(str(tmp_path / "shared.db"), False, tmp_path)


@pytest.mark.postgres
def test_two_workers_share_fifty_sessions_on_postgres(tmp_path: Path, pg_dsn: str) -> None:
    assert_many_workers(pg_dsn, True, tmp_path)
