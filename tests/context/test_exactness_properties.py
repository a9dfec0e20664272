"""Properties of spec exactness, over generated sessions.

1. ``preview_request(x, skills=s)`` is the request ``prompt(x, skills=s)`` sends next, for every
   input form: plain text, content parts, ``$name`` mentions and ``skills=``.
2. Folding every ``SystemPromptCheckpoint`` in order gives the effective state the model had at
   its last request: the epoch's baseline with every update message admitted since applied.

The scenarios mix prompts that load skills (an LRU of one or two, so loads unload), explicit
selections, permission preset switches, plugin values that change, become unavailable or absent,
plugin reloads that add and drop components, a date that moves, and windows small enough to
advance — on a profile with native tool changes and on one without.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.context import LoadResult
from agentsession.context.engine import effective_state
from agentsession.log import ContextEpoch, Dispatch, MidConversationSystemMessage

from ..conftest import Clock
from ..skills.sessions import NATIVE, RESPONSES, make_skills, tool_skill

FILE_SKILLS = ("pdf", "docx")
SKILLS = (*FILE_SKILLS, "alpha", "beta")  # the Python ones bring a tool each
KEYS = ("plugin.p.one", "plugin.p.two", "plugin.q.three")
PRESETS = ("read-only", "workspace-write", "full-access")
IMAGE = ags.ImagePart("image/png", data="iVBORw0KGgo=")

prompt_op = st.tuples(
    st.just("prompt"),
    st.sampled_from(["text", "parts", "mention", "skills"]),
    st.sampled_from(SKILLS),
    st.sampled_from([None, *SKILLS]),  # a skill the model loads during the turn
)
op = st.one_of(
    prompt_op,
    prompt_op,
    prompt_op,
    st.tuples(st.just("preset"), st.sampled_from(PRESETS)),
    st.tuples(st.just("set"), st.sampled_from(KEYS), st.sampled_from(["x", "y", "gone", "down"])),
    st.tuples(st.just("reload"), st.sets(st.sampled_from(KEYS[:2]))),
    st.tuples(st.just("date"), st.integers(0, 1)),
)
FIRST = ("prompt", "text", "pdf", None)
#: The window cap, the window step, native tool changes, how many skills stay loaded.
config = st.tuples(
    st.sampled_from([4, 7, 60]), st.sampled_from([1, 2]), st.booleans(), st.sampled_from([1, 2])
)


def fold(checkpoints: list[ags.SystemPromptCheckpoint]) -> dict[str, str]:
    state: dict[str, str] = {}
    for checkpoint in checkpoints:
        for key, text in checkpoint.changed.items():
            if text is None:
                state.pop(key, None)
            else:
                state[key] = text
    return state


def told_at_last_request(log: list[Any]) -> dict[str, str]:
    """The effective state of the epoch in force at the last dispatch, from the log."""
    last = max(i for i, r in enumerate(log) if isinstance(r.entry, Dispatch))
    epoch_at = max(i for i in range(last) if isinstance(log[i].entry, ContextEpoch))
    epoch = log[epoch_at].entry
    mids = [
        r.entry
        for r in log[epoch_at:last]
        if isinstance(r.entry, MidConversationSystemMessage) and r.entry.epoch == epoch.epoch
    ]
    return {key: told.baseline for key, told in effective_state(epoch, mids).items()}


class World:
    """The generated session's surroundings: plugin values, registered keys, what a turn does."""

    def __init__(self) -> None:
        self.values: dict[str, str] = dict.fromkeys(KEYS, "x")
        self.loads: list[Any] = []
        self.expected: dict[str, str] = {}  # plugin keys: what the model was last told

    def load(self, key: str) -> LoadResult | str:
        match self.values[key]:
            case "gone":
                return ags.ABSENT
            case "down":
                return ags.UNAVAILABLE
            case value:
                return f"{key} is {value}."

    def reply(self, request: ags.Request) -> Any:
        return self.loads.pop(0) if self.loads else "done"

    def component(self, key: str) -> ags.ContextComponent:
        return ags.ContextComponent(key, lambda: self.load(key))

    def told(self, registered: set[str]) -> None:
        """After a prompt: what the plugin components told the model, by the spec's rules."""
        for key in KEYS:
            value = self.values[key]
            if key not in registered or value == "gone":
                self.expected.pop(key, None)
            elif value != "down":
                self.expected[key] = f"{key} is {value}."


