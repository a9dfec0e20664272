"""The crash soak: worker processes SIGKILLed at random moments, then the whole record checked.

``run_soak`` starts worker runs (``soak_worker``) one after another, each killed with SIGKILL
after a random delay, until ``kills`` kills have landed and the kills have reached every kind of
point in ``must_land`` (or ``time_limit`` seconds passed); while it kills, the plan has no end, so
every run is killed at work. A kill that lands before the run wrote anything stretches the delays:
on a busy machine the runs start slowly, and the soak waits longer instead of asking for luck.
A last run is left to finish every session begun. Then
``check_soak`` reads the store and the notes and counts what went wrong:

- ``lost``: entries a worker saw acknowledged that the log does not hold at their seq;
- ``repeated``: tool runs beyond the first of one call id (the side file), ``phantom``: runs of
  a call no log holds, ``unrun``: successful results of calls that never ran;
- ``invalid``: requests a wire format refuses, as the model received them (noted by the worker)
  or as rebuilt from the final log; ``inexact``: dispatched requests the log cannot rebuild;
- ``checkpoints``: mid-conversation changes that do not match their checkpoint hashes;
- ``broken``: logs with a gap, a call without exactly one result, a prompt missing, twice or out
  of order, a turn without its answer, or an orphan session holding entries.

Used by ``test_crash_soak.py`` (CI) and ``benchmarks/crash_soak.py`` (more kills).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import agentsession as ags
from agentsession.log import AssistantEntry, Interrupted, Record, ToolResultEntry, UserEntry

from .common import check_log, fingerprint, plan_prompt, side_runs, side_tool, text_of
from .soak_worker import config, open_store, parse_note, read_lines

ROOT = Path(__file__).resolve().parents[2]
#: The number of sessions a run is told to drive while the soak kills: more than it can reach.
UNENDING = 10**9
NOTHING_YET = "nothing written yet"


class Zygote:
    """The process that forks worker runs (see ``soak_worker``)."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.durability.soak_worker"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the zygote ended (exit code {self._process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def start(self, job: dict[str, Any]) -> int:
        return int(self._ask({"op": "run", "job": job})["pid"])

    def wait(self, pid: int, timeout: float = 0) -> int | None:
        """How the run ended (``-9``: killed); ``None`` if still running after ``timeout``."""
        code = self._ask({"op": "wait", "pid": pid, "timeout": timeout})["code"]
        return None if code is None else int(code)

    def close(self) -> None:
        """Close its input: it exits; wait for it."""
        pipes: list[IO[str] | None] = [self._process.stdin, self._process.stdout]
        try:
            if pipes[0] is not None:
                pipes[0].close()
            self._process.wait(timeout=30)
        finally:
            if pipes[1] is not None:
                pipes[1].close()


@dataclass
class SoakReport:
    """The counts of one soak; every count after ``recoveries`` should be 0."""

    kills: int = 0
    runs: int = 0
    recoveries: int = 0
    interrupted: int = 0
    sessions: int = 0
    entries: int = 0
    requests: int = 0
    tool_runs: int = 0
    lost: int = 0
    repeated: int = 0
    phantom: int = 0
    unrun: int = 0
    invalid: int = 0
    inexact: int = 0
    checkpoints: int = 0
    broken: int = 0
    landed: Counter[str] = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)

    def failures(self) -> dict[str, int]:
        """The counts that must be 0, by name."""
        names = ("lost", "repeated", "phantom", "unrun", "invalid", "inexact")
        return {n: getattr(self, n) for n in (*names, "checkpoints", "broken")}


@dataclass
class SoakPlan:
    """Where the store is (a DSN when ``postgres``), where the files go, how hard to kill."""

    db: str
    folder: Path
    kills: int
    postgres: bool = False
    seed: int = 0
    prompts: int = 6
    min_delay: float = 0.02
    max_delay: float = 0.35
    pause: float = 0.004
    must_land: tuple[str, ...] = ()
    time_limit: float = 900.0


#: Every kind of point a turn passes: a model call in flight, tool calls about to run, a tool
#: result committed, a finished turn (between turns). Kills must reach each at least once.
TURN_POINTS = (
    "admission (model call in flight)",
    "response with tool calls",
    "tool_result",
    "final answer",
)


def run_soak(plan: SoakPlan) -> SoakReport:
    """Kill worker runs until ``plan.kills`` kills landed, finish, then check everything."""
    (plan.folder / "project" / ".git").mkdir(parents=True, exist_ok=True)
    report = SoakReport()
    with asyncio.Runner() as runner:
        store = open_store(plan.db, plan.postgres)
        try:
            sessions = _kill_runs(plan, report, lambda: runner.run(_landing(store, plan.folder)))
            runner.run(check_soak(plan, sessions, report, store))
        finally:
            runner.run(store.close())
    return report


def _kill_runs(plan: SoakPlan, report: SoakReport, landing: Callable[[], str]) -> int:
    """The kills, then the last run that finishes every session begun; returns their number.

    While killing, the plan has no end (a run always has a next prompt or session to start);
    the last run finishes the sessions created so far.
    """
    rng = random.Random(plan.seed)
    zygote = Zygote()
    deadline = time.monotonic() + plan.time_limit
    stretch = 1.0
    notes = plan.folder / "notes.jsonl"
    try:
        while report.kills < plan.kills or (
            not set(plan.must_land) <= set(report.landed) and time.monotonic() < deadline
        ):
            written = notes.stat().st_size if notes.exists() else 0
            job = _job(plan, UNENDING, report.runs)
            pid = zygote.start(job)
            report.runs += 1
            time.sleep(rng.uniform(plan.min_delay, plan.max_delay) * stretch)
            os.kill(pid, signal.SIGKILL)
            if zygote.wait(pid) != -signal.SIGKILL:
                raise AssertionError(f"a worker run failed:\n{Path(job['err']).read_text()}")
            report.kills += 1
            where = landing()
            report.landed[where] += 1
            # A run killed before its first commit only repeats where the last one stopped (under
            # load most of them, and the later points of a turn are then never reached): wait
            # longer. A run that got somewhere lets the delays shrink back, a little at a time.
            if (notes.stat().st_size if notes.exists() else 0) == written:
                stretch = min(stretch * 1.25, 30.0)
            else:
                stretch = max(stretch * 0.95, 1.0)
        sessions = len(read_lines(plan.folder / "index.jsonl"))
        job = _job(plan, sessions, report.runs)
        pid = zygote.start(job)
        report.runs += 1
        code = zygote.wait(pid, timeout=300)
        if code != 0:
            os.kill(pid, signal.SIGKILL)
            zygote.wait(pid)
            raise AssertionError(f"the last run ended with {code}:\n{Path(job['err']).read_text()}")
    finally:
        zygote.close()
    return sessions


async def _landing(store: ags.Store, folder: Path) -> str:
    """Where a kill landed: the last entry the killed run committed to its current session."""
    session_id = None
    with (folder / "notes.jsonl").open("rb") as notes:
        notes.seek(max(0, notes.seek(0, os.SEEK_END) - 4096))
        for line in reversed(notes.read().splitlines()[1:]):
            note = parse_note(line)
            if note is not None and "s" in note:
                session_id = note["s"]
                break
    if session_id is None:
        return NOTHING_YET
    info = await store.get_session(session_id)
    last = (await store.read(session_id, max(0, info.next_seq - 1)))[-1].entry
    if isinstance(last, AssistantEntry):
        return "response with tool calls" if last.tool_calls else "final answer"
    return {"dispatch": "admission (model call in flight)"}.get(last.kind, last.kind)


def _job(plan: SoakPlan, sessions: int, run: int) -> dict[str, Any]:
    return {
        "db": plan.db,
        "postgres": plan.postgres,
        "folder": str(plan.folder),
        "sessions": sessions,
        "prompts": plan.prompts,
        "seed": plan.seed * 1_000_003 + run,
        "pause": plan.pause,
        "name": "worker",
        "err": str(plan.folder / "worker.err"),
    }


async def check_soak(plan: SoakPlan, sessions: int, report: SoakReport, store: ags.Store) -> None:
    """Read everything back and fill in the counts of ``report``."""
    notes = read_lines(plan.folder / "notes.jsonl")
    index = {int(n["n"]): str(n["s"]) for n in read_lines(plan.folder / "index.jsonl")}
    report.recoveries = sum("recovered" in n for n in notes)
    report.invalid += sum(len(n["invalid"]) for n in notes if "invalid" in n)
    acked: dict[str, list[dict[str, Any]]] = {}
    for note in notes:
        if "fp" in note:
            acked.setdefault(note["s"], []).append(note)
    runs = side_runs(plan.folder / "side.txt")
    report.tool_runs = sum(runs.values())
    report.repeated = sum(count - 1 for count in runs.values())
    calls: set[str] = set()
    if sorted(index) != list(range(sessions)):
        report.broken += 1
        report.details.append(f"sessions planned {sessions}, created {sorted(index)}")
    for number, session_id in sorted(index.items()):
        records = await store.read(session_id)
        info = await store.get_session(session_id)
        if info.next_seq != len(records):
            report.broken += 1
        report.sessions += 1
        report.entries += len(records)
        _check_acked(records, acked.pop(session_id, []), report)
        _check_session(records, number, plan.prompts, runs, report)
        calls.update(c.id for r in records for c in _calls(r))
    for info in await store.list_sessions():
        if info.id not in index.values() and info.next_seq:
            report.broken += 1  # a session the workers never learned of holds entries
            report.details.append(f"orphan session {info.id} holds entries")
    report.lost += sum(len(n["fp"]) for notes_ in acked.values() for n in notes_)
    report.phantom = sum(1 for call_id in runs if call_id not in calls)


def _calls(record: Record) -> tuple[ags.ToolCall, ...]:
    entry = record.entry
    return entry.tool_calls if isinstance(entry, AssistantEntry) else ()


def _check_acked(records: list[Record], acked: list[dict[str, Any]], report: SoakReport) -> None:
    """Every acknowledged entry is in the log at its seq, unchanged."""
    for note in acked:
        for offset, expected in enumerate(note["fp"]):
            seq = note["seq"] + offset
            if seq >= len(records) or fingerprint(records[seq].entry) != expected:
                report.lost += 1
                report.details.append(f"acknowledged entry {seq} is not in the log")


def _check_session(
    records: list[Record], number: int, prompts: int, runs: Counter[str], report: SoakReport
) -> None:
    """The log is whole, its requests valid and exact; every prompt once, in order, answered."""
    found = check_log(records, [side_tool(Path("unused"))], config())
    report.requests += found.requests
    report.invalid += len(found.invalid)
    report.inexact += len(found.inexact)
    report.checkpoints += len(found.checkpoints)
    report.broken += len(found.gaps) + len(found.unpaired)
    report.details.extend(found.problems())
    report.interrupted += sum(isinstance(r.entry, Interrupted) for r in records)
    users = [text_of(r.entry.content) for r in records if isinstance(r.entry, UserEntry)]
    if users != [plan_prompt(f"s{number}", k) for k in range(prompts)]:
        report.broken += 1
        report.details.append(f"session {number}: prompts {users}")
    last = records[-1].entry if records else None
    if not (isinstance(last, AssistantEntry) and not last.tool_calls):
        report.broken += 1
        report.details.append(f"session {number}: the last turn has no answer")
    for record in records:
        entry = record.entry
        if isinstance(entry, ToolResultEntry) and not entry.is_error and runs[entry.call_id] != 1:
            report.unrun += 1


def table(report: SoakReport, label: str) -> str:
    """The soak's figures as a Markdown table row set."""
    rows = [
        ("kills (SIGKILL at a random moment)", report.kills),
        *((f"… landed after: {where}", n) for where, n in report.landed.most_common()),
        ("worker runs", report.runs),
        ("recoveries (an unfinished turn finished by the next run)", report.recoveries),
        ("steps recorded as interrupted", report.interrupted),
        ("sessions / entries / dispatched requests", None),
        ("tool runs", report.tool_runs),
        ("lost committed entries", report.lost),
        ("repeated tool runs", report.repeated),
        ("tool runs of calls no log holds", report.phantom),
        ("successful results without a run", report.unrun),
        ("invalid requests (received or rebuilt, 4 formats)", report.invalid),
        ("requests the log does not rebuild exactly", report.inexact),
        ("checkpoint mismatches", report.checkpoints),
        ("broken logs (gaps, unpaired calls, prompts, answers)", report.broken),
    ]
    lines = [f"| {label} | figure |", "|---|---:|"]
    for name, value in rows:
        shown = (
            f"{report.sessions} / {report.entries} / {report.requests}"
            if value is None
            else str(value)
        )
        lines.append(f"| {name} | {shown} |")
    return "\n".join(lines)
