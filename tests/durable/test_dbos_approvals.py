"""Approvals in DBOS turns, on SQLite and PostgreSQL, run by real worker processes.

A turn whose call the preset asks about settles as ``approval_required`` with the waiting call
ids, having run nothing; ``resume_turn`` with the user's answer finishes it in a workflow of its
own. A worker SIGKILLed after a commit of that workflow leaves a turn another worker finishes
and the call never runs twice: killed after the answer was committed but before the call's
result, the call is closed as "may have run" and not run; killed after its result, the log
equals an uninterrupted run's. (The model steps that follow are the ones the kill tests of
``test_dbos`` cover.)
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agentsession.engine.recovery import INTERRUPTED_RESULT
from agentsession.log import ToolResultEntry

from ..durability.common import side_runs
from .common import shape
from .test_dbos import Setup, read_log, sessions, setup, work

pytest.importorskip("dbos", reason="the durable extra (DBOS) is not installed")
__all__ = ["setup"]  # the fixture, shared with the DBOS tests
TEXT = "ask prompt 1: 1x1"
CALL = "ask.1.0.0"


def _resume(approved: bool = True) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "answers": [{"call_id": CALL, "approved": approved}]}


async def _paused(setup: Setup, sid: str) -> None:
    (paused,) = work(setup.plan(sid, [(uuid.uuid4().hex, TEXT)], ask=True))
    assert (paused["stop_reason"], paused["waiting"]) == ("approval_required", [CALL])


async def test_an_approval_settles_the_turn_and_resume_turn_finishes_it(setup: Setup) -> None:
    (sid,) = await sessions(setup, 1)
    await _paused(setup, sid)
    assert not side_runs(setup.tmp / "side.txt")
    (done,) = work(setup.plan(sid, [], ask=True, resume=_resume()))
    assert (done["text"], done["stop_reason"]) == (f" answered: {TEXT}", "end_turn")
    assert side_runs(setup.tmp / "side.txt") == {CALL: 1}
    kinds = [r.entry.kind for r in await read_log(setup, sid)]
    assert kinds.count("approval_requested") == kinds.count("approval_decided") == 1


@pytest.mark.parametrize("kill_after", [1, 2], ids=["after-the-answer", "after-the-result"])
async def test_a_worker_killed_while_resuming_never_runs_the_call_twice(
    setup: Setup, kill_after: int
) -> None:
    clean, killed = await sessions(setup, 2)
    side = setup.tmp / "side.txt"
    clean_log: list[Any] = []
    if kill_after > 1:
        await _paused(setup, clean)
        work(setup.plan(clean, [], ask=True, resume=_resume()))
        clean_log = shape(await read_log(setup, clean))
        side.unlink()

    await _paused(setup, killed)
    resume = _resume()
    work(setup.plan(killed, [], ask=True, resume=resume, kill_after=kill_after), killed=True)
    (done,) = work(setup.plan(killed, [], ask=True, resume=resume))
    assert done["stop_reason"] == "end_turn"
    runs = side_runs(side)
    log = await read_log(setup, killed)
    results = [r.entry for r in log if isinstance(r.entry, ToolResultEntry)]
    if kill_after == 1:  # the answer stored, the call not begun: unknown, so never run
        assert not runs
        assert [r.content for r in results] == [INTERRUPTED_RESULT["process"]]
    else:  # the result stored: found, not run again; the log is an uninterrupted run's
        assert runs == {CALL: 1}
        assert shape(log) == clean_log