async def scenario(
    ops: list[tuple[Any, ...]], setup: tuple[int, int, bool, int], tmp: Path, check: str
) -> None:
    cap, step, native, most = setup
    make_skills(tmp / "skills", *FILE_SKILLS)
    world = World()
    model = ags.ScriptedModel(world.reply, profile=NATIVE if native else RESPONSES)
    runtime = ags.Runtime(
        store=ags.MemoryStore(),
        model=model,
        project_dir=tmp,
        skills_dirs=[tmp / "skills"],
        skills=[tool_skill("alpha"), tool_skill("beta")],
        clock=(clock := Clock(datetime(2026, 1, 1, 9, 0))),
        config=ags.Config(
            max_transcript_messages=cap,
            window_step=step,
            max_loaded_skills=most,
            retry_base_delay=0,
            titles=False,
        ),
    )
    scope = runtime.plugin("p")
    scope.replay([world.component(k) for k in KEYS[:2]])
    runtime.register_component(world.component(KEYS[2]))
    registered = set(KEYS)
    session = await runtime.create_session()
    for number, item in enumerate(ops):
        match item:
            case ("prompt", form, named, loaded):
                content: Any = f"turn {number}"
                skills: list[str] = []
                if form == "parts":
                    content = [ags.TextPart(f"turn {number}"), IMAGE]
                elif form == "mention":
                    content = f"turn {number} with ${named}"
                elif form == "skills":
                    skills = [named]
                world.loads = [[ags.ToolCall("load_skill", {"name": loaded})]] if loaded else []
                if check == "preview":
                    preview = await session.preview_request(content, skills=skills)
                before = len(model.requests)
                await session.prompt(content, skills=skills)
                world.told(registered)
                if check == "preview":
                    assert model.requests[before] == preview
                else:
                    checkpoints = session.system_prompt_checkpoints()
                    folded = fold(checkpoints)
                    assert folded == told_at_last_request(await session.log())
                    assert {k: v for k, v in folded.items() if k in KEYS} == world.expected
            case ("preset", name):
                session.set_permission_preset(name)
            case ("set", key, value):
                world.values[key] = value
            case ("reload", kept):
                scope.replay([world.component(k) for k in KEYS[:2] if k in kept])
                registered = {k for k in registered if k not in KEYS[:2]} | set(kept)
            case ("date", days):
                clock.moment += timedelta(days=days)
    log = await session.log()
    for reason in sorted({r.entry.reason for r in log if isinstance(r.entry, ContextEpoch)}):
        event(f"an epoch started by {reason}")
    if any(r.entry.kind == "skill_unloaded" for r in log):
        event("a skill was unloaded")
    await runtime.close()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=st.lists(op, min_size=6, max_size=16).map(lambda ops: [FIRST, *ops]), setup=config)
def test_preview_is_what_prompt_sends(
    ops: list[tuple[Any, ...]], setup: tuple[int, int, bool, int], tmp_path: Path
) -> None:
    asyncio.run(scenario(ops, setup, tmp_path, "preview"))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=st.lists(op, min_size=6, max_size=16).map(lambda ops: [FIRST, *ops]), setup=config)
def test_folded_checkpoints_are_the_effective_state(
    ops: list[tuple[Any, ...]], setup: tuple[int, int, bool, int], tmp_path: Path
) -> None:
    asyncio.run(scenario(ops, setup, tmp_path, "checkpoints"))
