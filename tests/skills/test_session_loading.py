"""Automatic loading through ``load_skill`` (spec 003): the LRU and the unload table.

Sessions run on SQLite with Python skills that carry tools; most run on a profile with native
tool changes so that each load and unload is visible as one update message of the request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import agentsession as ags
from agentsession.log import SkillActivated, SkillLoaded, SkillStoreWrite, SkillUnloaded

from .sessions import (
    NATIVE,
    Make,
    call,
    last_update,
    load,
    system_keys,
    system_text,
    tool_names,
    tool_results,
    tool_skill,
    updates,
)

SKILLS = [tool_skill(n) for n in ("alpha", "beta", "gamma", "delta")]


def _native(replies: list[Any]) -> ags.ScriptedModel:
    return ags.ScriptedModel(replies, profile=NATIVE)


def _digest(result: ags.ToolResultMessage) -> dict[str, Any]:
    assert isinstance(result.content, str)
    record: dict[str, Any] = json.loads(result.content)["contextChanged"]
    return record


async def test_catalog_and_load_skill_are_in_the_first_request(make_runtime: Make) -> None:
    runtime = make_runtime(["hi"], skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("hello")
    [request] = runtime.scripted.requests
    catalog = system_text(request, "core.skills.catalog")
    assert catalog is not None
    for skill in SKILLS:
        assert f'<skill name="{skill.name}">{skill.description}</skill>' in catalog
    assert tool_names(request) == ["load_skill"]  # no skill is loaded yet
    enum = request.tools[0].parameters["properties"]["name"]["enum"]
    assert enum == ["alpha", "beta", "delta", "gamma"]
    assert not [k for k in system_keys(request) if k.startswith("core.skills.loaded.")]


async def test_a_load_sends_only_that_skills_instructions_and_adds_its_tools(
    make_runtime: Make,
) -> None:
    model = _native([load("alpha"), "loaded"])
    runtime = make_runtime(model=model, skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("load alpha")
    after = model.requests[1]
    update = last_update(after)
    assert update.content.count("[core.skills.") == 1
    assert '[core.skills.loaded.alpha]\n<skill name="alpha">\nUse alpha_tool' in update.content
    assert update.tools_added == ("alpha_tool",) and update.tools_removed == ()
    assert "beta" not in update.content
    [result] = tool_results(after)
    digest = _digest(result)
    assert digest["loaded"] == [
        {
            "skill": "alpha",
            "revision": SKILLS[0].revision,
            "lines": ["Use alpha_tool for alpha work.", "Report what it returned."],
        }
    ]
    assert digest["unloaded"] == [] and digest["active"] == "alpha"
    records = [r.entry for r in await session.log()]
    [loaded] = [e for e in records if isinstance(e, SkillLoaded)]
    assert (loaded.name, loaded.revision, loaded.call_id) == (
        "alpha",
        SKILLS[0].revision,
        result.call_id,
    )


async def test_a_fourth_load_unloads_the_least_recently_used(make_runtime: Make) -> None:
    model = _native(
        [load("alpha"), load("beta"), load("gamma"), load("delta"), call("alpha_tool"), "end"]
    )
    runtime = make_runtime(model=model, skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("load them all")
    after_delta = model.requests[4]
    update = last_update(after_delta)
    assert update.tools_added == ("delta_tool",)
    assert update.tools_removed == ("alpha_tool",)
    # The new skill's instructions, and one line of removal text for the unloaded one.
    sections = update.content.split("\n\n")[1:]
    assert sections[0].startswith("[core.skills.loaded.alpha]\nSkill alpha is unloaded")
    assert "\n" not in sections[0].split("\n", 1)[1]
    assert sections[1].startswith('[core.skills.loaded.delta]\n<skill name="delta">')
    assert len(sections) == 2
    digest = _digest(tool_results(after_delta)[-1])
    assert digest["unloaded"] == [{"skill": "alpha", "revision": SKILLS[0].revision}]
    # Its tool left the request: a call is refused, never forwarded.
    assert tool_results(model.requests[5])[-1].content == "Unknown tool: alpha_tool"
    assert tool_results(model.requests[5])[-1].is_error
    entries = [r.entry for r in await session.log()]
    [unloaded] = [e for e in entries if isinstance(e, SkillUnloaded)]
    assert unloaded.name == "alpha"


async def test_reading_a_loaded_skill_again_makes_it_active(make_runtime: Make) -> None:
    replies = [load("alpha"), load("beta"), load("gamma"), load("alpha"), load("delta"), "end"]
    model = _native(replies)
    runtime = make_runtime(model=model, skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("go")
    again = model.requests[4]
    assert _digest(tool_results(again)[-1]) == {"loaded": [], "unloaded": [], "active": "alpha"}
    # Nothing changed in the context: no update message for that step.
    assert len(updates(again)) == len(updates(model.requests[3]))
    digest = _digest(tool_results(model.requests[5])[-1])
    assert [u["skill"] for u in digest["unloaded"]] == ["beta"]  # not alpha: it was read last
    # The activation did not reorder the tools: they stay in load order.
    assert [n for n in tool_names(model.requests[5]) if n.endswith("_tool")][-1] == "delta_tool"
    entries = [r.entry for r in await session.log()]
    assert [e.name for e in entries if isinstance(e, SkillActivated)] == ["alpha"]


async def test_every_loaded_skills_tools_work_in_load_order(make_runtime: Make) -> None:
    model = _native(
        [
            load("alpha"),
            load("beta"),
            call("alpha_tool", text="a"),
            call("beta_tool", text="b"),
            "ok",
        ]
    )
    runtime = make_runtime(model=model, skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("go")
    last = model.requests[-1]
    assert [r.content for r in tool_results(last)[-2:]] == ["alpha ran a", "beta ran b"]
    # Non-native tool lists follow the offer: load_skill, then skill tools in load order.
    runtime2 = make_runtime([load("beta"), load("alpha"), "ok"], skills=SKILLS)
    session2 = await runtime2.create_session()
    await session2.prompt("go")
    assert tool_names(runtime2.scripted.requests[-1]) == ["load_skill", "beta_tool", "alpha_tool"]


async def test_a_skill_tool_never_loaded_is_an_unknown_tool(make_runtime: Make) -> None:
    runtime = make_runtime([call("gamma_tool"), "ok"], skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("go")
    [result] = tool_results(runtime.scripted.requests[-1])
    assert (result.content, result.is_error) == ("Unknown tool: gamma_tool", True)


async def test_load_skill_with_a_name_outside_its_enum_is_an_error_result(
    make_runtime: Make,
) -> None:
    runtime = make_runtime(
        [call("load_skill", name="nope"), call("load_skill"), "ok"], skills=SKILLS
    )
    session = await runtime.create_session()
    await session.prompt("go")
    results = tool_results(runtime.scripted.requests[-1])
    assert all(r.is_error for r in results)
    assert "must be one of" in str(results[0].content)
    assert "missing required name" in str(results[1].content)
    assert not [r for r in await session.log() if isinstance(r.entry, SkillLoaded)]


@ags.tool
def tally() -> str:
    """Count calls in the skill's ephemeral state and in its durable store."""
    context = ags.skill_context()
    context.state["n"] += 1
    stored = context.store.get("n") or 0
    assert isinstance(stored, int)
    context.store.set("n", stored + 1)
    return f"state={context.state['n']} store={stored + 1}"


