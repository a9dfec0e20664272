"""A step's response and tool path: the context a call gets, argument checks, the scripted model.

Real sessions on a real SQLite file; the tools are plain functions. The toolbox builds a
``ToolContext`` only for a call that is handed one, so these tests hold what a call sees and what
gets stored to the same answers either way.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.engine.model_call import session_cache_key
from agentsession.engine.parts import InstructionTracker
from agentsession.instructions import InstructionService
from agentsession.log import InstructionsFound, ToolResultEntry
from agentsession.permissions import BUILTIN_PRESETS, decide
from agentsession.providers.base import ModelDone
from agentsession.providers.cache_controls import cache_key_for
from agentsession.request import AssistantMessage, Request, ToolCall, UserMessage
from agentsession.tools import validate_arguments

from .conftest import MakeRuntime

Make = MakeRuntime


async def test_a_context_tool_sees_the_resolved_project_and_a_plain_tool_runs_without_one(
    make_runtime: Make, tmp_path: Path
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "pkg").mkdir()
    (real / "pkg" / "AGENTS.md").write_text("Nested rules.\n")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    seen: list[ags.ToolContext] = []

    @ags.tool
    def where(ctx: ags.ToolContext) -> str:
        """Say where the project is, and read below it."""
        seen.append(ctx)
        ctx.note_read("pkg/file.py")
        return str(ctx.project_dir)

    @ags.tool
    def double(n: int) -> int:
        """Double a number."""
        return 2 * n

    replies = [
        [ags.ToolCall("double", {"n": 21}, "c1")],
        [ags.ToolCall("double", {"n": "x"}, "c2")],
        [ags.ToolCall("where", {}, "c3")],
        "done",
    ]
    runtime = make_runtime(replies, project_dir=link, tools=[where, double])
    session = await runtime.create_session()
    await session.prompt("go")
    entries = [r.entry for r in await session.log()]
    results = {e.call_id: e for e in entries if isinstance(e, ToolResultEntry)}
    assert (results["c1"].content, results["c1"].is_error) == ("42", False)
    assert results["c2"].is_error
    assert results["c2"].content == (
        "Invalid arguments for tool double: n must be of type integer, got str"
    )
    assert results["c3"].content == str(real.resolve())
    assert [c.call_id for c in seen] == ["c3"] and seen[0].project_dir == real.resolve()
    found = [e for e in entries if isinstance(e, InstructionsFound)]
    assert [(f.call_id, f.paths) for f in found] == [("c3", ("pkg/AGENTS.md",))]


def test_a_call_without_a_context_reports_no_reads(tmp_path: Path) -> None:
    tracker = InstructionTracker(InstructionService(tmp_path))
    assert tracker.observe(ToolCall("t", {}, "c"), None) == []


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "f": {"type": "number"},
        "b": {"type": "boolean"},
        "z": {"type": "null"},
        "a": {"type": "array", "items": {"type": "integer"}},
        "o": {"type": "object"},
        "u": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["s"],
    "additionalProperties": False,
}
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.lists(st.one_of(st.integers(-5, 5), st.booleans()), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


def expected_type_problem(key: str, value: Any) -> bool:
    kind = SCHEMA["properties"][key].get("type")
    fits = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "null": value is None,
        "array": isinstance(value, list)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value),
        "object": isinstance(value, dict),
        None: isinstance(value, str) or value is None,
    }
    return not fits[kind]


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(SCHEMA["properties"])), values, max_size=4))
def test_argument_checks_accept_exactly_the_values_of_each_type(arguments: dict[str, Any]) -> None:
    problem = validate_arguments(SCHEMA, arguments)
    if "s" not in arguments:
        assert problem == "missing required s"
        return
    wrong = [
        k for k in SCHEMA["properties"] if k in arguments and expected_type_problem(k, arguments[k])
    ]
    assert (problem is None) == (not wrong)


@dataclass(frozen=True)
class TaggedMessage(AssistantMessage):
    tag: str = "t"


async def played(reply: Any) -> AssistantMessage:
    model = ags.ScriptedModel([reply])
    events = [e async for e in model.stream(Request((), (UserMessage("hi"),), ()))]
    done = events[-1]
    assert isinstance(done, ModelDone)
    return done.message


@pytest.mark.parametrize("kind", [AssistantMessage, TaggedMessage])
def test_the_scripted_model_fills_call_ids_and_keeps_the_reply(
    kind: type[AssistantMessage],
) -> None:
    data = {"other": [{"x": 1}]}
    reply = kind("text", (ToolCall("a", {"k": 1}), ToolCall("b", {}, "given")), "", data)
    message = asyncio.run(played(reply))
    assert type(message) is kind
    first, second = message.tool_calls
    assert first.id.startswith("call_") and second.id == "given"
    assert replace(first, id="") == reply.tool_calls[0] and second is reply.tool_calls[1]
    expected = replace(reply, tool_calls=(first, second), provider="scripted")
    assert message == expected and message.provider_data is data
    plain = asyncio.run(played("words"))
    assert plain == AssistantMessage("words", (), "scripted")


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=40))
def test_the_kept_cache_key_is_the_one_computed_afresh(session_id: str) -> None:
    assert session_cache_key(session_id) == cache_key_for(session_id)
    assert session_cache_key(session_id) == cache_key_for(session_id)  # now from the memo


def test_a_tool_without_paths_gets_the_same_decision_for_a_path_or_its_text(
    tmp_path: Path,
) -> None:
    @ags.tool(effect="write")
    def change(n: int) -> str:
        """Change something."""
        return str(n)

    for preset in BUILTIN_PRESETS.values():
        as_path = decide(preset, change, {"n": 1}, tmp_path)
        assert as_path == decide(preset, change, {"n": 1}, str(tmp_path))
    kinds = {decide(p, change, {"n": 1}, tmp_path).kind for p in BUILTIN_PRESETS.values()}
    assert len(kinds) > 1  # the presets differ on a write: the comparison can fail
