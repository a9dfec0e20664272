"""SIGKILL a real process mid-turn: what was committed survives, and reopening tells the truth."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.log import Dispatch, Interrupted, ToolResultEntry, UserEntry
from agentsession.request import digest as request_digest

from .conftest import ScriptedRuntime

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

WAIT = 120.0  # a bound for a child that never gets there, not a measure

CHILD = textwrap.dedent(
    '''
    """Run two prompts; the second one hangs (in a tool or in the model) until it is killed."""

    import asyncio
    import json
    import os
    import sys
    import time
    from pathlib import Path

    import agentsession as ags

    db, marker, side, mode, project = sys.argv[1:6]
    calls = {"tool": 0, "model": 0}


    def hang() -> None:
        # Written aside, then renamed: the parent never sees the marker half-written.
        Path(marker + ".part").write_text(str(os.getpid()))
        os.replace(marker + ".part", marker)
        time.sleep(600)


    @ags.tool
    def step(n: int) -> str:
        """Do one numbered step.

        Args:
            n: The step number.
        """
        calls["tool"] += 1
        if mode == "tool" and calls["tool"] == 2:
            hang()
        return f"step {n} done"


    def reply(request):
        calls["model"] += 1
        last = request.messages[-1]
        if mode == "model" and calls["model"] == 3:
            hang()
        if last.role == "user":
            return [ags.ToolCall("step", {"n": calls["model"]})]
        return f"finished after {last.content}"


    async def main() -> None:
        runtime = ags.Runtime(
            store=ags.SQLiteStore(db),
            model=ags.ScriptedModel(reply),
            tools=[step],
            project_dir=project,
            config=ags.Config(retry_base_delay=0),
        )
        session = await runtime.create_session()
        with open(side, "a", encoding="utf-8") as out:
            for text in ("first prompt", "second prompt"):
                async for event in session.stream(text):
                    if isinstance(event, ags.StepCommitted):
                        records = await session.log(event.first_seq, event.last_seq + 1)
                        line = {
                            "session": session.id,
                            "what": event.what,
                            "entries": [[r.seq, r.entry.kind] for r in records],
                        }
                        out.write(json.dumps(line) + "\\n")
                        out.flush()
                        os.fsync(out.fileno())
        await runtime.close()


    asyncio.run(main())
    '''
)


@ags.tool
def step(n: int) -> str:
    """Do one numbered step.

    Args:
        n: The step number.
    """
    return f"step {n} done again"


def run_until_hung(tmp_path: Path, mode: str) -> tuple[Path, list[dict[str, Any]]]:
    """Start the child, wait until it hangs, SIGKILL it; return the db and its commit notes."""
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    db = tmp_path / "kill.db"
    marker = tmp_path / "hung"
    side = tmp_path / "committed.jsonl"
    stderr = tmp_path / "child.err"
    with stderr.open("wb") as err:
        child = subprocess.Popen(
            [sys.executable, str(script), str(db), str(marker), str(side), mode, str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + WAIT
            while not marker.exists():
                if child.poll() is not None:
                    pytest.fail(f"the child exited early: {stderr.read_text()}")
                if time.monotonic() > deadline:
                    pytest.fail("the child never reached the hanging call")
                time.sleep(0.02)
            assert marker.read_text() == str(child.pid)
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(timeout=WAIT) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=WAIT)
    notes = [json.loads(line) for line in side.read_text(encoding="utf-8").splitlines()]
    return db, notes


def make_runtime(tmp_path: Path, db: Path, replies: Any) -> ScriptedRuntime:
    return ScriptedRuntime(
        store=ags.SQLiteStore(db),
        model=ags.ScriptedModel(replies),
        tools=[step],
        project_dir=tmp_path,
        config=ags.Config(retry_base_delay=0),
    )


async def check_committed(runtime: ags.Runtime, notes: list[dict[str, Any]]) -> list[Any]:
    """Every entry the child saw committed is stored, decodes, and nothing else is there."""
    session_id = notes[0]["session"]
    committed = [tuple(pair) for note in notes for pair in note["entries"]]
    records = await runtime.store.read(session_id)
    assert [(r.seq, r.entry.kind) for r in records] == committed
    assert [r.seq for r in records] == list(range(len(records)))
    info = await runtime.store.get_session(session_id)
    assert info.next_seq == len(records)
    return records


async def test_kill_while_a_tool_runs(tmp_path: Path) -> None:
    db, notes = run_until_hung(tmp_path, "tool")
    # First turn complete, second turn: admission, response with the call, then the kill.
    assert [n["what"] for n in notes] == [
        "admission",
        "response",
        "tool_result",
        "admission",
        "response",
        "admission",
        "response",
    ]
    runtime = make_runtime(tmp_path, db, ["after the crash"])
    try:
        records = await check_committed(runtime, notes)
        kinds = [r.entry.kind for r in records]
        assert kinds[0] == "user" and "epoch" in kinds
        assert kinds[-3:] == ["user", "dispatch", "assistant"]
        pending_call = records[-1].entry.tool_calls[0]
        assert pending_call.name == "step"
        assert [e.kind for e in [r.entry for r in records]].count("tool_result") == 1

        session = await runtime.open_session(notes[0]["session"])
        # The dangling call already shows as interrupted, though nothing was written yet.
        assert [m.role for m in session.messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "tool",
        ]
        shown = session.messages[-1]
        assert isinstance(shown, ags.ToolResultMessage) and shown.is_error
        assert shown.call_id == pending_call.id and "process ended" in str(shown.content)
        assert len(await session.log()) == len(records)
        assert session.messages[3].content == "finished after step 1 done"
        assert session.title == "first prompt"

        result = await session.prompt("are you still there?")
        assert result.text == "after the crash"

        tail = [r.entry for r in await session.log(len(records))]
        assert [e.kind for e in tail][:3] == ["tool_result", "interrupted", "user"]
        synthetic = tail[0]
        assert isinstance(synthetic, ToolResultEntry)
        assert synthetic.call_id == pending_call.id and synthetic.name == "step"
        assert synthetic.is_error and "process ended" in str(synthetic.content)
        assert isinstance(tail[1], Interrupted)
        assert isinstance(tail[2], UserEntry) and tail[2].content == "are you still there?"
        assert tail[-1].kind == "assistant"

        # The model saw the unfinished call closed by its synthetic result, then the new input.
        model = runtime.model
        assert isinstance(model, ags.ScriptedModel)
        sent = model.requests[0].messages
        tool_results = [m for m in sent if isinstance(m, ags.ToolResultMessage)]
        assert tool_results[-1].call_id == pending_call.id and tool_results[-1].is_error
        assert sent[-1].role == "user" and sent[-1].content == "are you still there?"

        roles = [m.role for m in session.messages]
        assert roles[-4:] == ["assistant", "tool", "user", "assistant"]

        # Reopening again finds nothing left to recover.
        again = await runtime.open_session(session.id)
        assert again.messages == session.messages
    finally:
        await runtime.close()


async def test_kill_while_the_model_call_is_in_flight(tmp_path: Path) -> None:
    db, notes = run_until_hung(tmp_path, "model")
    assert [n["what"] for n in notes] == [
        "admission",
        "response",
        "tool_result",
        "admission",
        "response",
        "admission",
    ]
    runtime = make_runtime(tmp_path, db, ["answered on retry"])
    try:
        records = await check_committed(runtime, notes)
        assert [r.entry.kind for r in records][-2:] == ["user", "dispatch"]
        before = records[-1].entry
        assert isinstance(before, Dispatch)

        session = await runtime.open_session(notes[0]["session"])
        assert [m.role for m in session.messages][-1] == "user"
        assert session.messages[-1].content == "second prompt"

        result = await session.retry()
        assert result.text == "answered on retry"

        tail = [r.entry for r in await session.log(len(records))]
        dispatches = [e for e in tail if isinstance(e, Dispatch)]
        assert len(dispatches) == 1
        assert dispatches[0].digest == before.digest
        assert dispatches[0].step == before.step
        assert tail[-1].kind == "assistant"
        assert not any(e.kind == "user" for e in tail)  # the input was not admitted twice

        model = runtime.model
        assert isinstance(model, ags.ScriptedModel)
        assert len(model.requests) == 1
        assert request_digest(model.requests[0]) == before.digest
        assert model.requests[0].messages[-1].content == "second prompt"
        assert [m.role for m in session.messages][-2:] == ["user", "assistant"]
    finally:
        await runtime.close()


async def test_prompt_after_a_kill_in_flight_records_the_interruption(tmp_path: Path) -> None:
    db, notes = run_until_hung(tmp_path, "model")
    runtime = make_runtime(tmp_path, db, ["fresh answer"])
    try:
        records = await check_committed(runtime, notes)
        session = await runtime.open_session(notes[0]["session"])
        result = await session.prompt("new question")
        assert result.text == "fresh answer"
        tail = [r.entry for r in await session.log(len(records))]
        assert [e.kind for e in tail][:2] == ["interrupted", "user"]
        assert not any(e.kind == "tool_result" for e in tail)
        # The unanswered input stays in the history the model sees, before the new one.
        sent = [m.content for m in runtime.scripted.requests[0].messages if m.role == "user"]
        assert sent[-2:] == ["second prompt", "new question"]
    finally:
        await runtime.close()
