"""Deferred tools behind ``search_tools`` (issue 39; spec 003's rules for tools that come and go).

Sessions run on SQLite with the scripted model; most on a profile with native tool changes, so a
load is one ``tool_addition`` in place and an eviction one ``tool_removal``.
"""

from __future__ import annotations

from typing import Any

import pytest

import agentsession as ags
from agentsession.log import ToolLoaded, ToolUnloaded
from agentsession.mcp.config import parse_mcp_config
from agentsession.request import standing_tools

from .conftest import MakeRuntime
from .skills.sessions import NATIVE, RESPONSES, call, tool_names, tool_results, updates

Make = MakeRuntime
WORDS = ("alpha", "bravo", "charlie", "delta", "echo")


def _tools(*words: str) -> list[ags.Tool]:
    return [
        ags.tool(name=f"{w}_gadget", description=f"Works the {w} gear.", defer=True)(_runner(w))
        for w in words
    ]


def _runner(word: str) -> Any:
    def run(text: str = "") -> str:
        return f"{word} ran {text}".strip()

    return run


@ags.tool
def plain() -> str:
    """A tool that is always offered."""
    return "plain ran"


def search(query: str) -> list[ags.ToolCall]:
    return call("search_tools", query=query)


def _config(**kwargs: Any) -> ags.Config:
    return ags.Config(retry_base_delay=0, **kwargs)


def _results(request: ags.Request) -> list[str]:
    return [str(r.content) for r in tool_results(request)]


async def test_a_deferred_tool_is_not_sent_until_found(make_runtime: Make) -> None:
    model = ags.ScriptedModel([search("alpha"), call("alpha_gadget", text="x"), "done"])
    runtime = make_runtime(model=model, tools=[plain, *_tools(*WORDS)])
    session = await runtime.create_session()
    await session.prompt("go")
    first, second, third = model.requests
    assert tool_names(first) == ["plain", "search_tools"]
    proxy = first.tools[1]
    assert proxy.parameters["properties"] == {
        "query": {"type": "string", "description": "Words describing the tool you need."}
    }
    assert proxy.parameters["required"] == ["query"]
    assert tool_names(second) == ["plain", "search_tools", "alpha_gadget"]
    [found] = _results(second)
    assert "alpha_gadget" in found and "Loaded" in found
    assert _results(third)[-1] == "alpha ran x"
    entries = [r.entry for r in await session.log() if isinstance(r.entry, ToolLoaded)]
    assert [e.name for e in entries] == ["alpha_gadget"]


async def test_no_deferred_tool_means_no_search_tools(make_runtime: Make) -> None:
    runtime = make_runtime(["hi"], tools=[plain])
    session = await runtime.create_session()
    await session.prompt("go")
    assert tool_names(runtime.scripted.requests[0]) == ["plain"]


async def test_calling_a_deferred_tool_that_is_not_loaded_is_unknown(make_runtime: Make) -> None:
    model = ags.ScriptedModel([call("bravo_gadget"), "done"])
    runtime = make_runtime(model=model, tools=_tools(*WORDS))
    session = await runtime.create_session()
    await session.prompt("go")
    assert _results(model.requests[1]) == ["Unknown tool: bravo_gadget"]


async def test_a_tool_found_in_a_step_is_callable_in_the_next_not_the_same(
    make_runtime: Make,
) -> None:
    both = [
        ags.ToolCall("search_tools", {"query": "alpha"}, id="s"),
        ags.ToolCall("alpha_gadget", {}, id="a"),
    ]
    model = ags.ScriptedModel([both, call("alpha_gadget"), "done"])
    runtime = make_runtime(model=model, tools=_tools(*WORDS))
    session = await runtime.create_session()
    await session.prompt("go")
    same = _results(model.requests[1])
    assert same[1] == "Unknown tool: alpha_gadget"  # the request it answers did not offer it
    assert _results(model.requests[2])[-1] == "alpha ran"


async def test_an_evicted_tool_is_unknown_and_the_eviction_is_recorded(
    make_runtime: Make,
) -> None:
    script: list[str | list[ags.ToolCall]] = [
        search("alpha"),
        search("bravo"),
        search("charlie"),
        call("alpha_gadget"),
        "done",
    ]
    model = ags.ScriptedModel(script, profile=NATIVE)
    runtime = make_runtime(model=model, tools=_tools(*WORDS), config=_config(max_loaded_tools=2))
    session = await runtime.create_session()
    await session.prompt("go")
    evicting = _results(model.requests[3])[-1]
    assert "Unloaded to make room" in evicting and "alpha_gadget" in evicting
    assert _results(model.requests[4])[-1] == "Unknown tool: alpha_gadget"
    log = await session.log()
    assert [r.entry.name for r in log if isinstance(r.entry, ToolUnloaded)] == ["alpha_gadget"]
    removed = [n for u in updates(model.requests[-1]) for n in u.tools_removed]
    assert removed == ["alpha_gadget"]


