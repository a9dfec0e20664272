"""More of spec 000 and 003 in sessions: mappings, budgets, refused writes, permissions, epochs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.log import RuntimeContextSnapshot, SkillLoaded, UserEntry
from agentsession.store._sqlite_sql import KIND_CODES  # SQLite stores kind codes

from .conftest import skill_md, write_skill
from .sessions import (
    Make,
    call,
    load,
    make_skills,
    system_keys,
    tool_names,
    tool_results,
    tool_skill,
    updates,
)

SKILLS = [tool_skill(n) for n in ("alpha", "beta", "gamma", "delta")]


async def test_the_view_maps_a_selected_message_back_to_its_entries(
    make_runtime: Make, tmp_path: Path
) -> None:
    make_skills(tmp_path / "skills", "pdf")
    runtime = make_runtime(["ok"], skills_dirs=[tmp_path / "skills"])
    session = await runtime.create_session()
    await session.prompt("use $pdf")
    records = await session.log()
    user = next(r.seq for r in records if isinstance(r.entry, UserEntry))
    snapshot = next(r.seq for r in records if isinstance(r.entry, RuntimeContextSnapshot))
    [request] = runtime.scripted.requests
    assert request.sources[0] == (user, snapshot)
    body = ags.lower(request, "openai-chat")
    assert "sources" not in body and str(snapshot) not in str(body["messages"][0].keys())


async def test_the_budget_counts_the_selected_instructions(
    make_runtime: Make, tmp_path: Path
) -> None:
    write_skill(tmp_path / "skills", "huge", skill_md("huge", body="word " * 40_000))
    config = ags.Config(context_window=20_000, reserve_output_tokens=0, titles=False)
    runtime = make_runtime(["ok"], skills_dirs=[tmp_path / "skills"], config=config)
    session = await runtime.create_session()
    with pytest.raises(ags.BudgetExceededError) as caught:
        await session.prompt("a short prompt with $huge")
    assert caught.value.text == "a short prompt with $huge"
    assert await session.log() == [] and session.runtime_contexts() == []
    assert (await session.prompt("without it")).text == "ok"


async def test_a_permission_change_creates_no_snapshot(make_runtime: Make) -> None:
    runtime = make_runtime(["one", "two"], skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("first")
    session.set_permission_preset("read-only")
    await session.prompt("second")
    assert session.runtime_contexts() == []
    kinds = [r.entry.kind for r in await session.log()]
    assert "runtime_context" not in kinds and "permission_changed" in kinds


async def test_events_carry_no_skill_blocks(make_runtime: Make, tmp_path: Path) -> None:
    make_skills(tmp_path / "skills", "pdf")
    runtime = make_runtime(["ok"], skills_dirs=[tmp_path / "skills"])
    session = await runtime.create_session()
    events = [event async for event in session.stream("go $pdf")]
    assert events and not [e for e in events if "Follow the pdf procedure" in repr(e)]


async def test_a_refused_load_result_is_kept_flushed_and_never_run_twice(
    make_runtime: Make, db_path: Path
) -> None:
    model = ags.ScriptedModel(["hello", load("alpha"), call("alpha_tool"), "done"])
    runtime = make_runtime(model=model, skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("hi")
    _sql(
        db_path,
        "CREATE TRIGGER refuse BEFORE INSERT ON entries"
        f" WHEN NEW.kind = {KIND_CODES['skill_loaded']}"
        " BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
    )
    with pytest.raises(ags.StoreError, match="flush"):
        await session.prompt("load alpha")
    assert session.unflushed_entries == 2  # the tool result and what it changed, together
    _sql(db_path, "DROP TRIGGER refuse;")
    assert await session.flush() == 2
    await session.retry()
    loads = [r.entry for r in await session.log() if isinstance(r.entry, SkillLoaded)]
    assert [e.name for e in loads] == ["alpha"]
    assert tool_results(model.requests[-1])[-1].content == "alpha ran"
    assert "alpha_tool" in tool_names(model.requests[-1])


def _sql(db: Path, statement: str) -> None:
    connection = sqlite3.connect(db)
    try:
        connection.executescript(statement)
    finally:
        connection.close()


async def test_without_native_changes_an_unload_leaves_the_new_baseline(
    make_runtime: Make,
) -> None:
    replies = [load("alpha"), load("beta"), load("gamma"), load("delta"), "ok"]
    runtime = make_runtime(replies, skills=SKILLS)
    session = await runtime.create_session()
    await session.prompt("go")
    last = runtime.scripted.requests[-1]
    loaded = [k for k in system_keys(last) if k.startswith("core.skills.loaded.")]
    assert loaded == [f"core.skills.loaded.{n}" for n in ("beta", "delta", "gamma")]
    assert updates(last) == []
    assert tool_names(last) == ["load_skill", "beta_tool", "gamma_tool", "delta_tool"]
    checkpoint = session.system_prompt_checkpoints()[-1]
    assert checkpoint.changed["core.skills.loaded.alpha"] is None
    assert checkpoint.changed["core.skills.loaded.delta"] is not None
