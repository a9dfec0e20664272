"""Python skills, the shared model, ephemeral state, the durable store and skill_context()."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.errors import UsageError
from agentsession.log import SkillRevision
from agentsession.skills import (
    JSONValue,
    MemorySkillStore,
    Skill,
    SkillContext,
    SkillStore,
    StoreWrite,
    skill_context,
    text_revision,
)
from agentsession.tools import tool


@tool
def count_pages(path: str) -> int:
    """Count the pages of a PDF.

    Args:
        path: The file.
    """
    return len(path)


def test_the_design_example_builds_a_skill() -> None:
    skill = Skill(
        name="pdf", description="Work with PDFs.", instructions="Use pypdf.", tools=[count_pages]
    )
    assert skill.tools == (count_pages,)
    assert skill.source == "python" and skill.location == ""
    read = skill.read()
    assert (read.name, read.text, read.revision) == ("pdf", "Use pypdf.", skill.revision)
    assert skill.revision == text_revision("Use pypdf.")
    assert read.record == SkillRevision(name="pdf", location="", revision=skill.revision)


@pytest.mark.parametrize(
    ("kwargs", "phrase"),
    [
        ({"name": "PDF"}, "lowercase"),
        ({"name": "pdf--x"}, "consecutive"),
        ({"name": ""}, "non-empty"),
        ({"description": " "}, "description"),
        ({"description": "d" * 1025}, "1024"),
        ({"instructions": 42}, "instructions"),
        ({"tools": [lambda: 1]}, "not a tool"),
        ({"tools": count_pages}, "list of agentsession tools"),
        ({"tools": [count_pages, count_pages]}, "two tools"),
        ({"allowed_tools": ("",)}, "allowed_tools"),
        ({"state_factory": 3}, "state_factory"),
    ],
)
def test_misuse_is_a_usage_error(kwargs: dict[str, Any], phrase: str) -> None:
    values: dict[str, Any] = {"name": "pdf", "description": "Work with PDFs.", **kwargs}
    with pytest.raises(UsageError, match=phrase):
        Skill(**values)


def test_dynamic_instructions_render_from_the_context() -> None:
    def text(context: SkillContext) -> str:
        return f"Opened {context.state['opened']} files; last: {context.store.get('last')}."

    skill = Skill(
        name="pdf", description="PDFs.", instructions=text, state_factory=lambda: {"opened": 0}
    )
    assert skill.dynamic and skill.revision == ""
    context = skill.new_context()
    first = skill.read(context)
    assert first.text == "Opened 0 files; last: None."
    context.state["opened"] = 2
    context.store.set("last", "a.pdf")
    second = skill.read(context)
    assert second.text == "Opened 2 files; last: a.pdf."
    assert second.revision == text_revision(second.text) != first.revision
    with pytest.raises(UsageError, match="SkillContext"):
        skill.read()


def test_dynamic_instructions_must_return_text() -> None:
    skill = Skill(name="bad", description="Bad.", instructions=lambda c: 5)  # type: ignore[arg-type,return-value]
    with pytest.raises(UsageError, match="returned int"):
        skill.read(skill.new_context())


def test_every_load_gets_fresh_ephemeral_state_and_the_given_store() -> None:
    made: list[dict[str, int]] = []

    def factory() -> dict[str, int]:
        made.append({"n": 0})
        return made[-1]

    skill = Skill(name="counter", description="Counts.", state_factory=factory)
    store = MemorySkillStore()
    first = skill.new_context(store)
    first.state["n"] = 5
    second = skill.new_context(store)
    assert second.state == {"n": 0} and second.state is not first.state
    assert first.store is second.store is store
    assert Skill(name="plain", description="No state.").new_context().state is None


@tool
def remember(value: str) -> str:
    """Remember a value in the skill's store and count calls in its state."""
    context = skill_context()
    context.store.set("value", value)
    context.state["calls"] += 1
    return f"{context.name}:{context.state['calls']}"


@tool
async def recall() -> str:
    """Read the remembered value."""
    return str(skill_context().store.get("value", "nothing"))


async def test_sync_and_async_tools_reach_their_skill_context() -> None:
    skill = Skill(
        name="memo",
        description="Memo.",
        tools=[remember, recall],
        state_factory=lambda: {"calls": 0},
    )
    context = skill.new_context(MemorySkillStore())
    with context.bind():
        first = await remember.invoke({"value": "blue"})
        second = await remember.invoke({"value": "green"})
        recalled = await recall.invoke({})
    assert (first.content, second.content, recalled.content) == ("memo:1", "memo:2", "green")
    assert isinstance(context.store, MemorySkillStore)
    assert context.store.take_writes() == (
        StoreWrite("value", '"blue"'),
        StoreWrite("value", '"green"'),
    )
    outside = await recall.invoke({})
    assert outside.is_error and "only available inside" in outside.content


async def test_concurrent_calls_see_their_own_skill() -> None:
    one = Skill(name="one", description="One.", state_factory=lambda: {"calls": 0})
    two = Skill(name="two", description="Two.", state_factory=lambda: {"calls": 0})

    async def call(skill: Skill) -> str:
        with skill.new_context().bind():
            await asyncio.sleep(0)
            return (await remember.invoke({"value": skill.name})).content

    assert list(await asyncio.gather(call(one), call(two))) == ["one:1", "two:1"]


def test_store_values_are_json_and_copied() -> None:
    store = MemorySkillStore({"seed": [1]})
    assert isinstance(store, SkillStore)
    items = store["seed"]
    assert isinstance(items, list)
    items.append(2)
    assert store["seed"] == [1]
    given_list: list[JSONValue] = [1, 2]
    given_value: dict[str, JSONValue] = {"a": given_list}
    store.set("nested", given_value)
    given_list.append(3)
    assert store.get("nested") == {"a": [1, 2]}
    assert store.get("missing", "default") == "default"
    assert "nested" in store and len(store) == 2 and list(store) == ["seed", "nested"]
    for bad in (object(), math.nan, {1: "x"}.keys()):
        with pytest.raises(UsageError, match="not JSON"):
            store.set("bad", bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="keys"):
        store.set("", 1)
    assert [w.key for w in store.pending()] == ["nested"]


def test_deleting_records_only_real_changes() -> None:
    store = MemorySkillStore()
    store.delete("never")
    assert store.take_writes() == ()
    store.set("k", 1)
    store.delete("k")
    assert store.take_writes() == (StoreWrite("k", "1"), StoreWrite("k", "null", deleted=True))
    assert store.take_writes() == () and "k" not in store


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
operations = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.none() | json_values.map(lambda v: ("set", v))),
    max_size=30,
)


@settings(deadline=None)
@given(operations)
def test_a_store_rebuilt_from_its_writes_equals_the_live_store(ops: list[Any]) -> None:
    live = MemorySkillStore()
    writes: list[StoreWrite] = []
    for key, op in ops:
        if op is None:
            live.delete(key)
        else:
            live.set(key, op[1])
        writes.extend(live.take_writes())
    rebuilt = MemorySkillStore.from_writes(writes)
    assert dict(rebuilt) == dict(live)
    assert list(rebuilt) == list(live)
