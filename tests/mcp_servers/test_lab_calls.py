"""Calls to the lab server over stdio: lifecycle, restarts, results, timeouts, cancellation."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.providers.scripted import Reply

from .conftest import stdio_lab
from .wire import tool_names


def call(name: str, **arguments: object) -> list[ags.ToolCall]:
    return [ags.ToolCall(f"mcp__lab__{name}", dict(arguments))]


def last_result(model: ags.ScriptedModel) -> ags.ToolResultMessage:
    found = [m for m in model.requests[-1].messages if isinstance(m, ags.ToolResultMessage)]
    return found[-1]


async def wait_for(predicate: Callable[[], bool], what: str) -> None:
    """Poll ``predicate`` (bounded): the server reacts in its own process, in its own time."""
    for _ in range(2400):  # two minutes at least: a generous bound for a busy machine
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_servers_start_lazily_are_shared_and_stop_with_the_runtime(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    lab = stdio_lab(tmp_path)
    model = ags.ScriptedModel(["one", "two"])
    runtime = make_runtime(model=model, mcp_servers=[lab.server])
    first = await runtime.create_session()
    second = await runtime.create_session()
    assert lab.starts() == 0  # nothing starts before a boundary needs it

    await first.prompt("hello")
    await second.prompt("hello too")

    assert lab.starts() == 1  # one process serves both sessions
    assert all("mcp__lab__echo" in tool_names(r) for r in model.requests)
    pid = lab.pid()
    assert alive(pid)
    await runtime.close()
    assert not alive(pid)


async def test_a_server_that_died_is_started_again_after_its_backoff(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    lab = stdio_lab(tmp_path, backoff=0)
    replies: list[Reply] = ["up", call("echo", text="back again"), "done"]
    model = ags.ScriptedModel(replies)
    runtime = make_runtime(model=model, mcp_servers=[lab.server])
    session = await runtime.create_session()
    await session.prompt("start")
    lab.kill()

    await session.prompt("echo")

    answer = last_result(model)
    assert (answer.content, answer.is_error) == ("back again", False)
    assert lab.starts() == 2


async def test_a_server_that_cannot_start_leaves_the_session_working(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = ags.MCPServer.stdio("ghost", str(tmp_path / "no-such-server"), backoff=3600)
    model = ags.ScriptedModel(["still here"])
    runtime = make_runtime(model=model, mcp_servers=[missing])
    session = await runtime.create_session()

    with caplog.at_level(logging.WARNING, logger="agentsession.mcp"):
        result = await session.prompt("hello")

    assert result.text == "still here"
    assert not any(t.startswith("mcp__ghost__") for t in tool_names(model.requests[0]))
    assert "MCP server 'ghost'" in caplog.text and "could not be started" in caplog.text


async def test_every_kind_of_content_becomes_text(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    lab = stdio_lab(tmp_path)
    calls = [ags.ToolCall(f"mcp__lab__{n}", {}) for n in ("gallery", "table", "fail")]
    model = ags.ScriptedModel([calls, "seen"])
    runtime = make_runtime(model=model, mcp_servers=[lab.server])
    session = await runtime.create_session()

    await session.prompt("Show me everything.")

    gallery, table, fail = [
        m for m in model.requests[-1].messages if isinstance(m, ags.ToolResultMessage)
    ]
    assert isinstance(gallery.content, str)
    assert gallery.content.splitlines() == [
        "a caption",
        "[image: image/png, 21 bytes, not shown]",
        "[resource link: readme <file:///lab/README.md>, text/markdown]",
        "[resource <note://embedded>, text/plain]",
        "embedded text",
    ]
    assert not gallery.is_error
    assert '"rows": 2' in table.content and not table.is_error
    assert fail.is_error and "the lab tool failed on purpose" in fail.content


async def test_a_long_result_is_bounded(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    lab = stdio_lab(tmp_path)
    model = ags.ScriptedModel([call("echo", text="x" * 5000), "ok"])
    config = ags.Config(retry_base_delay=0, max_tool_result_chars=300)
    runtime = make_runtime(model=model, mcp_servers=[lab.server], config=config)
    session = await runtime.create_session()

    await session.prompt("Say a lot.")

    answer = last_result(model)
    assert len(answer.content) <= 300 and "characters omitted" in answer.content


async def test_a_call_out_of_time_is_cancelled_on_the_server(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    lab = stdio_lab(tmp_path, timeout=0.5)
    model = ags.ScriptedModel([call("slow", seconds=60), "gave up"])
    runtime = make_runtime(model=model, mcp_servers=[lab.server])
    session = await runtime.create_session()

    result = await session.prompt("Take your time.")

    assert result.text == "gave up"
    answer = last_result(model)
    assert answer.is_error and "did not finish within 0.5 seconds" in answer.content
    await wait_for(lambda: "cancelled slow" in lab.lines(), "the server saw the cancellation")


async def test_cancelling_the_turn_cancels_the_call_on_the_server(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    lab = stdio_lab(tmp_path)
    model = ags.ScriptedModel([call("slow", seconds=60), "after"])
    runtime = make_runtime(model=model, mcp_servers=[lab.server])
    session = await runtime.create_session()

    async def run() -> None:
        await session.prompt("Take your time.")

    task = asyncio.create_task(run())
    await wait_for(lambda: "slow started" in lab.lines(), "the call reached the server")
    assert session.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    await wait_for(lambda: "cancelled slow" in lab.lines(), "the server saw the cancellation")
    result = await session.prompt("Go on.")
    assert result.text == "after"
    (interrupted,) = [m for m in session.messages if m.role == "tool"]
    assert "cancelled" in interrupted.content


async def test_names_that_meet_are_refused_with_a_clear_error(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lab = stdio_lab(tmp_path, env={"LAB_COLLIDE": "1"})

    @ags.tool(name="mcp__lab__echo")
    def own_echo(text: str) -> str:
        """The application's own tool of that name."""
        return f"own {text}"

    model = ags.ScriptedModel([call("echo", text="hi"), "ok"])
    runtime = make_runtime(model=model, mcp_servers=[lab.server], tools=[own_echo])
    session = await runtime.create_session()

    with caplog.at_level(logging.ERROR, logger="agentsession.mcp"):
        await session.prompt("Echo.")

    names = tool_names(model.requests[0])
    assert "mcp__lab__dup_name" not in names
    assert names.count("mcp__lab__echo") == 1
    assert last_result(model).content == "own hi"  # the application's tool answered
    assert "'dup.name'" in caplog.text and "'dup_name'" in caplog.text
    assert "mcp__lab__echo is not offered: an application tool has that name" in caplog.text