async def test_in_place_announcement_keeps_the_tool_list_and_announces_once(
    make_runtime: Make,
) -> None:
    script: list[str | list[ags.ToolCall]] = [
        search("alpha"),
        search("alpha"),
        call("alpha_gadget"),
        search("bravo"),
        "done",
    ]
    model = ags.ScriptedModel(script, profile=NATIVE)
    runtime = make_runtime(model=model, tools=[plain, *_tools(*WORDS)])
    session = await runtime.create_session()
    await session.prompt("go")
    # What the wire's top-level tool list holds: the loaded tools are defined in place.
    lists = {tuple(t.name for t in standing_tools(r)) for r in model.requests}
    assert lists == {("plain", "search_tools")}
    added = [n for u in updates(model.requests[-1]) for n in u.tools_added]
    assert added == ["alpha_gadget", "bravo_gadget"]  # each once, though alpha was found twice
    assert "Already loaded: alpha_gadget." in _results(model.requests[2])[-1]
    assert _results(model.requests[3])[-1] == "alpha ran"


async def test_on_the_anthropic_wire_a_found_tool_is_a_tool_addition(make_runtime: Make) -> None:
    model = ags.ScriptedModel([search("alpha"), "done"], profile=NATIVE)
    runtime = make_runtime(model=model, tools=[plain, *_tools(*WORDS)])
    session = await runtime.create_session()
    await session.prompt("go")
    body = ags.lower(model.requests[1], "anthropic-messages", profile=NATIVE)
    assert [t["name"] for t in body["tools"]] == ["plain", "search_tools"]
    added = [
        block["tool"]["definition"]["name"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_addition"
    ]
    assert added == ["alpha_gadget"]


async def test_without_in_place_changes_a_load_starts_the_next_epoch(make_runtime: Make) -> None:
    model = ags.ScriptedModel([search("alpha"), call("alpha_gadget"), "done"], profile=RESPONSES)
    runtime = make_runtime(model=model, tools=_tools(*WORDS))
    session = await runtime.create_session()
    await session.prompt("go")
    assert tool_names(model.requests[1]) == ["search_tools", "alpha_gadget"]
    assert _results(model.requests[2])[-1] == "alpha ran"


async def test_a_reopened_session_keeps_its_loaded_tools(make_runtime: Make) -> None:
    first = make_runtime([search("charlie"), "found"], tools=_tools(*WORDS))
    session = await first.create_session()
    await session.prompt("find")
    await first.close()
    model = ags.ScriptedModel([call("charlie_gadget", text="y"), "done"])
    second = make_runtime(model=model, tools=_tools(*WORDS))
    reopened = await second.open_session(session.id)
    await reopened.prompt("use it")
    assert "charlie_gadget" in tool_names(model.requests[0])
    assert _results(model.requests[1])[-1] == "charlie ran y"


async def test_a_query_that_matches_nothing_says_so(make_runtime: Make) -> None:
    model = ags.ScriptedModel([search("zeppelin"), "done"])
    runtime = make_runtime(model=model, tools=_tools(*WORDS))
    session = await runtime.create_session()
    await session.prompt("go")
    [text] = _results(model.requests[1])
    assert text.startswith("No tools match 'zeppelin'")
    assert tool_names(model.requests[1]) == ["search_tools"]
    assert not [r.entry for r in await session.log() if isinstance(r.entry, ToolLoaded)]


async def test_a_bad_search_call_gets_an_error_result(make_runtime: Make) -> None:
    model = ags.ScriptedModel([call("search_tools", q=1), "done"])
    runtime = make_runtime(model=model, tools=_tools(*WORDS))
    session = await runtime.create_session()
    await session.prompt("go")
    [result] = tool_results(model.requests[1])
    assert result.is_error and "Invalid arguments for tool search_tools" in str(result.content)


async def test_a_found_tool_is_permission_checked(make_runtime: Make) -> None:
    writer = ags.tool(
        name="write_gadget", description="Writes the gear.", effect="write", defer=True
    )(_runner("write"))
    model = ags.ScriptedModel([search("write_gadget"), call("write_gadget"), "done"])
    config = _config(permission_preset="read-only")
    runtime = make_runtime(model=model, tools=[writer], config=config)
    session = await runtime.create_session()
    await session.prompt("go")
    [result] = tool_results(model.requests[2])[-1:]
    assert result.is_error and "read-only" in str(result.content)


def test_the_decorator_keeps_defer_and_max_loaded_tools_is_checked() -> None:
    assert _tools("alpha")[0].defer and not plain.defer
    with pytest.raises(ags.UsageError, match="max_loaded_tools"):
        ags.Config(max_loaded_tools=0)


def test_an_mcp_server_defers_as_declared() -> None:
    always = ags.MCPServer.stdio("s", "server", defer_tools=True)
    auto = ags.MCPServer.http("h", "https://example.test/mcp", defer_tools="auto")
    never = ags.MCPServer.stdio("n", "server")
    assert always.defers(1) and not never.defers(1000)
    assert not auto.defers(20) and auto.defers(21)
    with pytest.raises(ags.UsageError, match="defer_tools"):
        ags.MCPServer.stdio("bad", "server", defer_tools="sometimes")  # type: ignore[arg-type]


def test_an_mcp_json_file_may_defer_a_servers_tools() -> None:
    document = {
        "mcpServers": {
            "big": {"command": "server", "deferTools": "auto"},
            "small": {"url": "https://example.test/mcp"},
        }
    }
    big, small = parse_mcp_config(document, "a file", {})
    assert big.defer_tools == "auto" and small.defer_tools is False
    with pytest.raises(ags.UsageError, match="defer_tools"):
        parse_mcp_config({"mcpServers": {"x": {"command": "s", "deferTools": 1}}}, "f", {})
