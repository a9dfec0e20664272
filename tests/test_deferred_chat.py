"""Deferred tools on Chat Completions: a stable ``tools`` list, loaded tools through ``call_tool``.

Chat Completions has neither tool search nor an in-place tool change, and its ``tools`` list
leads the cached prefix. There the request offers ``search_tools`` and ``call_tool`` and never
the loaded tools themselves; a search's result gives the found tools' declarations, and
``call_tool(name, arguments)`` runs a loaded tool exactly as a direct call would (the same gate,
approvals and argument check), else answers ``Unknown tool: <name>``. One test runs a session
through the official OpenAI SDK against the benchmarks' provider simulator.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.engine.deferred import proxied
from agentsession.inspection.toolview import call_line
from agentsession.log import ApprovalRequested, ToolLoaded, ToolResultEntry, ToolUnloaded
from agentsession.providers.profiles import profile_for
from agentsession.providers.validate import validate_gemini

from .benchmark_modules import load_benchmarks
from .conftest import MakeRuntime
from .skills.sessions import NATIVE, RESPONSES, call, tool_names, tool_results
from .test_deferred_properties import TOOLS as ANIMALS
from .test_deferred_properties import WORDS as ANIMAL_WORDS
from .test_deferred_properties import Step, _expected

CHAT = profile_for("openai", "gpt-5.6-terra", wire_format="openai-chat")
WORDS = ("alpha", "bravo", "charlie")


def _runner(word: str) -> Any:
    def run(text: str = "") -> str:
        return f"{word} ran {text}".strip()

    return run


def _tools(*words: str) -> list[ags.Tool]:
    return [
        ags.tool(name=f"{w}_gadget", description=f"Works the {w} gear.", defer=True)(_runner(w))
        for w in words
    ]


def _writer(effect: Literal["write", "execute"]) -> ags.Tool:
    def write(text: str = "") -> str:
        return f"wrote {text}".strip()

    return ags.tool(name="write_gadget", description="Writes the gear.", effect=effect, defer=True)(
        write
    )


@ags.tool
def plain() -> str:
    """A tool that is always offered."""
    return "plain ran"


def proxy(name: str, **arguments: Any) -> list[ags.ToolCall]:
    return call("call_tool", name=name, arguments=arguments)


def test_only_formats_without_tool_search_or_in_place_changes_are_proxied() -> None:
    assert proxied(CHAT)
    assert proxied(profile_for("gemini", "gemini-2.5-pro"))
    assert proxied(profile_for("openai-compatible", "llama"))
    assert not proxied(profile_for("openai", "gpt-5.6-terra"))  # native tool search
    assert not proxied(profile_for("anthropic", "claude-opus-4-8"))
    assert not proxied(NATIVE) and not proxied(RESPONSES)
    assert not proxied(ags.ScriptedModel().profile)


async def test_on_chat_the_tool_list_stays_and_a_loaded_tool_runs_through_call_tool(
    make_runtime: MakeRuntime,
) -> None:
    script: list[Any] = [
        call("search_tools", query="alpha_gadget"),
        proxy("alpha_gadget", text="x"),
        call("alpha_gadget", text="direct"),  # not offered here: only through call_tool
        proxy("alpha_gadget", text=5),  # checked against the inner tool's schema
        "done",
    ]
    model = ags.ScriptedModel(script, profile=CHAT)
    runtime = make_runtime(model=model, tools=[plain, *_tools(*WORDS)])
    session = await runtime.create_session()
    await session.prompt("go")
    assert all(tool_names(r) == ["plain", "search_tools", "call_tool"] for r in model.requests)
    found = str(tool_results(model.requests[1])[-1].content)
    declared = [json.loads(line) for line in found.splitlines() if line.startswith("{")]
    assert declared == [
        {
            "name": "alpha_gadget",
            "description": "Works the alpha gear.",
            "parameters": _tools("alpha")[0].parameters,
        }
    ]
    results = [(str(r.content), r.is_error) for r in tool_results(model.requests[4])]
    assert results[1:3] == [("alpha ran x", False), ("Unknown tool: alpha_gadget", True)]
    assert results[3][1] and "text" in results[3][0]
    # Shown as the inner tool's call.
    assert call_line("call_tool", {"name": "alpha_gadget", "arguments": {"text": "x"}}) == (
        'alpha_gadget {"text": "x"}'
    )


async def test_on_gemini_the_function_declarations_stay_across_a_load_and_an_eviction(
    make_runtime: MakeRuntime,
) -> None:
    gemini = profile_for("gemini", "gemini-2.5-pro")
    script: list[Any] = [
        call("search_tools", query="alpha_gadget"),
        call("search_tools", query="bravo_gadget"),  # evicts alpha
        proxy("bravo_gadget", text="b"),
        proxy("alpha_gadget"),
        "done",
    ]
    model = ags.ScriptedModel(script, profile=gemini)
    config = ags.Config(retry_base_delay=0, max_loaded_tools=1)
    runtime = make_runtime(model=model, tools=_tools(*WORDS), config=config)
    session = await runtime.create_session()
    await session.prompt("go")
    bodies = [ags.lower(r, "gemini", profile=gemini) for r in model.requests]
    for body in bodies:
        validate_gemini(body, gemini)
    assert all(b["config"]["tools"] == bodies[0]["config"]["tools"] for b in bodies)
    results = [(str(r.content), r.is_error) for r in tool_results(model.requests[-1])]
    assert results[-2:] == [("bravo ran b", False), ("Unknown tool: alpha_gadget", True)]


async def test_on_chat_an_inner_tool_that_asks_pauses_under_its_own_name(
    make_runtime: MakeRuntime,
) -> None:
    runner = _writer("execute")  # the default preset asks before executing
    script: list[Any] = [
        call("search_tools", query="write_gadget"),
        proxy("write_gadget", text="y"),
        "done",
    ]
    model = ags.ScriptedModel(script, profile=CHAT)
    runtime = make_runtime(model=model, tools=[runner])
    session = await runtime.create_session()
    result = await session.prompt("go")
    assert result.stop_reason == "approval_required"
    [asked] = result.approvals
    assert (asked.name, asked.arguments) == ("write_gadget", {"text": "y"})
    assert session.pending_approvals() == [asked]
    stored = [r.entry for r in await session.log() if isinstance(r.entry, ApprovalRequested)]
    assert [e.name for e in stored] == ["write_gadget"]
    await session.approve(asked.call_id)
    await session.retry()
    results = [(str(r.content), r.is_error) for r in tool_results(model.requests[-1])]
    assert results[-1] == ("wrote y", False)


async def _check_proxied(steps: list[Step], limit: int, folder: Path) -> None:
    store = ags.SQLiteStore(folder / "sessions.db")
    config = ags.Config(max_loaded_tools=limit, titles=False, retry_base_delay=0)
    replies: list[Any] = [
        call("search_tools", query=word) if action == "search" else proxy(f"{word}_gadget")
        for action, word in steps
    ]
    model = ags.ScriptedModel([*replies, "done"], profile=CHAT)
    async with ags.Runtime(store=store, model=model, tools=ANIMALS, config=config) as runtime:
        session = await runtime.create_session()
        await session.prompt("go")
    assert all(tool_names(r) == ["search_tools", "call_tool"] for r in model.requests)
    results = [r for r in tool_results(model.requests[-1]) if r.name == "call_tool"]
    outcomes, order = _expected(steps, limit)
    called = [word for action, word in steps if action == "call"]
    for result, succeeds, word in zip(results, outcomes, called, strict=True):
        if succeeds:
            assert (result.content, result.is_error) == (f"{word} ran", False)
        else:
            assert (result.content, result.is_error) == (f"Unknown tool: {word}_gadget", True)
    # Reopened, the same tools are loaded: each runs through call_tool, every other is unknown.
    again = ags.ScriptedModel(
        [[c for w in ANIMAL_WORDS for c in proxy(f"{w}_gadget")], "ok"], profile=CHAT
    )
    store = ags.SQLiteStore(folder / "sessions.db")
    async with ags.Runtime(store=store, model=again, tools=ANIMALS, config=config) as other:
        await (await other.open_session(session.id)).prompt("reopened")
    ran = [r.is_error for r in tool_results(again.requests[-1])[-len(ANIMAL_WORDS) :]]
    assert ran == [w not in order for w in ANIMAL_WORDS]


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["search", "call"]), st.sampled_from(ANIMAL_WORDS)),
        min_size=1,
        max_size=12,
    ),
    st.integers(min_value=1, max_value=4),
)
def test_through_call_tool_a_call_succeeds_iff_its_tool_is_loaded(
    steps: list[Step], limit: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_check_proxied(steps, limit, Path(folder)))


@pytest.fixture(scope="module")
def sim() -> ModuleType:
    pytest.importorskip("openai")
    return load_benchmarks("provider_sim")


async def test_over_the_chat_sdk_loads_and_evictions_keep_the_tools_array(
    sim: ModuleType, tmp_path: Path
) -> None:
    reply = sim.Reply

    def via(name: str, **arguments: Any) -> Any:
        return reply(tool="call_tool", arguments={"name": name, "arguments": arguments})

    steps = [
        via("bravo_gadget"),  # never found: not loaded
        reply(tool="search_tools", arguments={"query": "alpha_gadget"}),
        via("alpha_gadget", text="a"),
        reply(tool="search_tools", arguments={"query": "bravo_gadget"}),
        reply(tool="search_tools", arguments={"query": "write_gadget"}),  # evicts alpha
        via("alpha_gadget", text="again"),  # evicted: unknown
        via("write_gadget", text="w"),  # denied by the read-only preset
        via("bravo_gadget", text="b"),
        reply(text="done"),
    ]

    def policy(shape: str, text: str, tool_turn: bool) -> Any:
        return steps.pop(0) if steps else reply(text="ok")

    bodies: list[dict[str, Any]] = []

    class Recording(sim.Simulator):  # type: ignore[name-defined,misc]
        def openai(self, shape: str, body: dict[str, Any]) -> dict[str, Any]:
            bodies.append(body)
            answer: dict[str, Any] = super().openai(shape, body)
            return answer

    moment = datetime(2026, 3, 1, 9, 0).astimezone()
    simulator = Recording(policy, {}, lambda: moment)
    simulator.bill = lambda *args: None
    with sim.running(simulator) as url:
        model = ags.get_model("openai-chat:gpt-5.6-terra", base_url=f"{url}/v1", api_key="sim")
        runtime = ags.Runtime(
            store=ags.SQLiteStore(tmp_path / "s.db"),
            model=model,
            project_dir=tmp_path,
            tools=[plain, *_tools(*WORDS), _writer("write")],
            config=ags.Config(titles=False, max_loaded_tools=2, permission_preset="read-only"),
        )
        async with runtime:
            session = await runtime.create_session()
            await session.prompt("go")
            log = [r.entry for r in await session.log()]
    assert len(bodies) == 9
    names = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert names == ["plain", "search_tools", "call_tool"]
    assert all(body["tools"] == bodies[0]["tools"] for body in bodies)
    assert [e.name for e in log if isinstance(e, ToolLoaded)] == [
        "alpha_gadget",
        "bravo_gadget",
        "write_gadget",
    ]
    assert [e.name for e in log if isinstance(e, ToolUnloaded)] == ["alpha_gadget"]
    results = [
        (str(e.content), e.is_error)
        for e in log
        if isinstance(e, ToolResultEntry) and e.name == "call_tool"
    ]
    assert results[0] == ("Unknown tool: bravo_gadget", True)
    assert results[1] == ("alpha ran a", False)
    assert results[2] == ("Unknown tool: alpha_gadget", True)
    assert results[3][1] and "read-only" in results[3][0]
    assert results[4] == ("bravo ran b", False)
    # The denied tool never ran, and what the provider got says so.
    told = [m["content"] for m in bodies[-1]["messages"] if m.get("role") == "tool"]
    assert any("read-only" in str(t) for t in told)
