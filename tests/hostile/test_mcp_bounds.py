"""MCP bounds: a 50 MB result ends its call (read with a bound, not after) and the next prompt
works; a server offering 5,000 tools has the rest left out with one warning, prompts keep working.
Real servers over stdio: the SDK's lab server, and a wire-level one for thousands of tools.
"""

from __future__ import annotations

import itertools
import logging
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.log import ToolResultEntry
from agentsession.mcp.bounded import LineBound

from ..mcp_servers.conftest import http_lab, stdio_lab

pytest.importorskip("mcp")
CROWD = Path(__file__).with_name("crowd_server.py")


def call(name: str, **arguments: object) -> list[ags.ToolCall]:
    return [ags.ToolCall(f"mcp__lab__{name}", dict(arguments))]


def results(model: ags.ScriptedModel, index: int) -> ags.ToolResultMessage:
    found = [m for m in model.requests[index].messages if isinstance(m, ags.ToolResultMessage)]
    return found[-1]


def mcp_tools(request: ags.Request) -> list[str]:
    return [tool.name for tool in request.tools if tool.name.startswith("mcp__")]


async def test_a_50_mb_result_ends_its_call_and_the_next_prompt_works(tmp_path: Path) -> None:
    # The call's timeout is generous: the answer must be the size refusal, not the timeout.
    lab = stdio_lab(tmp_path, timeout=120)
    model = ags.ScriptedModel(
        [call("huge", megabytes=50), "too big", call("echo", text="still here"), "fine"]
    )
    runtime = ags.Runtime(
        store=ags.MemoryStore(),
        model=model,
        project_dir=tmp_path,
        mcp_servers=[lab.server],
        config=ags.Config(retry_base_delay=0),
    )
    async with runtime:
        session = await runtime.create_session()
        assert (await session.prompt("big")).text == "too big"
        refused = results(model, 1)
        assert refused.is_error
        assert "larger than 16777216 bytes" in refused.content
        assert "did not finish within" not in refused.content
        assert (await session.prompt("again")).text == "fine"
        echoed = results(model, 3)
        assert not echoed.is_error and echoed.content == "still here"
        assert lab.starts() == 1  # the same connection served both


async def test_a_50_mb_result_over_http_ends_its_call_and_the_next_prompt_works(
    tmp_path: Path,
) -> None:
    # Over HTTP the SDK's client reads the body; the call's timeout still ends the turn's wait.
    # Which comes first (the timeout or the whole result, cut to the configured size) depends
    # on the machine; either way the call ends and the connection keeps working.
    lab = http_lab(tmp_path, timeout=5)
    assert lab.process is not None
    model = ags.ScriptedModel(
        [call("huge", megabytes=50), "too big", call("echo", text="still here"), "fine"]
    )
    try:
        async with ags.Runtime(
            store=ags.MemoryStore(),
            model=model,
            mcp_servers=[lab.server],
            config=ags.Config(retry_base_delay=0),
        ) as runtime:
            session = await runtime.create_session()
            assert (await session.prompt("big")).text == "too big"
            ended = results(model, 1)
            said = str(ended.content)
            assert ("did not finish within 5 seconds" in said) == ended.is_error
            assert (await session.prompt("again")).text == "fine"
            assert results(model, 3).content == "still here"
    finally:
        lab.process.kill()
        lab.process.wait(timeout=30)
        if lab.process.stdout is not None:
            lab.process.stdout.close()


async def test_a_result_under_the_bound_arrives_whole(tmp_path: Path) -> None:
    lab = stdio_lab(tmp_path)
    model = ags.ScriptedModel([call("huge", megabytes=2), "ok"])
    config = ags.Config(retry_base_delay=0, max_tool_result_chars=0)
    async with ags.Runtime(
        store=ags.MemoryStore(), model=model, mcp_servers=[lab.server], config=config
    ) as runtime:
        session = await runtime.create_session()
        await session.prompt("big")
        stored = [r.entry for r in await session.log() if isinstance(r.entry, ToolResultEntry)]
    (result,) = stored
    assert not result.is_error and result.content == "x" * 2 * 1024 * 1024


def crowd(count: int, max_tools: int = 128) -> ags.MCPServer:
    return ags.MCPServer.stdio(
        "crowd",
        sys.executable,
        [str(CROWD)],
        env={"CROWD_TOOLS": str(count)},
        max_tools=max_tools,
    )


async def test_5000_tools_leave_prompts_working(caplog: pytest.LogCaptureFixture) -> None:
    tool = [ags.ToolCall("mcp__crowd__tool_3", {})]
    model = ags.ScriptedModel(["one", tool, "two"])
    with caplog.at_level(logging.WARNING, logger="agentsession.mcp"):
        async with ags.Runtime(
            store=ags.MemoryStore(),
            model=model,
            mcp_servers=[crowd(5000)],
            config=ags.Config(retry_base_delay=0),
        ) as runtime:
            session = await runtime.create_session()
            assert (await session.prompt("hello")).text == "one"
            assert (await session.prompt("again")).text == "two"
    offered = mcp_tools(model.requests[0])
    assert offered == [f"mcp__crowd__tool_{n}" for n in range(128)]
    answered = results(model, 2)
    assert not answered.is_error and answered.content == "tool_3 answered"
    capped = [r for r in caplog.records if "max_tools" in r.getMessage()]
    assert len(capped) == 1 and capped[0].levelno == logging.WARNING


async def test_max_tools_is_the_applications_choice() -> None:
    model = ags.ScriptedModel(["ok"])
    async with ags.Runtime(
        store=ags.MemoryStore(),
        model=model,
        mcp_servers=[crowd(300, max_tools=400)],
        config=ags.Config(retry_base_delay=0),
    ) as runtime:
        await (await runtime.create_session()).prompt("hi")
    assert len(mcp_tools(model.requests[0])) == 300
    with pytest.raises(ags.UsageError, match="max_tools"):
        ags.MCPServer.stdio("x", "cmd", max_tools=0)


def test_line_bound_drops_long_lines_as_they_arrive() -> None:
    bound = LineBound(10)
    assert bound.feed(b'{"id": 7, ') == []
    assert bound.feed(b"more and more") == [(None, b'{"id": 7, more and more')]
    assert bound.feed(b"x" * 100) == []  # dropped while read, nothing kept
    assert bound.feed(b"tail\nshort\nnext") == [(b"short", None)]
    assert bound.feed(b"\n") == [(b"next", None)]


@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=20),
    limit=st.integers(min_value=1, max_value=30),
)
def test_line_bound_keeps_short_lines_whatever_the_chunks(
    lines: list[bytes], cuts: list[int], limit: int
) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    points = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    bound = LineBound(limit)
    kept: list[bytes] = []
    dropped = 0
    for start, end in itertools.pairwise(points):
        for line, head in bound.feed(stream[start:end]):
            if line is not None:
                kept.append(line)
            else:
                assert head is not None and len(head) <= 512
                dropped += 1
    assert kept == [line for line in lines if len(line) <= limit]
    assert dropped == sum(len(line) > limit for line in lines)
