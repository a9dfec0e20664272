"""Regression tests for the command line's listed bugs (each fails without its fix).

Driven in-process: a ``Driver`` on a ``PlainOutput`` over a scripted model, or ``main(argv)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
from pathlib import Path
from typing import cast

import pytest

import agentsession as ags
from agentsession.cli.approvals import DENY_ALL
from agentsession.cli.chat import Chat, Driver
from agentsession.cli.console import PlainOutput
from agentsession.cli.interrupts import interruptible
from agentsession.cli.screens import print_sessions
from agentsession.session import Session
from agentsession.store.base import SessionInfo

from .cli_inprocess import run_cli
from .conftest import MakeRuntime

Make = MakeRuntime
EVERY_KEY = "[context update: core.date, core.environment, core.permissions"


def compacting(make_runtime: Make) -> ags.Runtime:
    config = ags.Config(
        context_window=20_000, compact_threshold=0.01, keep_user_turns=1, retry_base_delay=0
    )
    return make_runtime(lambda request: "ok", config=config, tools=ags.builtin_tools())


async def test_an_auto_compaction_is_announced_and_opens_a_new_epoch_on_screen(
    make_runtime: Make,
) -> None:
    runtime = compacting(make_runtime)
    session = await runtime.create_session()
    err = io.StringIO()
    driver = Driver(session, PlainOutput(out=io.StringIO(), err=err), runtime.store, DENY_ALL)
    for text in ("one", "two", "three"):
        assert await driver.prompt(text) is not None
    said = err.getvalue()
    summaries = [r for r in await session.log() if r.entry.kind == "summary"]
    assert summaries, "the threshold should have compacted"
    assert said.count("compacted automatically") == len(summaries)
    assert said.count("[new context epoch:") == 1 + len(summaries)
    assert EVERY_KEY not in said


async def test_after_compact_the_next_request_is_a_new_epoch_not_an_update(
    make_runtime: Make,
) -> None:
    runtime = make_runtime(lambda request: "ok", tools=ags.builtin_tools())
    session = await runtime.create_session()
    err = io.StringIO()
    driver = Driver(session, PlainOutput(out=io.StringIO(), err=err), runtime.store, DENY_ALL)
    for text in ("one", "two", "three"):
        await driver.prompt(text)
    chat = Chat(driver, lambda name: runtime.model)
    await chat._compact("")
    before = err.getvalue()
    assert "compacted: older turns" in before
    await driver.prompt("four")
    after = err.getvalue()[len(before) :]
    assert "[new context epoch:" in after and EVERY_KEY not in after
    assert "compacted automatically" not in after  # said once, by /compact


async def test_a_compaction_epoch_names_its_tools(make_runtime: Make) -> None:
    runtime = compacting(make_runtime)
    session = await runtime.create_session()
    for text in ("one", "two", "three"):
        await session.prompt(text)
    inspection = await session.inspect()
    reasons = [e.reason for e in inspection.epochs]
    assert "compaction" in reasons
    first, last = inspection.epochs[0], inspection.epochs[-1]
    assert last.reason == "compaction" and last.tools == first.tools and last.tools


def test_sessions_columns_hold_with_a_long_model_string(tmp_path: Path, capsys: object) -> None:
    long_model = "openai-compatible:http://127.0.0.1:8080/v1#" + "x" * 120
    rows = [
        (SessionInfo(f"{n:032x}", "2026-01-01T00:00", "2026-01-01T00:00", f"title {n}"), 1, 1, 0, m)
        for n, m in enumerate([long_model, "openai:gpt-4.1"])
    ]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_sessions(rows, rich=False)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    # Each column starts at the same place on every line: the title is found at one offset.
    assert lines[0].index("title 0") == lines[1].index("title 1")


def test_a_failed_turn_is_marked_and_leaves_no_consecutive_user_messages_on_screen(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "s.db")
    failed = run_cli(
        tmp_path, "--db", db, "-m", "openai-compatible:http://127.0.0.1:9/v1#x", "run", "first"
    )
    assert failed.code == 1
    listed = run_cli(tmp_path, "--db", db, "--json", "sessions")
    (row,) = [json.loads(line) for line in listed.out.splitlines()]
    shown = run_cli(tmp_path, "--db", db, "show", row["id"][:8])
    assert shown.code == 0, shown.err
    assert "failed" in shown.out


async def test_the_recap_of_a_resumed_chat_marks_a_failed_turn_and_a_waiting_call(
    make_runtime: Make, tmp_path: Path
) -> None:
    from agentsession.cli.chatview import recap

    from .scenario import make_project

    project = make_project(tmp_path)
    replies: list[object] = [
        "the first answer",
        RuntimeError("provider down"),
        [ags.ToolCall("run_command", {"command": "make test"})],
    ]
    runtime = make_runtime(replies, project_dir=project, tools=ags.builtin_tools())
    session = await runtime.create_session()
    await session.prompt("first")
    with pytest.raises(ags.ProviderError):
        await session.prompt("second")
    waiting = await session.prompt("third")
    assert waiting.stop_reason == "approval_required"
    lines = await recap(runtime.store, session.id)
    text = "\n".join(lines)
    assert lines[0] == "you › first" and "the first answer" in text
    second, third = text.index("you › second"), text.index("you › third")
    assert second < text.index("this turn failed") < third
    assert "→ $ make test" in text
    assert text.rstrip().endswith("? a tool call of this turn waits for approval")


def test_the_demo_model_reads_no_pacing_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pacing the demo model is the tests' own plumbing (``tests/paced_demo.py``): the package
    reads no variable for it, so a stray one neither slows a user's demo nor breaks it."""
    from agentsession.cli.demo import demo_model
    from agentsession.providers.scripted import ScriptedModel

    monkeypatch.setenv("AGENTSESSION_DEMO_DELAY", "not seconds")
    assert isinstance(demo_model(), ScriptedModel)
    source = Path(ags.__file__).parent
    assert not [p for p in source.rglob("*.py") if "DEMO_DELAY" in p.read_text("utf-8")]