COUNTER = ags.Skill(
    name="counter",
    description="Counts calls.",
    instructions="Call tally to count.",
    tools=[tally],
    state_factory=lambda: {"n": 0},
)
FILLERS = [tool_skill(n) for n in ("one", "two", "three")]


async def test_state_is_fresh_per_load_and_the_store_survives_unload_and_restart(
    make_runtime: Make, db_path: Path
) -> None:
    replies = [
        load("counter"),
        call("tally"),
        call("tally"),  # state 1, 2 / store 1, 2
        load("one"),
        load("two"),
        load("three"),  # counter is pushed out
        call("tally"),  # unknown now
        load("counter"),
        call("tally"),  # reloaded: fresh state, store continues
        "done",
    ]
    runtime = make_runtime(model=_native(replies), skills=[COUNTER, *FILLERS])
    session = await runtime.create_session()
    await session.prompt("count")
    results = [r.content for r in tool_results(runtime.scripted.requests[-1])]
    tallies = [r for r in results if isinstance(r, str) and not r.startswith("{")]
    assert tallies == [
        "state=1 store=1",
        "state=2 store=2",
        "Unknown tool: tally",
        "state=1 store=3",
    ]
    writes = [r.entry for r in await session.log() if isinstance(r.entry, SkillStoreWrite)]
    assert [(w.skill, w.key, w.value) for w in writes] == [
        ("counter", "n", str(i)) for i in (1, 2, 3)
    ]
    await runtime.close()

    # A new process on the same SQLite file: still loaded, fresh state, the store restored.
    again = make_runtime(model=_native([call("tally"), "done"]), skills=[COUNTER, *FILLERS])
    reopened = await again.open_session(session.id)
    await reopened.prompt("once more")
    assert tool_results(again.scripted.requests[-1])[-1].content == "state=1 store=4"


