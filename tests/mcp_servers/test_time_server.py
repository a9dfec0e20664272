"""The real ``mcp-server-time`` over stdio: its tools join the request and answer calls."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

import agentsession as ags

from .wire import assert_every_format_declares, installed, tool_names

pytest.importorskip("mcp_server_time")

TIME = "mcp__time__get_current_time"


def time_server() -> ags.MCPServer:
    return ags.MCPServer.stdio("time", installed("mcp-server-time"))


async def test_a_call_of_the_time_tool_reaches_the_next_request(
    make_runtime: Callable[..., ags.Runtime],
) -> None:
    model = ags.ScriptedModel([[ags.ToolCall(TIME, {"timezone": "Etc/UTC"})], "It is now."])
    runtime = make_runtime(model=model, mcp_servers=[time_server()])
    session = await runtime.create_session()

    result = await session.prompt("What time is it in UTC?")

    assert result.text == "It is now."
    first, second = model.requests
    assert tool_names(first) == [TIME, "mcp__time__convert_time"]
    answer = second.messages[-1]
    assert isinstance(answer, ags.ToolResultMessage)
    assert answer.name == TIME and not answer.is_error
    assert isinstance(answer.content, str)
    assert json.loads(answer.content)["timezone"] == "Etc/UTC"
    stored = [m for m in session.messages if m.role == "tool"]
    assert [m.content for m in stored] == [answer.content]


async def test_time_declarations_pass_every_wire_format(
    make_runtime: Callable[..., ags.Runtime],
) -> None:
    model = ags.ScriptedModel(["fine"])
    runtime = make_runtime(model=model, mcp_servers=[time_server()])
    session = await runtime.create_session()
    await session.prompt("hello")

    (request,) = model.requests
    for spec in request.tools:
        assert spec.parameters["type"] == "object"
        assert_every_format_declares(request, spec)
