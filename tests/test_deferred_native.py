"""Deferred tools through a provider's own tool search (issue 39).

On OpenAI Responses models with tool search the ``search_tools`` proxy lowers to the API's
client-executed ``tool_search`` tool: the model's search is a ``tool_search_call`` replayed as it
came, its result a ``tool_search_output`` carrying the tools the search loaded, and the top-level
tool list stays the same for the whole epoch. On Claude models the proxy's result references the
tools it loaded (``tool_reference``), declared with ``defer_loading`` after the cached tools.
Spec 003's rules hold on these paths too: a tool loaded in a step is callable in the next, an
evicted one answers ``Unknown tool``, nothing is announced twice. One test runs a session
through the official SDK against the benchmarks' provider simulator.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.errors import RequestValidationError
from agentsession.inspection.report import render_report
from agentsession.log import ToolLoaded, ToolResultEntry, ToolUnloaded
from agentsession.providers.profiles import openai_tool_search, profile_for
from agentsession.providers.validate import validate_anthropic, validate_openai_responses
from agentsession.request import SystemMessage

from .benchmark_modules import load_benchmarks
from .conftest import MakeRuntime
from .skills.sessions import call, tool_results

SEARCHING = profile_for("openai", "gpt-5.6-terra")
WORDS = ("alpha", "bravo", "charlie")


def _tools(*words: str) -> list[ags.Tool]:
    def runner(word: str) -> Any:
        def run(text: str = "") -> str:
            return f"{word} ran {text}".strip()

        return run

    return [
        ags.tool(name=f"{w}_gadget", description=f"Works the {w} gear.", defer=True)(runner(w))
        for w in words
    ]


@ags.tool
def plain() -> str:
    """A tool that is always offered."""
    return "plain ran"


def _body(request: ags.Request) -> dict[str, Any]:
    return ags.lower(request, "openai-responses", profile=SEARCHING)


def _loaded_by_outputs(body: dict[str, Any]) -> list[str]:
    return [
        tool["name"]
        for item in body["input"]
        if item.get("type") == "tool_search_output"
        for tool in item["tools"]
    ]


def test_tool_search_is_a_capability_of_recent_responses_models() -> None:
    assert openai_tool_search("gpt-5.4") and openai_tool_search("gpt-6")
    assert not openai_tool_search("gpt-5.3") and not openai_tool_search("gpt-4.1")
    assert SEARCHING.native_tool_search and SEARCHING.native_tool_changes
    chat = profile_for("openai", "gpt-5.6-terra", wire_format="openai-chat")
    assert not chat.native_tool_search and not chat.native_tool_changes
    assert not profile_for("openai", "gpt-5.2").native_tool_search


async def test_a_search_is_a_tool_search_call_and_its_tools_come_in_its_output(
    make_runtime: MakeRuntime,
) -> None:
    script: list[Any] = [call("search_tools", query="alpha"), call("alpha_gadget"), "done"]
    model = ags.ScriptedModel(script, profile=SEARCHING)
    runtime = make_runtime(model=model, tools=[plain, *_tools(*WORDS)])
    session = await runtime.create_session()
    await session.prompt("go")
    bodies = [_body(r) for r in model.requests]
    tool_lists = [body["tools"] for body in bodies]
    assert all(tools == tool_lists[0] for tools in tool_lists)  # the prefix never changes
    assert [t["type"] for t in tool_lists[0]] == ["function", "tool_search"]
    assert tool_lists[0][1]["execution"] == "client"
    assert tool_lists[0][1]["parameters"]["required"] == ["query"]
    second = bodies[1]["input"]
    kinds = [item.get("type") for item in second]
    assert kinds[-2:] == ["tool_search_call", "tool_search_output"]
    assert second[-2]["call_id"] == second[-1]["call_id"]
    assert second[-2]["arguments"] == {"query": "alpha"}
    assert [t["name"] for t in second[-1]["tools"]] == ["alpha_gadget"]
    assert second[-1]["tools"][0]["parameters"]["type"] == "object"
    # The call of the found tool, in the step after the search, ran.
    assert str(tool_results(model.requests[2])[-1].content) == "alpha ran"
    for body in bodies:
        validate_openai_responses(body, SEARCHING)
    log = [r.entry for r in await session.log()]
    assert [e.name for e in log if isinstance(e, ToolLoaded)] == ["alpha_gadget"]


async def test_on_the_native_path_an_evicted_tool_is_unknown_and_nothing_is_announced_twice(
    make_runtime: MakeRuntime,
) -> None:
    script: list[Any] = [
        call("search_tools", query="alpha"),
        call("search_tools", query="alpha"),  # found again: no second announcement
        call("search_tools", query="bravo"),
        call("search_tools", query="charlie"),  # evicts alpha (two may be loaded)
        call("alpha_gadget"),
        call("search_tools", query="alpha"),  # found again after its eviction: announced anew
        call("alpha_gadget"),
        "done",
    ]
    model = ags.ScriptedModel(script, profile=SEARCHING)
    config = ags.Config(retry_base_delay=0, max_loaded_tools=2)
    runtime = make_runtime(model=model, tools=_tools(*WORDS), config=config)
    session = await runtime.create_session()
    await session.prompt("go")
    results = [str(r.content) for r in tool_results(model.requests[-1])]
    assert results[4] == "Unknown tool: alpha_gadget"
    assert results[6] == "alpha ran"
    last = _body(model.requests[-1])
    again = ["alpha_gadget", "bravo_gadget", "charlie_gadget", "alpha_gadget"]
    assert _loaded_by_outputs(last) == again
    outputs = [i for i in last["input"] if i.get("type") == "tool_search_output"]
    assert [len(o["tools"]) for o in outputs] == [1, 0, 1, 1, 1]
    assert {tuple(str(t) for t in _body(r)["tools"]) for r in model.requests} == {
        tuple(str(t) for t in last["tools"])
    }
    log = [r.entry for r in await session.log()]
    assert [e.name for e in log if isinstance(e, ToolUnloaded)] == ["alpha_gadget", "bravo_gadget"]


def test_a_tool_search_call_without_its_output_is_refused() -> None:
    body = {
        "input": [
            {"type": "message", "role": "user", "content": "go"},
            {
                "type": "tool_search_call",
                "call_id": "c1",
                "execution": "client",
                "arguments": {"query": "x"},
                "status": "completed",
            },
            {"type": "message", "role": "user", "content": "again"},
        ]
    }
    with pytest.raises(RequestValidationError, match="c1"):
        validate_openai_responses(body, SEARCHING)


@pytest.fixture(scope="module")
def sim() -> ModuleType:
    pytest.importorskip("openai")
    return load_benchmarks("provider_sim")


async def test_over_the_sdk_the_search_call_is_replayed_as_sent_and_its_tools_load(
    sim: ModuleType, tmp_path: Path
) -> None:
    from datetime import datetime

    reply = sim.Reply
    steps = [
        reply(tool="search_tools", arguments={"query": "bravo_gadget"}),
        reply(tool="bravo_gadget", arguments={"text": "now"}),
        reply(text="done"),
    ]

    def policy(shape: str, text: str, tool_turn: bool) -> Any:
        return steps.pop(0) if steps else reply(text="ok")

    bodies: list[dict[str, Any]] = []

    class Recording(sim.Simulator):  # type: ignore[name-defined,misc]
        def openai(self, shape: str, body: dict[str, Any]) -> dict[str, Any]:
            bodies.append(body)
            answer: dict[str, Any] = super().openai(shape, body)
            answers.append(answer)
            return answer

    answers: list[dict[str, Any]] = []
    moment = datetime(2026, 3, 1, 9, 0).astimezone()
    simulator = Recording(policy, {}, lambda: moment)
    simulator.bill = lambda *args: None
    with sim.running(simulator) as url:
        model = ags.get_model("openai:gpt-5.6-terra", base_url=f"{url}/v1", api_key="sim")
        runtime = ags.Runtime(
            store=ags.SQLiteStore(tmp_path / "s.db"),
            model=model,
            project_dir=tmp_path,
            tools=[plain, *_tools(*WORDS)],
            config=ags.Config(titles=False),
        )
        async with runtime:
            session = await runtime.create_session()
            await session.prompt("go")
            log = [r.entry for r in await session.log()]
        # Reopened from the stored log, the session sends the search call as it came.
        again = ags.Runtime(
            store=ags.SQLiteStore(tmp_path / "s.db"),
            model=ags.get_model("openai:gpt-5.6-terra", base_url=f"{url}/v1", api_key="sim"),
            project_dir=tmp_path,
            tools=[plain, *_tools(*WORDS)],
            config=ags.Config(titles=False),
        )
        async with again:
            await (await again.open_session(session.id)).prompt("more")
    sent = answers[0]["output"][0]
    assert sent in bodies[-1]["input"]
    assert sent["type"] == "tool_search_call"
    assert sent in bodies[1]["input"]  # the item as the provider sent it, id and all
    assert bodies[2]["input"][: len(bodies[1]["input"])] == bodies[1]["input"]
    assert [e.name for e in log if isinstance(e, ToolLoaded)] == ["bravo_gadget"]
    ran = [e for e in log if isinstance(e, ToolResultEntry) and e.name == "bravo_gadget"]
    assert [str(e.content) for e in ran] == ["bravo ran now"]
    assert all(body["tools"] == bodies[0]["tools"] for body in bodies)


async def test_inspection_shows_the_tools_found_loaded_and_evicted_per_request(
    make_runtime: MakeRuntime,
) -> None:
    script: list[Any] = [
        call("search_tools", query="alpha"),
        call("search_tools", query="bravo"),
        call("search_tools", query="charlie"),  # evicts alpha
        "done",
    ]
    model = ags.ScriptedModel(script, profile=SEARCHING)
    config = ags.Config(retry_base_delay=0, max_loaded_tools=2, titles=False)
    runtime = make_runtime(model=model, tools=_tools(*WORDS), config=config)
    session = await runtime.create_session()
    await session.prompt("go")
    inspection = await session.inspect()
    requests = inspection.requests
    shown = [(r.tools_found, r.tools_loaded, r.tools_evicted) for r in requests]
    assert shown == [
        ((), (), ()),
        (("alpha_gadget",), ("alpha_gadget",), ()),
        (("bravo_gadget",), ("alpha_gadget", "bravo_gadget"), ()),
        (("charlie_gadget",), ("bravo_gadget", "charlie_gadget"), ("alpha_gadget",)),
    ]
    page = render_report(inspection, generated="now", version="test")
    assert "deferred tools" in page
    assert (
        "found charlie_gadget · evicted alpha_gadget · loaded bravo_gadget, charlie_gadget" in page
    )


async def test_on_the_native_path_a_found_tool_is_permission_checked(
    make_runtime: MakeRuntime,
) -> None:
    def write(text: str = "") -> str:
        return "wrote"

    writer = ags.tool(
        name="write_gadget", description="Writes the gear.", effect="write", defer=True
    )(write)
    script: list[Any] = [call("search_tools", query="write_gadget"), call("write_gadget"), "done"]
    model = ags.ScriptedModel(script, profile=SEARCHING)
    config = ags.Config(retry_base_delay=0, permission_preset="read-only")
    runtime = make_runtime(model=model, tools=[writer], config=config)
    session = await runtime.create_session()
    await session.prompt("go")
    [result] = tool_results(model.requests[2])[-1:]
    assert result.is_error and "read-only" in str(result.content)
    body = _body(model.requests[2])
    assert _loaded_by_outputs(body) == ["write_gadget"]


def test_tools_added_without_a_search_come_in_an_additional_tools_item() -> None:
    spec = ags.ToolSpec("skill_tool", "A skill's tool.", {"type": "object", "properties": {}})
    request = ags.Request(
        system=(("core.agent", "Be brief."),),
        messages=(
            ags.UserMessage("hi"),
            ags.AssistantMessage("hello"),
            ags.UserMessage("load the skill"),
            SystemMessage("", tools_added=("skill_tool",)),
        ),
        tools=(spec,),
    )
    body = _body(request)
    assert "tools" not in body  # defined where it joins, not at the top
    assert body["input"][-1] == {
        "type": "additional_tools",
        "role": "developer",
        "tools": [
            {
                "type": "function",
                "name": "skill_tool",
                "description": "A skill's tool.",
                "parameters": {"type": "object", "properties": {}},
                "strict": False,
            }
        ],
    }
    validate_openai_responses(body, SEARCHING)


CLAUDE = profile_for("anthropic", "claude-opus-4-8")


async def test_on_anthropic_a_search_result_references_the_tools_it_loaded(
    make_runtime: MakeRuntime,
) -> None:
    script: list[Any] = [
        call("search_tools", query="alpha"),
        call("search_tools", query="bravo"),
        call("search_tools", query="charlie"),  # evicts alpha (two may be loaded)
        call("alpha_gadget"),
        call("charlie_gadget"),
        "done",
    ]
    model = ags.ScriptedModel(script, profile=CLAUDE)
    config = ags.Config(retry_base_delay=0, max_loaded_tools=2)
    runtime = make_runtime(model=model, tools=[plain, *_tools(*WORDS)], config=config)
    session = await runtime.create_session()
    await session.prompt("go")
    assert CLAUDE.native_tool_search
    bodies = [ags.lower(r, "anthropic-messages", profile=CLAUDE) for r in model.requests]
    standing = [[t for t in b["tools"] if not t.get("defer_loading")] for b in bodies]
    assert all(tools == standing[0] for tools in standing)  # the cached prefix's tools
    assert [t["name"] for t in standing[0]] == ["plain", "search_tools"]
    last = bodies[-1]
    deferred = [t["name"] for t in last["tools"] if t.get("defer_loading")]
    assert deferred == ["alpha_gadget", "bravo_gadget", "charlie_gadget"]
    blocks = [b for m in last["messages"] if isinstance(m["content"], list) for b in m["content"]]
    references = [
        [p["tool_name"] for p in b.get("content", []) if p.get("type") == "tool_reference"]
        for b in blocks
        if b.get("type") == "tool_result"
    ]
    assert references[:3] == [["alpha_gadget"], ["bravo_gadget"], ["charlie_gadget"]]
    additions = [b for b in blocks if b.get("type") == "tool_addition"]
    assert additions == []  # each found tool announced once: by its search's reference
    removals = [b["tool"]["name"] for b in blocks if b.get("type") == "tool_removal"]
    assert removals == ["alpha_gadget"]
    results = [str(r.content) for r in tool_results(model.requests[-1])]
    assert results[3:] == ["Unknown tool: alpha_gadget", "charlie ran"]
    for body in bodies:
        validate_anthropic(body, CLAUDE)


Step = tuple[str, str]


def _fresh_loads(steps: list[Step], limit: int) -> tuple[list[bool], int]:
    """Whether each call finds its tool loaded, and how many searches loaded a tool anew."""
    recency: list[str] = []
    outcomes: list[bool] = []
    fresh = 0
    for action, word in steps:
        if action == "call":
            outcomes.append(word in recency)
            continue
        if word in recency:
            recency.remove(word)
        else:
            fresh += 1
        recency.append(word)
        del recency[: max(0, len(recency) - limit)]
    return outcomes, fresh


def _announced(body: dict[str, Any], fmt: str) -> list[str]:
    if fmt == "openai-responses":
        return _loaded_by_outputs(body)
    return [
        part["tool_name"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
        for part in block.get("content", [])
        if part.get("type") == "tool_reference"
    ]


async def _native_session(steps: list[Step], limit: int, profile: ags.ModelProfile) -> None:
    fmt = profile.wire_format
    replies: list[Any] = [
        call("search_tools", query=f"{w}_gadget") if a == "search" else call(f"{w}_gadget")
        for a, w in steps
    ]
    model = ags.ScriptedModel([*replies, "done"], profile=profile)
    config = ags.Config(max_loaded_tools=limit, titles=False, retry_base_delay=0)
    async with ags.Runtime(
        store=ags.MemoryStore(), model=model, tools=_tools(*WORDS), config=config
    ) as runtime:
        await (await runtime.create_session()).prompt("go")
    bodies = [ags.lower(r, fmt, profile=profile) for r in model.requests]
    firsts = [[t for t in b.get("tools", []) if not t.get("defer_loading")] for b in bodies]
    assert all(tools == firsts[0] for tools in firsts)  # the cached tools never change
    outcomes, fresh = _fresh_loads(steps, limit)
    assert len(_announced(bodies[-1], fmt)) == fresh  # each load announced once, where found
    results = [
        m
        for m in model.requests[-1].messages
        if isinstance(m, ags.ToolResultMessage) and m.name != "search_tools"
    ]
    calls = [w for a, w in steps if a == "call"]
    for result, succeeds, word in zip(results, outcomes, calls, strict=True):
        expected = "{0} ran" if succeeds else "Unknown tool: {0}_gadget"
        assert result.content == expected.format(word) and result.is_error is not succeeds


@settings(max_examples=20, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["search", "call"]), st.sampled_from(WORDS)),
        min_size=1,
        max_size=10,
    ),
    st.integers(min_value=1, max_value=3),
    st.sampled_from(["openai", "anthropic"]),
)
def test_on_native_tool_search_a_call_succeeds_iff_loaded_and_each_load_is_announced_once(
    steps: list[Step], limit: int, provider: str
) -> None:
    profile = SEARCHING if provider == "openai" else CLAUDE
    asyncio.run(_native_session(steps, limit, profile))