async def test_effects_from_annotations_under_the_presets(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    lab = stdio_lab(tmp_path)
    calls = [
        ags.ToolCall("mcp__lab__echo", {"text": "read"}),
        ags.ToolCall("mcp__lab__set_note", {"text": "changed"}),
        ags.ToolCall("mcp__lab__browse", {}),
    ]
    model = ags.ScriptedModel([calls, "done", call("bare")])
    config = ags.Config(retry_base_delay=0, permission_preset="read-only")
    runtime = make_runtime(model=model, mcp_servers=[lab.server], config=config)
    session = await runtime.create_session()

    await session.prompt("Try them all.")

    echo, note, browse = [
        m for m in model.requests[-1].messages if isinstance(m, ags.ToolResultMessage)
    ]
    assert (echo.content, echo.is_error) == ("read", False)
    assert note.is_error and "mcp__lab__set_note writes files" in note.content
    assert browse.is_error and "mcp__lab__browse uses the network" in browse.content

    session.set_permission_preset("workspace-write")
    paused = await session.prompt("And the tool without annotations?")
    (approval,) = paused.approvals
    assert approval.name == "mcp__lab__bare" and "destructive" in approval.reason


async def test_an_effect_override_in_the_declaration_wins(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    lab = stdio_lab(tmp_path, effect="read")
    model = ags.ScriptedModel([call("set_note", text="trusted"), "ok"])
    config = ags.Config(retry_base_delay=0, permission_preset="read-only")
    runtime = make_runtime(model=model, mcp_servers=[lab.server], config=config)
    session = await runtime.create_session()

    await session.prompt("Change the note.")

    answer = last_result(model)
    assert (answer.content, answer.is_error) == ("noted", False)
