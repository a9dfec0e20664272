"""The engine-neutral steps: a turn of them writes what ``prompt()`` writes; each is idempotent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.durable import (
    Admitted,
    Responded,
    Settled,
    StaleStepError,
    ToolRan,
    admit_prompt,
    last_seq,
    model_step,
    reference_from_json,
    run_tool,
)
from agentsession.engine.recovery import INTERRUPTED_RESULT
from agentsession.log import ToolResultEntry

from ..durability.common import check_log, plan_prompt, planned_reply, side_runs, side_tool
from .common import drive, shape

CONFIG = ags.Config(retry_base_delay=0, titles=False, environment=())
PROMPTS = [plan_prompt("d", k) for k in range(4)]


def _runtime(tmp_path: Path, side: Path) -> ags.Runtime:
    return ags.Runtime(
        model=ags.ScriptedModel(planned_reply),
        store=ags.SQLiteStore(tmp_path / "sessions.db"),
        tools=[side_tool(side)],
        project_dir=tmp_path,
        config=CONFIG,
    )


@pytest.mark.parametrize("twice", [False, True], ids=["once", "each-step-twice"])
async def test_a_turn_of_steps_writes_what_prompt_writes(tmp_path: Path, twice: bool) -> None:
    side = tmp_path / "side.txt"
    runtime = _runtime(tmp_path, side)
    try:
        stepped = (await runtime.create_session()).id
        prompted = await runtime.create_session()
        results = []
        for text in PROMPTS:
            settled = await drive(runtime, stepped, text, twice=twice)
            expected = await prompted.prompt(text)
            assert (settled.text, settled.stop_reason) == (expected.text, expected.stop_reason)
            assert settled.last_seq == await last_seq(runtime, stepped)
            results.append(settled)
        await prompted.close()
        a = await runtime.store.read(stepped)
        b = await runtime.store.read(prompted.id)
        assert shape(a) == shape(b)
        report = check_log(a, [side_tool(side)], CONFIG)
        assert report.requests > len(PROMPTS)
        assert not (report.gaps or report.unpaired or report.inexact or report.invalid)
        runs = side_runs(side)
        assert runs and set(runs.values()) == {2}  # once in each session, never again
        assert all(r.text.endswith(p) for r, p in zip(results, PROMPTS, strict=True))
    finally:
        await runtime.close()


async def test_a_tool_step_that_started_before_never_runs_the_tool_again(tmp_path: Path) -> None:
    side = tmp_path / "side.txt"
    runtime = _runtime(tmp_path, side)
    try:
        sid = (await runtime.create_session()).id
        admitted = await admit_prompt(runtime, sid, -1, plan_prompt("d", 1))  # 2 calls a round
        responded = await model_step(runtime, sid, admitted.seq, 1)
        assert len(responded.calls) == 2
        first, second = responded.calls
        ran = await run_tool(runtime, sid, responded.seq, first, first_attempt=True)
        # The second call's step died somewhere inside an earlier attempt: it may have run.
        closed = await run_tool(runtime, sid, responded.seq, second, first_attempt=False)
        assert closed.is_error and not ran.is_error
        assert side_runs(side) == {first: 1}
        records = await runtime.store.read(sid, closed.seq)
        entry = records[0].entry
        assert isinstance(entry, ToolResultEntry) and entry.content == INTERRUPTED_RESULT["process"]
        again = await model_step(runtime, sid, closed.seq, 2)
        assert again.seq > closed.seq and again.step == 2  # the turn goes on
    finally:
        await runtime.close()


async def test_a_step_behind_the_log_is_stale_and_stores_nothing(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, tmp_path / "side.txt")
    try:
        sid = (await runtime.create_session()).id
        await drive(runtime, sid, plan_prompt("d", 3))
        end = await last_seq(runtime, sid)
        with pytest.raises(StaleStepError) as caught:
            await admit_prompt(runtime, sid, end - 2, plan_prompt("d", 4))
        assert isinstance(caught.value, ags.AgentSessionError)
        assert caught.value.expected_seq == end - 2 and caught.value.found_seq == end
        with pytest.raises(StaleStepError):
            await model_step(runtime, sid, end + 3, 1)  # a step of a log this one never was
        assert await last_seq(runtime, sid) == end
    finally:
        await runtime.close()


def test_references_are_small_json_and_come_back_equal() -> None:
    refs: list[Admitted | Responded | ToolRan | Settled] = [
        Admitted("s", 4, "ab" * 32),
        Responded("s", 5, 1, ("c1", "c2")),
        ToolRan("s", "c1", 6, is_error=True),
        Settled("s", "done", "end_turn", 9),
    ]
    for ref in refs:
        text = json.dumps(ref.as_json())
        assert len(text) < 300
        assert reference_from_json(json.loads(text)) == ref
    with pytest.raises(ags.UsageError):
        reference_from_json({"kind": "prompt", "text": "no"})
    with pytest.raises(ags.UsageError):
        reference_from_json({"kind": "admitted", "session_id": "s"})


def test_the_neutral_layer_imports_no_engine() -> None:
    import subprocess
    import sys

    code = "import sys, agentsession.durable; print('dbos' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_a_tool_that_changes_the_context_commits_with_its_result(tmp_path: Path) -> None:
    from ..skills.sessions import make_skills

    skills = make_skills(tmp_path / "skills", "dice")
    made = []
    for _ in range(2):
        made.append(
            ags.Runtime(
                model=ags.ScriptedModel(
                    [[ags.ToolCall("load_skill", {"name": "dice"}, "l1")], "loaded"]
                ),
                store=ags.SQLiteStore(tmp_path / "sessions.db"),
                skills_dirs=[skills],
                project_dir=tmp_path,
                config=CONFIG,
            )
        )
    stepped_runtime, prompted_runtime = made
    try:
        stepped = (await stepped_runtime.create_session()).id
        settled = await drive(stepped_runtime, stepped, "roll")
        prompted = await prompted_runtime.create_session()
        assert (await prompted.prompt("roll")).text == settled.text == "loaded"
        await prompted.close()
        a = await stepped_runtime.store.read(stepped)
        kinds = [r.entry.kind for r in a]
        # The result and the skill's load commit together, the model step still follows them.
        assert kinds.index("tool_result") < kinds.index("skill_loaded") < len(kinds) - 2
        assert shape(a) == shape(await prompted_runtime.store.read(prompted.id))
    finally:
        for runtime in made:
            await runtime.close()
