"""The terminal's scrollback after a long streamed reply, ``chat -c`` and the resume picker.

tmux runs the real command at 80×40 against the loopback scripted server; the whole history
(``capture-pane -S -``) is read back.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cli_model import ScriptedServer, serve
from .cli_terminal import Terminal, needs_tmux, terminals
from .paced_demo import PACED

pytestmark = needs_tmux


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    yield from terminals()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    yield from serve()


def open_terminal(
    opened: list[Terminal], tmp_path: Path, db: Path, server: ScriptedServer, *args: str
) -> Terminal:
    env = {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONIOENCODING": "utf-8",
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
    }
    command = [sys.executable, "-m", "agentsession", "--db", str(db), "-m", server.model, *args]
    term = Terminal(command, env, tmp_path, width=80, height=40)
    opened.append(term)
    return term


def long_reply() -> str:
    blocks = []
    for n in range(1, 81):
        blocks.append(f"Paragraph line {n:02d} of the long answer.")
        if n % 4 == 0:
            blocks.append("")
    return "\n".join(blocks) + "\nThe end of the answer."


def test_an_80_line_reply_at_40_rows_appears_once_in_the_scrollback(
    terminal: list[Terminal], tmp_path: Path, server: ScriptedServer
) -> None:
    server.by_line = True
    server.reply(long_reply())
    term = open_terminal(terminal, tmp_path, tmp_path / "s.db", server, "chat")
    term.wait_for("you ›")
    term.keys("tell me a long story", "Enter")
    term.wait_for("1 request · ")
    history = term.screen()
    for n in range(1, 81):
        assert history.count(f"Paragraph line {n:02d} ") == 1, (n, history)
    assert history.count("The end of the answer.") == 1


def test_chat_continue_shows_the_previous_turns(
    terminal: list[Terminal], tmp_path: Path, server: ScriptedServer
) -> None:
    db = tmp_path / "s.db"
    server.reply("The first answer.", "The second answer.")
    first = open_terminal(terminal, tmp_path, db, server, "chat")
    first.wait_for("you ›")
    first.keys("first question", "Enter")
    first.wait_for("The first answer.")
    first.wait_for("you ›", count=2)
    first.keys("C-d")
    first.wait_for("[exit 0]")
    again = open_terminal(terminal, tmp_path, db, server, "chat", "-c")
    # The replayed question shows "you ›" too: the prompt is the second, after the history.
    screen = again.wait_for("you ›", count=2)
    assert "first question" in screen and "The first answer." in screen
    again.keys("second question", "Enter")
    again.wait_for("The second answer.")


def test_resume_without_an_id_opens_a_picker_and_resumes(
    terminal: list[Terminal], tmp_path: Path, server: ScriptedServer
) -> None:
    db = tmp_path / "s.db"
    server.reply("Answer one.", "Answer two.")
    first = open_terminal(terminal, tmp_path, db, server, "run", "the picked one")
    first.wait_for("[exit 0]")
    picker = open_terminal(terminal, tmp_path, db, server, "chat", "--resume")
    screen = picker.wait_for("resume which?")
    # One row: the session, under the title its model gave it; Enter picks the row chosen.
    assert "1 of 1" in screen and "A short summary" in screen
    picker.keys("Enter")
    picker.wait_for_prompt()  # the recap shows "you › the picked one" before the prompt
    picker.keys("and again", "Enter")
    picker.wait_for("Answer two.")
    sent = server.agent_requests[-1]["messages"]
    assert any("the picked one" in str(m.get("content")) for m in sent)


def demo_terminal(opened: list[Terminal], tmp_path: Path, *args: str) -> Terminal:
    env = {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONIOENCODING": "utf-8",
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
    }
    db = str(tmp_path / "demo.db")
    # The demo model paced by the tests' own script: 1.5 s before each event.
    command = [sys.executable, str(PACED), "1.5", "--db", db, *args]
    term = Terminal(command, env, tmp_path)
    opened.append(term)
    return term


def test_bare_command_chats_with_a_banner_a_spinner_and_completion(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    term = demo_terminal(terminal, tmp_path)
    screen = term.wait_for("you ›")
    banner = " ".join(screen.split())  # the banner may wrap
    assert "model scripted:demo · preset workspace-write · folder" in banner
    term.keys("/co", "Tab")
    screen = term.wait_for("/context")
    assert "/compact" in screen
    term.keys("C-u")
    term.keys("count three words", "Enter")
    term.wait_for("s · Ctrl-C to cancel")  # the spinner counts the seconds
    term.wait_for("2 requests · ")
    term.keys("C-d")
    term.wait_for("[exit 0]")
    deleting = demo_terminal(terminal, tmp_path, "sessions")
    listed = deleting.wait_for("[exit 0]")
    prefix = next(line.split()[0] for line in listed.splitlines() if "user ·" in line)
    asked = demo_terminal(terminal, tmp_path, "delete", prefix)
    asked.wait_for("[y/N]")
    asked.keys("n", "Enter")
    assert "not deleted" in asked.wait_for("[exit 1]")
    gone = demo_terminal(terminal, tmp_path, "delete", prefix, "-y")
    assert "deleted session" in gone.wait_for("[exit 0]")