async def test_unloading_keeps_history_and_the_contextchanged_lines(make_runtime: Make) -> None:
    replies = [load("alpha"), call("alpha_tool", text="x"), "said while active"]
    replies += [load("beta"), load("gamma"), load("delta"), "alpha is gone"]
    model = _native(replies)
    runtime = make_runtime(model=model, skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("first")
    await session.prompt("second")
    last = model.requests[-1]
    results = tool_results(last)
    assert "Use alpha_tool for alpha work." in str(results[0].content)  # the digest stays
    assert results[1].content == "alpha ran x"
    texts = [m.content for m in last.messages if isinstance(m, ags.AssistantMessage)]
    assert "said while active" in texts
    removed = [name for update in updates(last) for name in update.tools_removed]
    assert removed == ["alpha_tool"]  # announced in place: the declarations stay stable
    history = [m for m in last.messages if m.role != "system"]
    assert session.messages[: len(history)] == history  # nothing of the history was dropped


async def test_reopening_rebuilds_the_loaded_set_and_its_lru_order(make_runtime: Make) -> None:
    first = make_runtime(
        model=_native([load("alpha"), load("beta"), load("gamma"), load("alpha"), "ok"]),
        skills=SKILLS,
    )
    session = await first.create_session()
    await session.prompt("go")
    await first.close()
    second = make_runtime(
        model=_native([load("delta"), call("beta_tool"), call("alpha_tool"), "ok"]), skills=SKILLS
    )
    reopened = await second.open_session(session.id)
    await reopened.prompt("more")
    requests = second.scripted.requests
    assert {"alpha_tool", "beta_tool", "gamma_tool"} <= set(tool_names(requests[0]))
    digest = _digest(tool_results(requests[1])[-1])
    assert [u["skill"] for u in digest["unloaded"]] == ["beta"]  # LRU order survived
    results = tool_results(requests[-1])
    assert results[-2].content == "Unknown tool: beta_tool"
    assert results[-1].content == "alpha ran"


async def test_loads_on_a_profile_without_native_tool_changes_start_epochs(
    make_runtime: Make,
) -> None:
    runtime = make_runtime([load("alpha"), "ok"], skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("go")
    after = runtime.scripted.requests[1]
    assert tool_names(after) == ["load_skill", "alpha_tool"]
    assert system_text(after, "core.skills.loaded.alpha") == (
        '<skill name="alpha">\nUse alpha_tool for alpha work.\nReport what it returned.\n</skill>'
    )
    assert updates(after) == []  # folded into the new baseline
    dispatches = [r.entry for r in await session.log() if r.entry.kind == "dispatch"]
    assert [d.cache for d in dispatches] == ["first", "tools_changed"]
