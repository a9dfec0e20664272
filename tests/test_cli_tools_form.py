"""Tools in their own form (``$ command``, a diff, a path, JSON), and "always" for a command
meaning a command prefix, never every command."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import agentsession as ags
from agentsession.cli.approvals import Answer, Fixed
from agentsession.cli.chat import Driver
from agentsession.cli.console import PlainOutput, print_transcript
from agentsession.events import ApprovalRequest
from agentsession.inspection.toolview import call_line, call_text, command_prefix
from agentsession.providers.scripted import Reply

from .cli_inprocess import run_cli
from .conftest import MakeRuntime
from .scenario import make_project

Make = MakeRuntime


def test_each_tool_in_its_own_form(tmp_path: Path) -> None:
    assert call_line("run_command", {"command": "ls -la"}) == "$ ls -la"
    assert call_line("read_file", {"path": "src/a.py"}) == "read_file src/a.py"
    assert call_line("list_files", {"path": "."}) == "list_files ."
    other = call_line("lookup", {"q": "naïve", "n": 2, "flag": True, "none": None})
    assert other == 'lookup {"q": "naïve", "n": 2, "flag": true, "none": null}'
    assert "'" not in other and "True" not in other and "None" not in other
    (tmp_path / "notes.md").write_text("one\ntwo\n")
    diff = call_text("write_file", {"path": "notes.md", "content": "one\nTWO\n"}, tmp_path)
    assert diff.splitlines()[1:] == [
        "--- a/notes.md",
        "+++ b/notes.md",
        "@@ -1,2 +1,2 @@",
        " one",
        "-two",
        "+TWO",
    ]
    fresh = call_text("write_file", {"path": "new.md", "content": "hi\n"})
    assert "--- /dev/null" in fresh and "+hi" in fresh
    assert command_prefix("git status --short") == "git status"
    assert command_prefix("ls -la") == "ls"


def test_show_and_piped_output_print_json_not_python_reprs(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    done = run_cli(tmp_path, "--db", db, "run", "count these words")
    assert done.code == 0, done.err
    assert 'count_words {"text": "count these words"}' in done.err
    assert "{'text'" not in done.err
    listed = run_cli(tmp_path, "--db", db, "--json", "sessions")
    session = json.loads(listed.out)["id"]
    shown = run_cli(tmp_path, "--db", db, "show", session[:8])
    assert '→ count_words {"text": "count these words"}' in shown.out
    messages = [
        ags.AssistantMessage("", (ags.ToolCall("run_command", {"command": "make"}, id="c1"),))
    ]
    out = io.StringIO()
    print_transcript(messages, out)
    assert out.getvalue() == "  → $ make\n"


class Scripted:
    def __init__(self, answers: Sequence[Answer | None]) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        self.asked.append(request)
        return self.answers.pop(0)


def run_command(command: str) -> list[ags.ToolCall]:
    return [ags.ToolCall("run_command", {"command": command})]


async def test_always_for_a_command_approves_its_prefix_only(
    make_runtime: Make, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    replies: list[Reply] = [
        run_command("echo one"),
        run_command("echo two --again"),
        run_command("echo three; touch bad"),
        run_command("touch other"),
        "done",
    ]
    model = ags.ScriptedModel(replies)
    runtime = make_runtime(model=model, project_dir=project, tools=ags.builtin_tools())
    session = await runtime.create_session()
    approver = Scripted(
        [Answer("always", prefix="echo"), Answer("no", "not that"), Answer("no", "nor that")]
    )
    err = io.StringIO()
    driver = Driver(session, PlainOutput(out=io.StringIO(), err=err), runtime.store, approver)
    result = await driver.prompt("go")
    assert result is not None and result.text == "done"
    asked = [r.arguments["command"] for r in approver.asked]
    # "echo two" rode on the prefix; a chained command and another program were asked about.
    assert asked == ["echo one", "echo three; touch bad", "touch other"]
    assert "commands starting with 'echo' from now on" in err.getvalue()
    assert not (project / "bad").exists() and not (project / "other").exists()


async def test_approve_always_in_chat_never_approves_every_command(
    make_runtime: Make, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    replies: list[Reply] = [run_command("echo one"), run_command("touch other"), "done"]
    model = ags.ScriptedModel(replies)
    runtime = make_runtime(model=model, project_dir=project, tools=ags.builtin_tools())
    session = await runtime.create_session()
    asker = Scripted([None, Answer("no", "no")])  # the first question is left unanswered
    driver = Driver(
        session, PlainOutput(out=io.StringIO(), err=io.StringIO()), runtime.store, asker
    )
    stopped = await driver.prompt("go")
    assert stopped is not None and stopped.stop_reason == "approval_required"
    # /approve always answers with a fixed "always": for run_command that is its prefix.
    assert await driver.settle_waiting(Fixed(Answer("always", why="/approve")))
    assert [r.arguments["command"] for r in asker.asked] == ["echo one", "touch other"]
    assert not (project / "other").exists()
    assert driver.rules.prefixes == ["echo one"]  # the program and its first word