class _WindingDown:
    """A session whose turn takes the first cancel and then winds down (records its abandoned
    step): every later ``cancel()`` answers ``False``, as ``Session.cancel`` does then."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.calls = 0

    def cancel(self) -> bool:
        self.calls += 1
        self.asked.set()
        return self.calls == 1


class _Noted(io.StringIO):
    def __init__(self, wanted: str) -> None:
        super().__init__()
        self.wanted = wanted
        self.seen = asyncio.Event()

    def write(self, text: str) -> int:
        if self.wanted in text:
            self.seen.set()
        return super().write(text)


async def test_a_second_ctrl_c_while_the_first_cancel_winds_down_is_ignored() -> None:
    """The first Ctrl-C cancels the turn; a second one while the turn still records its
    abandoned step must not cancel the work around it (it would land inside that write)."""
    session = _WindingDown()
    err = _Noted("still stopping")
    output = PlainOutput(out=io.StringIO(), err=err)
    wound_down = asyncio.Event()
    outcome: list[str] = []

    async def winding_turn() -> None:
        try:
            await wound_down.wait()  # the abandoned step's record, still being written
            outcome.append("recorded")
        except asyncio.CancelledError:
            outcome.append("cut inside the record")
            raise

    running = asyncio.ensure_future(interruptible(cast(Session, session), winding_turn(), output))
    await asyncio.sleep(0)  # the handler is installed once interruptible runs
    os.kill(os.getpid(), signal.SIGINT)
    await asyncio.wait_for(session.asked.wait(), 60)
    os.kill(os.getpid(), signal.SIGINT)
    noted = asyncio.ensure_future(err.seen.wait())
    # Either the press is answered with a note, or (the bug) it cut the work short.
    await asyncio.wait({noted, running}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    noted.cancel()
    wound_down.set()
    assert await asyncio.wait_for(running, 60) is True
    assert outcome == ["recorded"]
    assert "still stopping" in err.getvalue()
    assert session.calls == 1, "the second press asks nothing more of the session"
