"""How the command line answers approvals and shows resumed steps, on real sessions.

The ``Driver`` runs a real session (SQLite, built-in tools, a scripted model) onto a
``PlainOutput`` writing to buffers; answers come from a ``Fixed`` approver or a scripted one.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.cli.approvals import Answer, Fixed, parse_answer
from agentsession.cli.chat import Driver
from agentsession.cli.console import PlainOutput
from agentsession.events import (
    ApprovalRequest,
)
from agentsession.providers.scripted import Reply

from .conftest import MakeRuntime
from .scenario import make_project, text_of, tool_results

Make = MakeRuntime


@pytest.fixture(autouse=True)
def _no_global_instructions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_typed_answers() -> None:
    assert parse_answer("y") == parse_answer(" YES ") == Answer("yes")
    assert parse_answer("a") == parse_answer("Always") == Answer("always")
    for said in ("", "n", "No", "  "):
        assert parse_answer(said) == Answer("no", "the user said no")
    assert parse_answer("  not   on main ") == Answer("no", "not on main")


@given(st.text())
def test_only_a_clear_yes_ever_approves(typed: str) -> None:
    answer = parse_answer(typed)
    word = " ".join(typed.split()).lower()
    if word in ("y", "yes", "a", "always"):
        assert answer.verdict != "no"
    else:
        assert answer.verdict == "no" and answer.note  # a denial always says why
        assert "\n" not in answer.note


class Scripted:
    """An approver answering from a list; ``None`` stops answering."""

    def __init__(self, answers: Sequence[Answer | None]) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        self.asked.append(request)
        return self.answers.pop(0)


def command(line: str) -> ags.ToolCall:
    return ags.ToolCall("run_command", {"command": f"echo {line} >> ran.txt; echo said {line}"})


def ran(project: Path) -> list[str]:
    path = project / "ran.txt"
    return path.read_text().split() if path.exists() else []


async def driven(
    make_runtime: Make, project: Path, replies: Sequence[Reply], approver: object
) -> tuple[Driver, ags.ScriptedModel, io.StringIO, io.StringIO]:
    model = ags.ScriptedModel(replies)
    runtime = make_runtime(model=model, project_dir=project, tools=ags.builtin_tools())
    session = await runtime.create_session()
    out, err = io.StringIO(), io.StringIO()
    driver = Driver(session, PlainOutput(out=out, err=err), runtime.store, approver)  # type: ignore[arg-type]
    return driver, model, out, err


async def test_a_turn_that_pauses_twice_is_shown_as_one_turn(
    make_runtime: Make, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    approver = Scripted([Answer("yes"), Answer("no", "not two")])
    replies: list[Reply] = [[command("one")], [command("two")], "One ran."]
    driver, model, out, err = await driven(make_runtime, project, replies, approver)
    result = await driver.prompt("run them")

    assert result is not None and result.stop_reason == "end_turn"
    asked_calls = [c.id for m in model.requests[-1].messages for c in getattr(m, "tool_calls", ())]
    assert [r.call_id for r in approver.asked] == asked_calls
    assert ran(project) == ["one"]
    assert out.getvalue() == "One ran.\n"  # the reply of the resumed step, once
    shown = [line.strip() for line in err.getvalue().splitlines()]
    calls = [
        line for line in shown if line[:1] in "→←✗?" or line.startswith(("approved", "denied"))
    ]
    # A command is shown as the shell line it runs, once.
    assert [line.split("(")[0].split(":")[0] for line in calls] == [
        "→ $ echo one >> ran.txt; echo said one",
        "? run_command waits for approval ",
        "approved run_command",
        "← run_command",
        "→ $ echo two >> ran.txt; echo said two",
        "? run_command waits for approval ",
        "denied run_command",
        "✗ run_command",
    ]
    assert sum("3 requests · " in line for line in shown) == 1
    (denial,) = tool_results(model.requests[-1])[-1:]
    assert text_of(denial) == "The user denied this call of run_command (not two)."


async def test_calls_left_waiting_are_asked_again_and_the_turn_finishes(
    make_runtime: Make, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    approver = Scripted([None, Answer("always")])
    replies: list[Reply] = [[command("one")], "Ran it.", "And the next answer."]
    driver, _, out, err = await driven(make_runtime, project, replies, approver)

    stopped = await driver.prompt("run it")
    assert stopped is not None and stopped.stop_reason == "approval_required"
    assert "still waits for approval" in err.getvalue()
    assert ran(project) == [] and len(driver.session.pending_approvals()) == 1

    # The next prompt asks first, finishes the waiting turn, then runs.
    result = await driver.prompt("next")
    assert result is not None and result.text == "And the next answer."
    assert ran(project) == ["one"]
    assert out.getvalue() == "Ran it.\nAnd the next answer.\n"
    assert "1 tool call of an earlier turn waits for approval" in err.getvalue()
    assert driver.session.pending_approvals() == []


async def test_nobody_to_ask_denies_and_the_model_reads_why(
    make_runtime: Make, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    denied = Fixed(Answer("no", "nobody here"))
    driver, model, out, _ = await driven(make_runtime, project, [[command("x")], "ok"], denied)
    result = await driver.prompt("run it")
    assert result is not None and result.text == "ok" and ran(project) == []
    (denial,) = tool_results(model.requests[-1])
    assert text_of(denial) == "The user denied this call of run_command (nobody here)."
    assert out.getvalue() == "ok\n"
