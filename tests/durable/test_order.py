"""A session's turns run one at a time, in enqueue order, even when DBOS starts two at once.

DBOS's partition (one turn of a session at a time) is a read then a write; on a SQLite system
database two workers once both read a session's partition free and ran its second turn beside
its first (issue 38). Here DBOS's partition limit is left out on purpose and one worker takes
two turns of one session at once; the first turn's tool call ends only once the second turn
says (its ``WAITS_FOR`` event) that it waits for the first — without the package's order step
it never does, and the call gives up. Each turn answers its own prompt, the prompts reach the
log in enqueue order, and the second turn's recorded order step says it waited for one turn.
No timing is asserted.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentsession.durable.steps import _own_turn
from agentsession.log import AssistantEntry, Dispatch, Record, UserEntry

from .test_dbos import Setup, read_log, run_module, sessions, setup

pytest.importorskip("dbos", reason="the durable extra (DBOS) is not installed")
__all__ = ["setup"]  # the fixture, shared with the DBOS tests


def _race(plan: Path) -> list[Any]:
    """Run ``race_worker`` on ``plan``; its results."""
    done = run_module("tests.durable.race_worker", plan)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(plan.read_text(encoding="utf-8"))["out"]
    results: list[Any] = json.loads(Path(out).read_text(encoding="utf-8"))
    return results


async def test_a_turn_started_beside_an_earlier_one_of_its_session_waits_for_it(
    setup: Setup,
) -> None:
    (sid,) = await sessions(setup, 1)
    texts = ["race prompt 1: 1x1", "race prompt 2: 1x1"]
    run = uuid.uuid4().hex[:8]
    ids = [f"race-{run}-{n}" for n in (1, 2)]  # sorting in enqueue order, as ids must
    plan = setup.plan(sid, [], ids=ids, texts=texts)
    *results, waited = _race(plan)

    assert [r["text"] for r in results] == [f" answered: {t}" for t in texts]
    assert waited == [1]  # the second turn ran beside the first, and waited for it
    log = await read_log(setup, sid)
    assert [r.entry.content for r in log if isinstance(r.entry, UserEntry)] == texts
    tools = [r.entry for r in log if isinstance(r.entry, AssistantEntry) and r.entry.tool_calls]
    assert len(tools) == 2  # each turn's one call ran once


def test_a_turn_settles_with_its_own_answer_when_a_later_turn_followed() -> None:
    def dispatch(seq: int) -> Record:
        return Record(seq, Dispatch(model="m", step=1, digest="d"))

    turn = [dispatch(2), Record(3, AssistantEntry("first"))]
    compacted = [dispatch(4), Record(5, AssistantEntry("again"))]  # the same turn, compacted
    later = [Record(6, UserEntry("next")), dispatch(7), Record(8, AssistantEntry("second"))]
    assert _own_turn([*turn, *compacted, *later]) == [*turn, *compacted]
    assert _own_turn(turn) == turn


def test_the_sqlite_system_engine_refuses_another_database(tmp_path: Path) -> None:
    from agentsession.durable.dbos import sqlite_system_database
    from agentsession.errors import UsageError

    with pytest.raises(UsageError, match="not a SQLite URL"):
        sqlite_system_database("postgresql://localhost/dbos")
    engine = sqlite_system_database(f"sqlite:///{tmp_path / 'dbos.sqlite'}")
    try:
        with engine.begin() as conn:  # a transaction of its own, begun before the first read
            assert conn.exec_driver_sql("SELECT 1").scalar() == 1
            raw = conn.connection.dbapi_connection
            assert raw is not None and raw.in_transaction
    finally:
        engine.dispose()
