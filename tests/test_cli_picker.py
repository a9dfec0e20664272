"""The ``--resume`` picker: arrow keys move the choice, typing filters, Enter takes, Escape quits.

Driven through prompt_toolkit's pipe input (the keys a terminal would send) with no screen, and
once in a real terminal (tmux) from ``chat --resume`` to the chosen session's prompt.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

import agentsession as ags
from agentsession.cli.addressing import choose_session, matching, pick_session
from agentsession.log import UserEntry
from agentsession.store.base import SessionInfo

from .cli_terminal import Terminal, needs_tmux, terminals

DOWN, UP = "\x1b[B", "\x1b[A"

SESSIONS = [
    SessionInfo("aaaa1111", "2026-03-01T10:00:00+00:00", "2026-03-03T10:00:00+00:00", "fix login"),
    SessionInfo("bbbb2222", "2026-03-01T10:00:00+00:00", "2026-03-02T10:00:00+00:00", "deploy"),
    SessionInfo("cccc3333", "2026-03-01T10:00:00+00:00", "2026-03-01T10:00:00+00:00", "LOGIN page"),
]
ROWS = [(info, f"{info.id}  {info.updated_at[:10]}  {info.title}") for info in SESSIONS]


def choose(keys: str) -> SessionInfo | None:
    async def run() -> SessionInfo | None:
        with create_pipe_input() as pipe:
            pipe.send_text(keys)
            return await choose_session(ROWS, input=pipe, output=DummyOutput())

    return asyncio.run(run())


def test_enter_takes_the_first_and_arrows_move() -> None:
    assert choose("\r") is SESSIONS[0]
    assert choose(DOWN + DOWN + "\r") is SESSIONS[2]
    assert choose(DOWN + DOWN + DOWN + UP + "\r") is SESSIONS[1]  # stops at the last row
    assert choose(UP + "\r") is SESSIONS[0]  # and at the first


def test_typing_filters_every_word_in_any_case() -> None:
    assert choose("login" + DOWN + "\r") is SESSIONS[2]
    assert choose("login 03-01\r") is SESSIONS[2]
    assert choose("bbbb\r") is SESSIONS[1]
    assert [info.id for info, _ in matching(ROWS, "LOGIN")] == ["aaaa1111", "cccc3333"]
    assert matching(ROWS, "") == ROWS


def test_nothing_matching_takes_nothing_and_ctrl_c_gives_up() -> None:
    assert choose("nowhere\r\x03") is None
    assert choose("\x03") is None
    assert choose(DOWN + "\x04") is None


def test_pick_session_lists_this_folder_first_with_titles_and_dates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[list[tuple[SessionInfo, str]]] = []

    async def first(rows: list[tuple[SessionInfo, str]]) -> SessionInfo:
        shown.append(rows)
        return rows[0][0]

    async def run() -> SessionInfo:
        store = ags.MemoryStore()
        elsewhere = SessionInfo(
            "elsewhere", "2026-03-05T09:00:00+00:00", "2026-03-05T09:00:00+00:00"
        )
        here = SessionInfo(
            "here0001",
            "2026-03-04T08:30:00+00:00",
            "2026-03-04T08:30:00+00:00",
            "the title",
            str(tmp_path),
        )
        await store.create_session(elsewhere, [])
        await store.create_session(here, [])
        return await pick_session(store, tmp_path, {"here0001": "last\nwords"})

    monkeypatch.setattr("agentsession.cli.addressing.choose_session", first)
    assert asyncio.run(run()).id == "here0001"
    (info, row), (other, _) = shown[0]
    assert (info.id, other.id) == ("here0001", "elsewhere")
    assert "the title" in row and "2026-03-04 08:30" in row and "[here]" in row
    assert row.endswith("last words")


def test_giving_up_is_an_interrupt(monkeypatch: pytest.MonkeyPatch) -> None:
    async def none(rows: list[tuple[SessionInfo, str]]) -> None:
        return None

    async def run() -> None:
        store = ags.MemoryStore()
        await store.create_session(
            SessionInfo("x", "2026-03-01T00:00:00+00:00", "2026-03-01T00:00:00+00:00"), []
        )
        await pick_session(store, Path("."), {})

    monkeypatch.setattr("agentsession.cli.addressing.choose_session", none)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run())


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    yield from terminals()


@needs_tmux
def test_chat_resume_picks_with_arrows_and_a_filter(
    terminal: list[Terminal], tmp_path: Path
) -> None:
    db = tmp_path / "chat.db"

    async def made() -> None:
        store = ags.SQLiteStore(db)
        for info, said in (
            (SESSIONS[0], "hello there"),
            (SESSIONS[1], "ship it"),
            (SESSIONS[2], "the form"),
        ):
            await store.create_session(info, [UserEntry(said)])
        await store.close()

    asyncio.run(made())
    env = {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHONIOENCODING": "utf-8",
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
    }
    command = [sys.executable, "-m", "agentsession", "--db", str(db), "chat", "--resume"]
    term = Terminal(command, env, tmp_path)
    terminal.append(term)
    screen = term.wait_for("3 of 3")
    assert "fix login" in screen and "2026-03-03 10:00" in screen and "hello there" in screen
    term.keys("Down")
    term.wait_for("› bbbb2222")
    term.keys("login")
    term.wait_for("2 of 3")
    term.keys("Down", "Enter")
    term.wait_for_prompt()  # not the recap's "you › the form", printed before the prompt
    term.keys("C-d")
    screen = term.wait_for("[exit 0]")
    assert "resume with: agentsession chat --session cccc3333" in screen
