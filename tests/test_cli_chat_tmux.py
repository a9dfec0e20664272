"""``chat`` in a real terminal: tmux types (send-keys, a bracketed paste) and reads the screen.

A reply to interrupt comes from the loopback scripted model (``cli_model``), held after its first
part until the test lets it go, so a Ctrl-C lands while it is still streaming however slow the
machine. The log is then read with the library: the cancelled turn is recorded as cancelled and
the turns after it were answered. A reply held the same way keeps a turn running while lines
are typed into it.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.log import Interrupted, Record

from .cli_model import Held, ScriptedServer, serve
from .cli_terminal import Terminal, needs_tmux, terminals

pytestmark = needs_tmux


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    yield from terminals()


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    yield from serve()


def environment(tmp_path: Path) -> dict[str, str]:
    return {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONIOENCODING": "utf-8",
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
    }


def chat_in(
    terminals: list[Terminal],
    tmp_path: Path,
    db: Path,
    *args: str,
    model: ScriptedServer | None = None,
) -> Terminal:
    env = environment(tmp_path)
    chosen = ["--model", model.model] if model is not None else []
    command = [sys.executable, "-m", "agentsession", "--db", str(db), *chosen, "chat", *args]
    term = Terminal(command, env, tmp_path)
    terminals.append(term)
    return term


async def transcript(db: Path, session_id: str) -> tuple[list[str], list[Record]]:
    runtime = ags.Runtime(store=ags.SQLiteStore(db))
    async with runtime:
        session = await runtime.open_session(session_id)
        users = [str(m.content) for m in session.messages if m.role == "user"]
        return users, await session.log()


def session_of(screen: str) -> str:
    for line in screen.splitlines():
        if line.startswith("session ") and "resume with:" in line:
            return line.split()[1]
    raise AssertionError(screen)


def test_chat_turn_cancel_and_ctrl_d(
    terminal: list[Terminal], tmp_path: Path, model: ScriptedServer
) -> None:
    db = tmp_path / "chat.db"
    (tmp_path / "notes.md").write_text("five little words in here\n", encoding="utf-8")
    model.reply(
        [("read_file", {"path": "notes.md"})],
        "The file holds `five` words, **5** in all.",
        Held("The second reply goes on", " until the end."),
        "The third answer.",
    )
    term = chat_in(terminal, tmp_path, db, model=model)
    term.wait_for_prompt()
    term.keys("count these five little words", "Enter")
    term.wait_for("The file holds")
    screen = term.wait_for_prompt()
    # The reply is rendered Markdown (no backticks or asterisks), the call and result panels.
    assert "The file holds five words, 5 in all." in screen
    assert "`five`" not in screen and "**5**" not in screen
    assert "╭─ → read_file" in screen and "╭─ ← read_file" in screen

    term.keys("second prompt please", "Enter")
    term.wait_for("The second reply goes on")  # held there: it is streaming
    term.keys("C-c")
    screen = term.wait_for("cancelled: the turn is recorded as cancelled")
    assert "until the end" not in screen

    term.wait_for_prompt()
    term.keys("third one", "Enter")
    term.wait_for("The third answer.")
    term.wait_for_prompt()
    term.keys("C-d")
    screen = term.wait_for("[exit 0]")
    assert "Traceback" not in screen
    session_id = session_of(screen)

    users, records = asyncio.run(transcript(db, session_id))
    assert users == ["count these five little words", "second prompt please", "third one"]
    interrupted = [r.entry for r in records if isinstance(r.entry, Interrupted)]
    assert len(interrupted) == 1 and "cancelled" in interrupted[0].reason
    # The history file remembers the prompts for the next run.
    history = (tmp_path / "data" / "agentsession" / "chat_history").read_text(encoding="utf-8")
    assert "+count these five little words" in history and "+third one" in history


def test_paste_several_lines_then_ctrl_c_at_an_empty_prompt(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    db = tmp_path / "chat.db"
    term = chat_in(terminal, tmp_path, db)
    term.wait_for("you ›")
    term.paste("first line of it\nand the second")
    term.keys("Enter")
    term.wait_for("returned 7.")
    term.wait_for("you ›", count=2)
    term.keys("some typed text")
    term.wait_for("some typed text")
    term.keys("C-c")  # clears the typed text; the chat goes on
    term.keys("still here")
    term.wait_for("you › still here")  # the old text is gone and the prompt still reads keys
    assert "[exit" not in term.screen()
    term.keys("C-c")  # clears the marker
    term.keys("C-c")  # at an empty prompt: leave
    screen = term.wait_for("[exit 0]")
    session_id = session_of(screen)
    users, _ = asyncio.run(transcript(db, session_id))
    assert users == ["first line of it\nand the second"]


def test_ctrl_c_during_run_records_the_cancelled_turn(
    terminal: list[Terminal], tmp_path: Path, model: ScriptedServer
) -> None:
    db = tmp_path / "run.db"
    model.reply(Held("The answer starts", " and never ends."))
    command = [sys.executable, "-m", "agentsession", "--db", str(db), "--model", model.model]
    term = Terminal([*command, "run", "one two three"], environment(tmp_path), tmp_path)
    terminal.append(term)
    term.wait_for("The answer starts")  # held there: it is streaming
    term.keys("C-c")
    screen = term.wait_for("[exit 130]")
    assert "interrupted: the running turn is recorded as cancelled" in screen
    assert "Traceback" not in screen and "never ends" not in screen
    session_id = next(
        line.split()[1] for line in screen.splitlines() if line.startswith("session ")
    )
    users, records = asyncio.run(transcript(db, session_id))
    assert users == ["one two three"]
    assert isinstance(records[-1].entry, Interrupted) and "cancelled" in records[-1].entry.reason


def test_a_line_typed_during_a_reply_steers_it_and_queue_runs_after(
    terminal: list[Terminal], tmp_path: Path, model: ScriptedServer
) -> None:
    db = tmp_path / "chat.db"
    (tmp_path / "notes.md").write_text("five little words in here\n", encoding="utf-8")
    model.reply(
        Held("Reading the notes first.", [("read_file", {"path": "notes.md"})]),
        "Counted with the steer.",
        "Counted the queued words.",
    )
    term = chat_in(terminal, tmp_path, db, model=model)
    term.wait_for_prompt()
    term.keys("count these five little words", "Enter")
    term.wait_for("Reading the notes first.")  # held there: the turn runs until the test says
    term.keys("and these two", "Enter")
    term.wait_for("steer ")
    term.keys("/queue three more words", "Enter")
    screen = term.wait_for("queued ")
    assert "joins this turn at its next step" in screen and "/queue" in screen
    model.go.set()
    term.wait_for("Counted the queued words.")  # the queued prompt ran as its own turn
    term.wait_for_prompt()
    term.keys("C-d")
    screen = term.wait_for("[exit 0]")
    assert "Traceback" not in screen
    session_id = session_of(screen)

    users, records = asyncio.run(transcript(db, session_id))
    assert users == ["count these five little words", "and these two", "three more words"]
    kinds = [r.entry.kind for r in records]
    assert kinds.count("input_queued") == 2 and kinds.count("input_delivered") == 2
