"""The inbox under SIGKILL: each accepted input is delivered exactly once, in order, in place.

Hypothesis draws a plan: which inputs (steer, queue, cancel of an earlier one) a tool call makes
while its turn runs — each from a task of its own — and at which point the process is killed:
a numbered point (a model call, a tool call starting, an input accepted, a cancel answered) at
which the child sends itself SIGKILL, so the kill lands where the plan says, whatever the load.
A second process reopens the session, finishes the turn the kill cut (``retry()``) and delivers
what is pending (``deliver_pending()``). Then the log must show every accepted input delivered
exactly once (or cancelled, never both), as the user entry right after its ``input_delivered``,
steers and queued inputs each in the order accepted, never between a tool call and its result,
and every request rebuilt exactly, with each steer where it was sent.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.log import (
    AssistantEntry,
    InputCancelled,
    InputDelivered,
    InputQueued,
    Record,
    ToolResultEntry,
    UserEntry,
)

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

WAIT = 120.0


@ags.tool
async def act(n: int) -> str:
    """Do one piece of the work.

    Args:
        n: Which piece.
    """
    return f"acted {n}"  # the child's twin makes the inputs; this one only declares the tool


CHILD = textwrap.dedent(
    '''
    """One run of the plan: ``first`` makes the inputs (and may be killed), ``recover`` finishes."""

    import asyncio
    import json
    import os
    import signal
    import sys

    import agentsession as ags

    db, side, plan_text, phase, project = sys.argv[1:6]
    plan = json.loads(plan_text)
    batches = list(plan["batches"]) if phase == "first" else []
    kill_at = plan["kill_at"] if phase == "first" else 0
    points = [0]
    holder = {}
    accepted = []


    def point() -> None:
        points[0] += 1
        if points[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


    def note(value) -> None:
        # One write on an O_APPEND descriptor: a line is whole even if the process dies next.
        fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, (json.dumps(value) + "\\n").encode())
        finally:
            os.close(fd)


    @ags.tool
    async def act(n: int) -> str:
        """Do one piece of the work.

        Args:
            n: Which piece.
        """
        point()
        session = holder["session"]
        for op in batches.pop(0) if batches else []:
            if op[0] in ("steer", "queue"):
                text = f"{op[0]} {len(accepted)}"
                given = await asyncio.create_task(getattr(session, op[0])(text))
                accepted.append(given.id)
                note({"accepted": given.id, "mode": op[0], "text": text})
            elif accepted:
                target = accepted[op[1] % len(accepted)]
                if await asyncio.create_task(session.cancel_input(target)):
                    note({"cancelled": target})
            point()
        return f"acted {n}"


    def reply(request):
        point()
        if request.messages[-1].role == "user":
            return [ags.ToolCall("act", {"n": len(request.messages)})]
        return "done"


    async def main() -> None:
        runtime = ags.Runtime(
            store=ags.SQLiteStore(db),
            model=ags.ScriptedModel(reply),
            tools=[act],
            project_dir=project,
            config=ags.Config(retry_base_delay=0, titles=False, environment=()),
        )
        if phase == "first":
            session = await runtime.create_session()
            note({"session": session.id})
            holder["session"] = session
            await session.prompt("start")
        else:
            lines = [json.loads(line) for line in open(side, encoding="utf-8")]
            session = await runtime.open_session(lines[0]["session"])
            holder["session"] = session
            try:
                await session.retry()
            except ags.UsageError as exc:
                if "nothing to retry" not in str(exc):
                    raise
        await session.deliver_pending()
        await runtime.close()


    asyncio.run(main())
    '''
)

_op = st.one_of(
    st.tuples(st.just("steer")),
    st.tuples(st.just("queue")),
    st.tuples(st.just("cancel"), st.integers(0, 5)),
)
_plans = st.fixed_dictionaries(
    {
        "batches": st.lists(st.lists(_op, max_size=3), min_size=1, max_size=4),
        # 0: no kill; else the numbered point the first process dies at.
        "kill_at": st.integers(0, 22),
    }
)


def run_child(script: Path, folder: Path, plan: dict[str, Any], phase: str) -> int:
    """Run one phase to its end (or its SIGKILL); its return code."""
    db, side = folder / "inbox.db", folder / "side.jsonl"
    child = subprocess.run(
        [sys.executable, str(script), str(db), str(side), json.dumps(plan), phase, str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=WAIT,
        check=False,
    )
    if child.returncode not in (0, -signal.SIGKILL) or (phase == "recover" and child.returncode):
        pytest.fail(f"{phase} run failed ({child.returncode}): {child.stderr.decode()[-3000:]}")
    return child.returncode


def check_log(records: Sequence[Record], notes: Sequence[dict[str, Any]]) -> None:
    entries = [r.entry for r in records]
    queued = {e.input_id: e for e in entries if isinstance(e, InputQueued)}
    # Accepted (the call returned) means durable.
    assert {n["accepted"] for n in notes if "accepted" in n} <= set(queued)
    delivered: list[InputQueued] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, InputDelivered):
            after = entries[index + 1]
            assert isinstance(after, UserEntry) and after.content == queued[entry.input_id].text
            delivered.append(queued[entry.input_id])
    cancelled = [e.input_id for e in entries if isinstance(e, InputCancelled)]
    landed = [d.input_id for d in delivered]
    # Exactly once: delivered or cancelled, never both, never twice; nothing left behind.
    assert sorted(landed + cancelled) == sorted(queued)
    order = list(queued)
    for mode in ("steer", "queue"):
        mine = [d.input_id for d in delivered if d.mode == mode]
        assert mine == sorted(mine, key=order.index), f"{mode}s out of order"
    # Never between a call and its result: after an assistant entry with calls, its results
    # come before any user entry.
    waiting: set[str] = set()
    for entry in entries:
        if isinstance(entry, AssistantEntry):
            assert not waiting
            waiting = {c.id for c in entry.tool_calls}
        elif isinstance(entry, ToolResultEntry):
            waiting.discard(entry.call_id)
        elif isinstance(entry, UserEntry):
            assert not waiting, "a user entry between a tool call and its result"


async def check_requests(db: Path, folder: Path, session_id: str) -> None:
    """Every request rebuilds exactly; each delivered input is a user message of the request
    its admission dispatched, after every tool result of that request."""
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=ags.ScriptedModel([]),
        tools=[act],
        project_dir=folder,
        config=ags.Config(titles=False, environment=()),
    )
    try:
        session = await runtime.open_session(session_id)
        records = await session.log()
        requests = {info.seq: info for info in (await session.inspect()).requests}
        assert all(info.exact for info in requests.values()), [
            i.mismatch for i in requests.values()
        ]
        for index, record in enumerate(records):
            if not isinstance(record.entry, InputDelivered):
                continue
            text = records[index + 1].entry
            assert isinstance(text, UserEntry)
            dispatch = next(r.seq for r in records[index:] if r.entry.kind == "dispatch")
            messages = list(requests[dispatch].request.messages)
            tail = []
            while messages and isinstance(messages[-1], ags.UserMessage | ags.SystemMessage):
                tail.append(messages.pop())
            assert any(m.content == text.content for m in tail), "the steer is not where sent"
    finally:
        await runtime.close()


@settings(
    max_examples=6,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a shrink costs processes; no shrink
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=_plans)
@example(plan={"batches": [[["steer"], ["queue"]], [["steer"], ["cancel", 1]]], "kill_at": 0})
@example(plan={"batches": [[["steer"], ["queue"], ["steer"]]], "kill_at": 5})
def test_every_accepted_input_lands_once_in_order_through_sigkill(
    tmp_path_factory: pytest.TempPathFactory, plan: dict[str, Any]
) -> None:
    folder = tmp_path_factory.mktemp("inbox")
    script = folder / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    run_child(script, folder, plan, "first")
    side = folder / "side.jsonl"
    if not side.exists():
        return  # killed before the session was made: nothing was accepted
    run_child(script, folder, plan, "recover")
    notes = [json.loads(line) for line in side.read_text(encoding="utf-8").splitlines()]
    session_id = notes[0]["session"]

    async def read() -> list[Record]:
        store = ags.SQLiteStore(folder / "inbox.db")
        try:
            return await store.read(session_id)
        finally:
            await store.close()

    check_log(asyncio.run(read()), notes)
    asyncio.run(check_requests(folder / "inbox.db", folder, session_id))
