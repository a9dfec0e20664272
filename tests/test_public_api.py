"""The settled public API: the pinned surface, streams as context managers, deprecated aliases."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.log import Interrupted, ToolResultEntry

from .conftest import MakeRuntime
from .public_api import surface

Make = MakeRuntime
PINNED = Path(__file__).parent / "fixtures" / "public_api.txt"


def test_the_public_surface_is_the_pinned_one() -> None:
    # A change here is a change to what users depend on: write the file anew on purpose
    # (python -m tests.public_api > tests/fixtures/public_api.txt) and say so in the changelog.
    assert surface() == PINNED.read_text(encoding="utf-8").splitlines()


def test_every_public_name_is_importable_and_documented() -> None:
    assert len(set(ags.__all__)) == len(ags.__all__)
    for name in ags.__all__:
        value = getattr(ags, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert (getattr(value, "__doc__", None) or "").strip(), f"{name} has no docstring"


def _waiting_tool(release: asyncio.Event, started: asyncio.Event) -> ags.Tool:
    @ags.tool
    async def wait() -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        return "waited"

    return wait


def _assert_cancelled_and_recorded(entries: list[object]) -> None:
    closed = [e for e in entries if isinstance(e, Interrupted)]
    assert closed and "cancelled" in closed[0].reason
    synthetic = [e for e in entries if isinstance(e, ToolResultEntry) and e.is_error]
    assert synthetic and "cancelled" in str(synthetic[0].content)


async def test_break_inside_async_with_settles_the_turn_before_the_block_is_left(
    make_runtime: Make,
) -> None:
    release, started = asyncio.Event(), asyncio.Event()
    runtime = make_runtime(
        [[ags.ToolCall("wait", {})], "never", "second"], tools=[_waiting_tool(release, started)]
    )
    session = await runtime.create_session()
    async with session.stream("start") as events:
        async for event in events:
            if isinstance(event, ags.ToolCallStarted):
                break
        assert session.busy  # still inside the block: the turn is open
    # Left the block: settled already, before any other operation ran.
    assert not session.busy
    _assert_cancelled_and_recorded([r.entry for r in await session.log()])
    assert not release.is_set()
    assert (await session.prompt("next")).text in ("never", "second")


async def test_an_exception_inside_async_with_settles_the_turn_and_propagates(
    make_runtime: Make,
) -> None:
    release, started = asyncio.Event(), asyncio.Event()
    runtime = make_runtime(
        [[ags.ToolCall("wait", {})], "never", "again"], tools=[_waiting_tool(release, started)]
    )
    session = await runtime.create_session()
    with pytest.raises(LookupError, match="the consumer failed"):
        async with session.stream("start") as events:
            async for event in events:
                if isinstance(event, ags.ToolCallStarted):
                    raise LookupError("the consumer failed")
    assert not session.busy
    _assert_cancelled_and_recorded([r.entry for r in await session.log()])
    assert (await session.prompt("next")).text in ("never", "again")


async def test_a_stream_run_to_its_end_inside_async_with_gives_the_result(
    make_runtime: Make,
) -> None:
    runtime = make_runtime(["hello"])
    session = await runtime.create_session()
    async with session.stream("hi") as events:
        kinds = [event.kind async for event in events]
    assert kinds[-1] == "turn_finished"
    assert not any(isinstance(r.entry, Interrupted) for r in await session.log())
    assert [m.role for m in session.messages] == ["user", "assistant"]


async def test_a_dropped_stream_is_settled_by_the_next_operation(make_runtime: Make) -> None:
    release, started = asyncio.Event(), asyncio.Event()
    runtime = make_runtime(
        [[ags.ToolCall("wait", {})], "never", "second"], tools=[_waiting_tool(release, started)]
    )
    session = await runtime.create_session()
    events = session.stream("start")
    async for event in events:
        if isinstance(event, ags.ToolCallStarted):
            break
    assert session.busy  # the consumer still holds the stream
    del events, event
    assert not session.busy  # nobody can continue it: it no longer counts as running
    assert (await session.prompt("next")).text in ("never", "second")
    _assert_cancelled_and_recorded([r.entry for r in await session.log()])


async def test_resume_and_pending_still_work_and_warn(make_runtime: Make) -> None:
    @ags.tool(effect="execute")
    def shell() -> str:
        """Run something."""
        return "ran"

    runtime = make_runtime([[ags.ToolCall("shell", {})], "done"], tools=[shell])
    session = await runtime.create_session()
    result = await session.prompt("go")
    assert result.stop_reason == "approval_required"
    await session.approve(result.approvals[0].call_id)
    with pytest.warns(DeprecationWarning, match=r"use Session\.retry\(\)"):
        resumed = await session.resume()
    assert resumed.text == "done"
    with pytest.warns(DeprecationWarning, match=r"use Session\.unflushed_entries"):
        assert session.pending == 0 == session.unflushed_entries


async def test_inspect_carries_the_checkpoints_and_runtime_contexts(make_runtime: Make) -> None:
    runtime = make_runtime(["one"])
    session = await runtime.create_session()
    await session.prompt("hi")
    inspection = await session.inspect()
    assert list(inspection.checkpoints) == session.system_prompt_checkpoints()
    assert inspection.checkpoints  # the first request recorded its system context
    assert list(inspection.runtime_contexts) == session.runtime_contexts()


def test_the_console_script_names_the_cli_extra_when_it_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import agentsession.cli as cli

    monkeypatch.setattr(cli, "CLI_MODULES", ("rich", "agentsession_no_such_display"))
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--version"])
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert "agentsession_no_such_display" in err and "rich" not in err.split("needs")[1]
    assert "pip install 'agentsession[cli]'" in err


def test_the_console_script_runs_the_command_line_with_the_extra(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import agentsession.cli as cli

    assert cli.missing_cli_modules() == []
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--version"])
    assert stopped.value.code in (0, None)
    assert capsys.readouterr().out.strip() == f"agentsession {ags.__version__}"


def test_the_version_has_one_source() -> None:
    from importlib.metadata import version

    assert version("agentsession") == ags.__version__
