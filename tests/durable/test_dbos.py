"""Turns as DBOS workflows, on SQLite and on PostgreSQL, run by real worker processes.

Each worker is ``tests.durable.worker`` in a subprocess. A turn with tool calls completes; a
worker SIGKILLed right after each of the turn's commits (a step boundary: the effect durable,
the engine not told) leaves a turn that a fresh worker finishes with every tool run once and a
log equal, entry for entry, to an uninterrupted run's; a worker killed inside a tool leaves the
call closed as "may have run", never run again. DBOS keeps the same bytes per turn however long
the session grows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.engine.recovery import INTERRUPTED_RESULT
from agentsession.log import ToolResultEntry

from ..durability.common import check_log, planned_reply, side_runs, side_tool
from ..store import pg
from .common import drive, shape
from .engine_state import engine_bytes
from .worker import CONFIG, store_of

pytest.importorskip("dbos", reason="the durable extra (DBOS) is not installed")
ROOT = Path(__file__).resolve().parents[2]
#: One round of two parallel ``work`` calls, then text: six commits (see ``worker``).
TEXT = "kill prompt 3: 1x2"
COMMITS = 6


@dataclass
class Setup:
    """Where one test's sessions and DBOS state live."""

    store: str
    system_db: str
    schema: str
    tmp: Path

    def plan(self, session: str, turns: list[tuple[str, str]], **extra: Any) -> Path:
        plan = {
            "store": self.store,
            "system_db": self.system_db,
            "schema": self.schema,
            "side": str(self.tmp / "side.txt"),
            "session": session,
            "turns": [{"id": wid, "text": text} for wid, text in turns],
            "out": str(self.tmp / f"out-{uuid.uuid4().hex[:8]}.json"),
            **extra,
        }
        path = self.tmp / f"plan-{uuid.uuid4().hex[:8]}.json"
        path.write_text(json.dumps(plan), encoding="utf-8")
        return path

    def runtime(self) -> ags.Runtime:
        store = store_of({"store": self.store})
        return ags.Runtime(
            model=ags.ScriptedModel(lambda r: "unused"),
            store=store,
            tools=[side_tool(self.tmp / "side.txt")],
            project_dir=self.tmp,
            config=CONFIG,
        )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    if request.param == "sqlite":
        yield Setup(
            f"sqlite:{tmp_path / 'sessions.db'}",
            f"sqlite:///{tmp_path / 'dbos.sqlite'}",
            "",
            tmp_path,
        )
        return
    dsn = request.getfixturevalue("pg_dsn")
    schema = f"dbos_{uuid.uuid4().hex[:12]}"
    try:
        yield Setup(f"postgres:{dsn}", pg.server_dsn(), schema, tmp_path)
    finally:
        pg.run(pg.server_dsn(), f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def run_module(module: str, plan: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m module plan`` from the repository root; how it ended."""
    return subprocess.run(
        [sys.executable, "-m", module, str(plan)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def work(plan: Path, *, killed: bool = False) -> list[dict[str, Any]]:
    """Run one worker on ``plan``; its results, or check that it was SIGKILLed."""
    done = run_module("tests.durable.worker", plan)
    if killed:
        assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
        return []
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(plan.read_text(encoding="utf-8"))["out"]
    results: list[dict[str, Any]] = json.loads(Path(out).read_text(encoding="utf-8"))
    return results


async def sessions(setup: Setup, n: int) -> list[str]:
    runtime = setup.runtime()
    try:
        return [(await runtime.create_session()).id for _ in range(n)]
    finally:
        await runtime.close()


async def reference(setup: Setup, text: str) -> list[tuple[int, str, str]]:
    """The log of one uninterrupted turn of ``text``, run by the neutral steps in this process."""
    runtime = ags.Runtime(
        model=ags.ScriptedModel(planned_reply),
        store=store_of({"store": setup.store}),
        tools=[side_tool(setup.tmp / "reference-side.txt")],
        project_dir=setup.tmp,
        config=CONFIG,
    )
    try:
        sid = (await runtime.create_session()).id
        await drive(runtime, sid, text)
        return shape(await runtime.store.read(sid))
    finally:
        await runtime.close()


async def read_log(setup: Setup, sid: str) -> list[Any]:
    runtime = setup.runtime()
    try:
        return await runtime.store.read(sid)
    finally:
        await runtime.close()


async def test_turns_with_tool_calls_complete_through_dbos(setup: Setup) -> None:
    (sid,) = await sessions(setup, 1)
    texts = ["dbos prompt 1: 2x2", "dbos prompt 2: 0x1", TEXT]
    results = work(setup.plan(sid, [(uuid.uuid4().hex, t) for t in texts]))
    assert [r["text"] for r in results] == [f" answered: {t}" for t in texts]
    assert {r["stop_reason"] for r in results} == {"end_turn"}
    records = await read_log(setup, sid)
    assert results[-1]["last_seq"] == records[-1].seq
    report = check_log(records, [side_tool(setup.tmp / "side.txt")], CONFIG)
    assert not (report.gaps or report.unpaired or report.inexact or report.invalid)
    runs = side_runs(setup.tmp / "side.txt")
    assert len(runs) == 4 + 2 and set(runs.values()) == {1}


@pytest.mark.parametrize("kill_after", range(1, COMMITS + 1))
async def test_a_worker_killed_at_a_step_boundary_loses_and_repeats_nothing(
    setup: Setup, kill_after: int
) -> None:
    (sid,) = await sessions(setup, 1)
    clean = await reference(setup, TEXT)
    turn = [(uuid.uuid4().hex, TEXT)]
    work(setup.plan(sid, turn, kill_after=kill_after), killed=True)
    (result,) = work(setup.plan(sid, turn))
    assert result["text"] == f" answered: {TEXT}"
    runs = side_runs(setup.tmp / "side.txt")
    assert sorted(runs) == ["kill.3.0.0", "kill.3.0.1"] and set(runs.values()) == {1}
    assert shape(await read_log(setup, sid)) == clean


async def test_a_worker_killed_inside_a_tool_never_runs_it_twice(setup: Setup) -> None:
    (sid,) = await sessions(setup, 1)
    turn = [(uuid.uuid4().hex, TEXT)]
    work(setup.plan(sid, turn, kill_in_tool=True), killed=True)
    (result,) = work(setup.plan(sid, turn))
    assert result["text"] == f" answered: {TEXT}"
    runs = side_runs(setup.tmp / "side.txt")
    assert runs == {"kill.3.0.0": 1, "kill.3.0.1": 1}  # the first by the killed worker
    results = [r.entry for r in await read_log(setup, sid) if isinstance(r.entry, ToolResultEntry)]
    assert [r.content == INTERRUPTED_RESULT["process"] for r in results] == [True, False]


async def test_engine_bytes_per_turn_stay_flat_as_the_session_grows(setup: Setup) -> None:
    (sid,) = await sessions(setup, 1)
    turns = [(uuid.uuid4().hex, f"flat prompt {k:02d}: 1x1") for k in range(12)]
    work(setup.plan(sid, turns))
    sizes = engine_bytes(setup.system_db, [w for w, _ in turns], setup.schema or "dbos")
    first, last = sizes[turns[0][0]], sizes[turns[-1][0]]
    log = await read_log(setup, sid)
    assert len(log) > 60  # the session grew twelvefold, its entries carrying the conversation
    assert first > 0 and last <= first + 64, sizes  # a few more digits in the seqs, no more
