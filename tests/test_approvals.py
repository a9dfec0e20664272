"""Approvals through real sessions: pause, approve/deny/always, resume, and a restart in between.

``workspace-write`` asks before ``run_command`` runs. The commands append to a file in the
project, so the disk says how often each one really ran.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.events import ApprovalNeeded

from .conftest import MakeRuntime
from .scenario import kinds, make_project, text_of, tool_results

Make = MakeRuntime
WAIT = 120.0  # a bound for a hung child, not a measure


@pytest.fixture(autouse=True)
def _no_global_instructions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def command(line: str) -> ags.ToolCall:
    """A ``run_command`` call that appends ``line`` to ``ran.txt`` and prints it."""
    return ags.ToolCall("run_command", {"command": f"echo {line} >> ran.txt; echo said {line}"})


def ran(project: Path) -> list[str]:
    path = project / "ran.txt"
    return path.read_text().split() if path.exists() else []


async def paused(
    make_runtime: Make, project: Path, replies: list[Any]
) -> tuple[ags.Session, ags.ScriptedModel, ags.PromptResult]:
    model = ags.ScriptedModel(replies)
    runtime = make_runtime(model=model, project_dir=project, tools=ags.builtin_tools())
    session = await runtime.create_session()
    result = await session.prompt("please run it")
    return session, model, result


async def test_a_command_waits_for_approval_and_runs_once_when_approved(
    make_runtime: Make, project: Path
) -> None:
    session, model, result = await paused(
        make_runtime, project, [[command("one")], "it printed one"]
    )
    assert result.stop_reason == "approval_required"
    assert result.text == ""
    (request,) = result.approvals
    assert request.name == "run_command"
    assert request.arguments == {"command": "echo one >> ran.txt; echo said one"}
    assert "Approval needed under preset 'workspace-write'" in request.reason
    assert session.pending_approvals() == [request]
    assert ran(project) == []
    assert len(model.requests) == 1
    assert (await kinds(session))[-2:] == ["assistant", "approval_requested"]

    await session.approve(request.call_id)
    assert session.pending_approvals() == []
    resumed = await session.retry()
    assert resumed.stop_reason == "end_turn"
    assert resumed.text == "it printed one"
    assert ran(project) == ["one"]
    (output,) = tool_results(model.requests[-1])
    assert output.call_id == request.call_id
    assert (
        not output.is_error
        and "said one" in text_of(output)
        and "[exit code: 0]" in text_of(output)
    )
    log = await kinds(session)
    assert log.count("tool_result") == 1 and "interrupted" not in log
    tail = log[log.index("approval_requested") :]
    assert tail[:3] == ["approval_requested", "approval_decided", "tool_result"]

    # The turn is over: nothing left to resume, and the command never runs again.
    with pytest.raises(ags.UsageError, match="nothing to retry"):
        await session.retry()
    assert ran(project) == ["one"]


async def test_a_denied_command_never_runs_and_the_model_reads_why(
    make_runtime: Make, project: Path
) -> None:
    session, model, result = await paused(make_runtime, project, [[command("one")], "understood"])
    (request,) = result.approvals
    await session.deny(request.call_id, note="not on my machine")
    assert (await session.retry()).text == "understood"
    assert ran(project) == []
    (denial,) = tool_results(model.requests[-1])
    assert denial.is_error
    assert text_of(denial) == "The user denied this call of run_command (not on my machine)."


async def test_always_approves_the_tool_for_the_rest_of_the_session(
    make_runtime: Make, project: Path
) -> None:
    session, _, result = await paused(
        make_runtime,
        project,
        [[command("one")], [command("two")], "done", [command("three")], "done again"],
    )
    await session.approve(result.approvals[0].call_id, always=True)
    assert (await session.retry()).text == "done"
    assert (await session.prompt("and once more")).text == "done again"
    assert ran(project) == ["one", "two", "three"]
    assert (await kinds(session)).count("approval_requested") == 1

    # Durable: the same session reopened still runs it without asking ...
    again = ags.ScriptedModel([[command("four")], "fine"])
    reopened = await make_runtime(
        model=again, project_dir=project, tools=ags.builtin_tools()
    ).open_session(session.id)
    assert (await reopened.prompt("four")).stop_reason == "end_turn"
    assert ran(project) == ["one", "two", "three", "four"]
    # ... while another session asks again.
    other, _, asked = await paused(make_runtime, project, [[command("five")], "x"])
    assert asked.stop_reason == "approval_required" and other.id != session.id
    assert ran(project) == ["one", "two", "three", "four"]


async def test_a_waiting_approval_keeps_the_session_busy(make_runtime: Make, project: Path) -> None:
    session, _, result = await paused(make_runtime, project, [[command("one")], "ok", "later"])
    call_id = result.approvals[0].call_id
    with pytest.raises(
        ags.SessionBusyError, match=r"waiting for approval.*approve\(\) or deny\(\)"
    ):
        await session.prompt("something else")
    with pytest.raises(ags.SessionBusyError, match="waiting for approval"):
        session.set_permission_preset("full-access")
    with pytest.raises(ags.SessionBusyError, match="waiting for approval"):
        await session.compact()
    with pytest.raises(ags.UsageError, match="approve or deny the waiting tool calls first"):
        await session.retry()
    with pytest.raises(ags.UsageError, match="no tool call 'nope' is waiting"):
        await session.approve("nope")
    assert session.permission_preset == "workspace-write"

    await session.approve(call_id)
    # Answered but not resumed: the paused turn still comes first.
    with pytest.raises(ags.SessionBusyError, match=r"retry\(\)"):
        await session.prompt("something else")
    with pytest.raises(ags.UsageError, match="no tool call"):
        await session.approve(call_id)  # answered already
    assert (await session.retry()).text == "ok"
    assert (await session.prompt("now")).text == "later"
    assert ran(project) == ["one"]


async def test_calls_in_one_response_are_asked_about_one_at_a_time(
    make_runtime: Make, project: Path
) -> None:
    (project / "a.txt").write_text("alpha\n")
    reply = [
        ags.ToolCall("read_file", {"path": "a.txt"}),
        command("one"),
        ags.ToolCall("list_files", {}),
        command("two"),
    ]
    session, model, result = await paused(make_runtime, project, [reply, "all settled"])
    first = result.approvals[0]
    first_command = first.arguments["command"]
    assert isinstance(first_command, str) and first_command.startswith("echo one")
    await session.approve(first.call_id)
    second = await session.retry()
    assert second.stop_reason == "approval_required"
    second_command = second.approvals[0].arguments["command"]
    assert isinstance(second_command, str) and second_command.startswith("echo two")
    assert ran(project) == ["one"]
    await session.deny(second.approvals[0].call_id)
    assert (await session.retry()).text == "all settled"
    assert ran(project) == ["one"]
    results = tool_results(model.requests[-1])
    assert [r.call_id for r in results] == [c.id for c in model_calls(session)]
    assert [r.is_error for r in results] == [False, False, False, True]
    assert len(model.requests) == 2


def model_calls(session: ags.Session) -> list[ags.ToolCall]:
    return [
        c for m in session.messages if isinstance(m, ags.AssistantMessage) for c in m.tool_calls
    ]


async def test_an_answer_not_yet_resumed_is_asked_again_after_a_restart(
    make_runtime: Make, project: Path
) -> None:
    session, _, result = await paused(make_runtime, project, [[command("one")]])
    await session.approve(result.approvals[0].call_id)
    # The process ends here without retry(): the request is still there, the answer is not.
    model = ags.ScriptedModel(["after restart"])
    reopened = await make_runtime(
        model=model, project_dir=project, tools=ags.builtin_tools()
    ).open_session(session.id)
    assert [a.call_id for a in reopened.pending_approvals()] == [result.approvals[0].call_id]
    await reopened.approve(result.approvals[0].call_id)
    assert (await reopened.retry()).text == "after restart"
    assert ran(project) == ["one"]


async def test_an_approved_call_cancelled_while_running_is_recorded_not_repeated(
    make_runtime: Make, project: Path
) -> None:
    started = project / "started"
    call = ags.ToolCall(
        "run_command", {"command": f"touch {started}; sleep 30; echo never >> ran.txt"}
    )
    session, _, result = await paused(make_runtime, project, [[call], "after cancel"])
    await session.approve(result.approvals[0].call_id)
    resuming = asyncio.create_task(session.retry())
    # The command's own process writes the marker: there is no event to wait on.
    while not started.exists() and not resuming.done():  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    assert started.exists()
    resuming.cancel()
    with pytest.raises(asyncio.CancelledError):
        await resuming
    assert session.pending_approvals() == []
    log = await kinds(session)
    assert log[-3:] == ["approval_decided", "tool_result", "interrupted"]
    assert (await session.prompt("go on")).text == "after cancel"
    assert ran(project) == []


CHILD = textwrap.dedent(
    """
    import asyncio
    import json
    import sys

    import agentsession as ags

    db, project, session_id, answer = sys.argv[1:5]


    async def main() -> None:
        model = ags.ScriptedModel(["finished in the new process"])
        runtime = ags.Runtime(
            store=ags.SQLiteStore(db),
            model=model,
            project_dir=project,
            tools=ags.builtin_tools(),
        )
        session = await runtime.open_session(session_id)
        waiting = session.pending_approvals()
        report = {"waiting": [[w.call_id, w.name, w.arguments] for w in waiting]}
        try:
            await session.prompt("skip it")
        except ags.SessionBusyError as exc:
            report["busy"] = str(exc)
        if answer == "approve":
            await session.approve(waiting[0].call_id)
        else:
            await session.deny(waiting[0].call_id, note="no")
        result = await session.retry()
        report["text"] = result.text
        report["results"] = [m.content for m in model.requests[-1].messages if m.role == "tool"]
        await runtime.close()
        print(json.dumps(report))


    asyncio.run(main())
    """
)


@pytest.mark.parametrize("answer", ["approve", "deny"])
async def test_a_waiting_approval_survives_a_restart_into_a_new_process(
    make_runtime: Make, project: Path, db_path: Path, tmp_path: Path, answer: str
) -> None:
    runtime = make_runtime([[command("one")]], project_dir=project, tools=ags.builtin_tools())
    session = await runtime.create_session()
    result = await session.prompt("run it")
    assert result.stop_reason == "approval_required"
    await runtime.close()

    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(db_path),
        str(project),
        session.id,
        answer,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(child.communicate(), WAIT)
    assert child.returncode == 0, stderr.decode()
    report = json.loads(stdout)
    call = result.approvals[0]
    assert report["waiting"] == [[call.call_id, "run_command", call.arguments]]
    assert "waiting for approval" in report["busy"]
    assert report["text"] == "finished in the new process"
    (output,) = report["results"]
    if answer == "approve":
        assert ran(project) == ["one"] and "said one" in output
    else:
        assert ran(project) == [] and output == "The user denied this call of run_command (no)."

    reopened = await make_runtime(["x"], project_dir=project).open_session(session.id)
    assert reopened.pending_approvals() == []
    log = await kinds(reopened)
    assert log.count("approval_requested") == 1 and log.count("approval_decided") == 1
    assert "interrupted" not in log


async def test_always_covers_the_later_calls_of_the_same_response(
    make_runtime: Make, project: Path
) -> None:
    session, _, result = await paused(
        make_runtime, project, [[command("one"), command("two"), command("three")], "all ran"]
    )
    await session.approve(result.approvals[0].call_id, always=True)
    assert (await session.retry()).text == "all ran"
    assert ran(project) == ["one", "two", "three"]
    assert (await kinds(session)).count("approval_requested") == 1


async def test_leaving_the_stream_at_the_approval_keeps_it_waiting(
    make_runtime: Make, project: Path
) -> None:
    model = ags.ScriptedModel([[command("one")], "ran it"])
    runtime = make_runtime(model=model, project_dir=project, tools=ags.builtin_tools())
    session = await runtime.create_session()
    stream = session.stream("run it")
    async for event in stream:
        if isinstance(event, ApprovalNeeded):
            asked = event.request
            break
    await stream.aclose()  # the caller stops reading as soon as it is asked
    assert "interrupted" not in await kinds(session)
    assert [a.call_id for a in session.pending_approvals()] == [asked.call_id]
    await session.approve(asked.call_id)
    assert (await session.retry()).text == "ran it"
    assert ran(project) == ["one"]


@ags.tool(effect="write", paths=["path"], destructive=True)
def delete_file(path: str, *, context: ags.ToolContext) -> str:
    """Delete a file of the project.

    Args:
        path: The file, relative to the project folder.
        context: Supplied by the runtime.
    """
    context.resolve(path).unlink()
    return f"deleted {path}"


@pytest.mark.parametrize(
    ("preset", "outcome"),
    [("workspace-write", "asked"), ("full-access", "ran"), ("read-only", "refused")],
)
async def test_a_destructive_tool_asks_only_where_the_preset_asks(
    make_runtime: Make, project: Path, preset: str, outcome: str
) -> None:
    (project / "doomed.txt").write_text("x")
    model = ags.ScriptedModel([[ags.ToolCall("delete_file", {"path": "doomed.txt"})], "after"])
    runtime = make_runtime(model=model, project_dir=project, tools=[delete_file])
    session = await runtime.create_session()
    session.set_permission_preset(preset)
    result = await session.prompt("delete it")
    if outcome == "asked":
        assert result.stop_reason == "approval_required"
        assert "marked destructive" in result.approvals[0].reason
        assert (project / "doomed.txt").exists()
        await session.approve(result.approvals[0].call_id)
        await session.retry()
        assert not (project / "doomed.txt").exists()
        return
    assert result.text == "after"
    (reply,) = tool_results(model.requests[-1])
    if outcome == "ran":
        assert not reply.is_error and not (project / "doomed.txt").exists()
    else:
        assert reply.is_error and "Permission denied by preset 'read-only'" in text_of(reply)
        assert (project / "doomed.txt").exists()


async def test_an_approved_call_may_reach_outside_when_the_preset_asks_for_that(
    make_runtime: Make, project: Path, tmp_path: Path
) -> None:
    careful = {"read": "allow", "write_project": "allow", "write_elsewhere": "ask"}
    config = ags.Config(
        retry_base_delay=0, permission_presets={"careful": careful}, permission_preset="careful"
    )
    target = tmp_path / "outside" / "note.txt"
    model = ags.ScriptedModel(
        [
            [ags.ToolCall("write_file", {"path": "../outside/note.txt", "content": "approved"})],
            [ags.ToolCall("write_file", {"path": "../outside/other.txt", "content": "denied"})],
            "done",
        ]
    )
    runtime = make_runtime(
        model=model, project_dir=project, tools=ags.builtin_tools(), config=config
    )
    session = await runtime.create_session()
    assert session.permission_preset == "careful"
    first = await session.prompt("write outside")
    assert (
        "asks the user before reading and writing outside the project" in first.approvals[0].reason
    )
    assert str(target) in first.approvals[0].reason
    await session.approve(first.approvals[0].call_id)
    second = await session.retry()
    assert target.read_text() == "approved"
    await session.deny(second.approvals[0].call_id)
    assert (await session.retry()).text == "done"
    assert not (tmp_path / "outside" / "other.txt").exists()


@pytest.mark.parametrize("approved", [True, False])
async def test_an_answer_never_decides_a_later_call_that_reuses_its_id(
    make_runtime: Make, project: Path, approved: bool
) -> None:
    # Some local servers number their call ids per reply ("c1" every time); after the window
    # or a compaction moved on, the earlier call is no longer in the epoch's view.
    def again(line: str) -> ags.ToolCall:
        call = command(line)
        return ags.ToolCall(call.name, call.arguments, id="c1")

    replies = [[again("one")], "ran one", "two", "a summary", [again("two")], "never"]
    session, _, result = await paused(make_runtime, project, replies)
    (request,) = result.approvals
    assert request.call_id == "c1"
    if approved:
        await session.approve("c1")
    else:
        await session.deny("c1", note="not now")
    await session.retry()
    assert (await session.prompt("second")).text == "two"
    assert await session.compact()
    later = await session.prompt("and now the other one")
    assert later.stop_reason == "approval_required"  # asked, not decided by the old answer
    (fresh,) = later.approvals
    assert fresh.call_id != "c1"
    assert fresh.arguments == command("two").arguments
    assert ran(project) == (["one"] if approved else [])
