"""Approvals and the agent's chat commands in a real terminal (tmux types, the screen is read).

The model is scripted over loopback (``cli_model``); ``run_command`` asks for approval under
``workspace-write``, and the commands append to ``ran.txt``, so the disk says what really ran.
The log is read with the library afterwards.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.log import ApprovalDecided, ModelSwitched, PermissionChanged, Record, Summary

from .cli_model import ScriptedServer, serve, text, tool_results
from .cli_terminal import Terminal, needs_tmux, terminals

pytestmark = needs_tmux
QUESTION = "allow? [y]es"


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    yield from terminals()


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    yield from serve()


def agent_in(opened: list[Terminal], tmp_path: Path, model: ScriptedServer, *args: str) -> Terminal:
    env = {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONIOENCODING": "utf-8",
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
    }
    db = str(tmp_path / "agent.db")
    command = [sys.executable, "-m", "agentsession", "--db", db, "--model", model.model, *args]
    term = Terminal(command, env, tmp_path)
    opened.append(term)
    return term


def command(line: str) -> tuple[str, dict[str, str]]:
    return ("run_command", {"command": f"echo {line} >> ran.txt"})


def ran(folder: Path) -> list[str]:
    path = folder / "ran.txt"
    return path.read_text().split() if path.exists() else []


def log_of(tmp_path: Path, session_id: str) -> list[Record]:
    async def read() -> list[Record]:
        runtime = ags.Runtime(store=ags.SQLiteStore(tmp_path / "agent.db"), project_dir=tmp_path)
        async with runtime:
            return await (await runtime.open_session(session_id)).log()

    return asyncio.run(read())


def session_of(screen: str) -> str:
    for line in screen.splitlines():
        if line.startswith("session ") and len(line.split()) >= 2:
            return line.split()[1]
    raise AssertionError(screen)


def test_run_asks_yes_runs_the_call_and_typed_words_deny_it(
    terminal: list[Terminal], tmp_path: Path, model: ScriptedServer
) -> None:
    model.reply([command("one")], [command("two")], "One ran, two did not.")
    term = agent_in(terminal, tmp_path, model, "run", "run two commands")
    screen = term.wait_for(QUESTION)
    assert "? run_command waits for approval" in screen and "echo one >> ran.txt" in screen
    assert ran(tmp_path) == []  # nothing runs before the answer
    term.keys("y", "Enter")
    term.wait_for(QUESTION, count=2)
    assert ran(tmp_path) == ["one"]
    term.keys("not that one", "Enter")
    screen = term.wait_for("[exit 0]")
    assert "One ran, two did not." in screen and "Traceback" not in screen
    assert "3 requests · " in screen  # one turn, its figures once
    assert ran(tmp_path) == ["one"]
    (denial,) = tool_results(model.agent_requests[-1])[-1:]
    assert text(denial) == "Error: The user denied this call of run_command (not that one)."


def test_chat_always_preset_compact_and_model(
    terminal: list[Terminal], tmp_path: Path, model: ScriptedServer
) -> None:
    write = ("write_file", {"path": "x.txt", "content": "x"})

    def mkdir(name: str) -> tuple[str, dict[str, str]]:
        return ("run_command", {"command": f"mkdir -p made/{name}"})

    model.reply([mkdir("a")], "Ran a.", [mkdir("b")], "Ran b.", [write], "Refused.")
    model.reply("The fourth reply.")
    term = agent_in(terminal, tmp_path, model, "chat")
    term.wait_for("you ›")
    term.keys("run a", "Enter")
    term.wait_for(QUESTION)
    term.keys("a", "Enter")
    # "always" for a command is a prefix, shown and editable: here the program alone.
    term.wait_for("always allow commands starting with")
    term.keys("Enter")
    term.wait_for("Ran a.")
    term.wait_for("you ›", count=2)
    term.keys("run b", "Enter")
    screen = term.wait_for("Ran b.")
    assert screen.count(QUESTION) == 1  # the prefix covers it: not asked again
    assert "commands starting with 'mkdir' from now on" in screen
    assert sorted(p.name for p in (tmp_path / "made").iterdir()) == ["a", "b"]

    term.wait_for("you ›", count=3)
    term.keys("/preset read-only", "Enter")
    term.wait_for("preset read-only from the next request on (was workspace-write)")
    term.wait_for("you ›", count=4)
    term.keys("write x", "Enter")
    term.wait_for("Refused.")
    assert not (tmp_path / "x.txt").exists()
    term.wait_for("you ›", count=5)
    term.keys("/compact", "Enter")
    term.wait_for("compacted: older turns are summarised")
    other = model.model.replace("#scripted", "#other")
    term.wait_for("you ›", count=6)
    term.keys(f"/model {other}", "Enter")
    term.wait_for(f"model {other} from the next request on")
    term.wait_for("you ›", count=7)
    term.keys("fourth prompt", "Enter")
    term.wait_for("The fourth reply.")
    term.wait_for("you ›", count=8)
    term.keys("C-d")
    screen = term.wait_for("[exit 0]")
    assert "Traceback" not in screen and "error:" not in screen

    assert model.agent_requests[-1]["model"] == "other"
    entries = [r.entry for r in log_of(tmp_path, session_of(screen))]
    decided = [e for e in entries if isinstance(e, ApprovalDecided)]
    # The prefix lives in the run; each call it covered is recorded as approved once.
    assert [(d.approved, d.always) for d in decided] == [(True, False), (True, False)]
    assert [e.preset for e in entries if isinstance(e, PermissionChanged)] == ["read-only"]
    assert sum(isinstance(e, Summary) for e in entries) == 1
    (switch,) = [e for e in entries if isinstance(e, ModelSwitched)]
    assert switch.model == other and switch.previous == model.model


def test_chat_offers_calls_left_waiting_and_deny_answers_them(
    terminal: list[Terminal], tmp_path: Path, model: ScriptedServer
) -> None:
    async def leave_waiting() -> str:
        call = ags.ToolCall("run_command", {"command": "echo one >> ran.txt"})
        runtime = ags.Runtime(
            store=ags.SQLiteStore(tmp_path / "agent.db"),
            model=ags.ScriptedModel([[call]]),
            tools=ags.builtin_tools(),
            project_dir=tmp_path,
        )
        async with runtime:
            session = await runtime.create_session()
            assert (await session.prompt("run it")).stop_reason == "approval_required"
            return session.id

    session_id = asyncio.run(leave_waiting())
    model.reply("Fine, not now.", "Hello back.")
    term = agent_in(terminal, tmp_path, model, "chat", "--session", session_id)
    screen = term.wait_for(QUESTION)
    assert "1 tool call of an earlier turn waits for approval" in screen
    assert "echo one >> ran.txt" in screen
    term.keys("C-c")  # not now: the call keeps waiting
    term.wait_for("still waits for approval")
    term.wait_for("you ›")
    term.keys("/deny not now", "Enter")
    screen = term.wait_for("Fine, not now.")
    assert "denied run_command: not now" in screen
    term.wait_for("you ›", count=2)
    term.keys("hello", "Enter")
    term.wait_for("Hello back.")
    term.wait_for("you ›", count=3)
    term.keys("C-d")
    screen = term.wait_for("[exit 0]")
    assert "Traceback" not in screen
    assert ran(tmp_path) == []
    (denial,) = tool_results(model.agent_requests[0])
    assert text(denial) == "Error: The user denied this call of run_command (not now)."
