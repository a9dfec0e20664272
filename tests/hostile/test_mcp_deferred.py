"""A real MCP server with 500 tools behind ``search_tools`` (issue 39): none is sent until found,
the ``max_tools`` cap does not hide any of them, and a found one runs through the server.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import pytest

import agentsession as ags
from agentsession.log import ToolLoaded

pytest.importorskip("mcp")
CROWD = Path(__file__).with_name("crowd_server.py")


def crowd(count: int, defer: bool | Literal["auto"]) -> ags.MCPServer:
    env = {"CROWD_TOOLS": str(count)}
    return ags.MCPServer.stdio("crowd", sys.executable, [str(CROWD)], env, defer_tools=defer)


def names(request: ags.Request) -> list[str]:
    return [tool.name for tool in request.tools]


def last_result(request: ags.Request) -> ags.ToolResultMessage:
    return [m for m in request.messages if isinstance(m, ags.ToolResultMessage)][-1]


async def test_500_deferred_tools_are_found_and_run(tmp_path: Path) -> None:
    wanted = "mcp__crowd__tool_421"  # beyond the default cap of 128 tools
    model = ags.ScriptedModel(
        [
            [ags.ToolCall("search_tools", {"query": wanted})],
            [ags.ToolCall(wanted, {})],
            "done",
        ]
    )
    store = ags.SQLiteStore(tmp_path / "sessions.db")
    config = ags.Config(retry_base_delay=0)
    async with ags.Runtime(
        store=store, model=model, mcp_servers=[crowd(500, "auto")], config=config
    ) as runtime:
        session = await runtime.create_session()
        assert (await session.prompt("use tool 421")).text == "done"
        log = [r.entry for r in await session.log()]
    assert names(model.requests[0]) == ["search_tools"]
    assert names(model.requests[1]) == ["search_tools", wanted]
    ran = last_result(model.requests[2])
    assert not ran.is_error and ran.content == "tool_421 answered"
    assert [e.name for e in log if isinstance(e, ToolLoaded)] == [wanted]


async def test_auto_leaves_a_small_server_undeferred() -> None:
    model = ags.ScriptedModel(["ok"])
    async with ags.Runtime(
        store=ags.MemoryStore(), model=model, mcp_servers=[crowd(5, "auto")]
    ) as runtime:
        await (await runtime.create_session()).prompt("hi")
    assert names(model.requests[0]) == [f"mcp__crowd__tool_{n}" for n in range(5)]
