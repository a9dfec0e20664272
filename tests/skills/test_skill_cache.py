"""A 200-turn session that loads and unloads skills every few turns keeps the prompt cache.

With native tool changes (Anthropic ``tool_addition`` / ``tool_removal``) a load or an unload
changes neither the top-level tools nor the system part of any request: no cache miss. Without
them (OpenAI Responses) the tool list changes at each load or unload, and every cache miss the
dispatch records diagnose is ``tools_changed`` exactly there, none anywhere else.
"""

from __future__ import annotations

import random
from itertools import pairwise
from typing import Any

import agentsession as ags
from agentsession.log import Dispatch

from .sessions import NATIVE, RESPONSES, Make, call, load, tool_names, tool_skill

NAMES = ("ant", "bee", "cat", "dog", "eel")
SKILLS = [tool_skill(name) for name in NAMES]
TURNS = 200
CONFIG = ags.Config(max_transcript_messages=5000, titles=False, retry_base_delay=0)


def _script(seed: int) -> tuple[list[Any], list[bool]]:
    """The replies of the whole session, and per model call whether its request follows a change.

    Every third turn reads a skill (a load, or an activation of a loaded one) and calls a loaded
    skill's tool; other turns answer with text or call a loaded tool.
    """
    rng = random.Random(seed)
    loaded: list[str] = []  # least recently read first
    replies: list[Any] = []
    changed: list[bool] = []  # one per request, in order
    for turn in range(TURNS):
        changed.append(False)  # the turn's first request
        if turn % 3 == 0:
            name = rng.choice(NAMES)
            replies.append(load(name))
            was_loaded = name in loaded
            if was_loaded:
                loaded.remove(name)
            loaded.append(name)
            if len(loaded) > 3:
                loaded.pop(0)
            changed.append(not was_loaded)  # a load changes the tools; an activation does not
            replies.append(call(f"{rng.choice(loaded)}_tool", text=f"turn {turn}"))
            changed.append(False)
        elif loaded and turn % 3 == 1:
            replies.append(call(f"{rng.choice(loaded)}_tool", text=f"turn {turn}"))
            changed.append(False)
        replies.append(f"answer {turn}")
    return replies, changed


async def _run(make_runtime: Make, profile: ags.ModelProfile) -> tuple[ags.ScriptedModel, Any]:
    replies, _ = _script(11)
    model = ags.ScriptedModel(replies, profile=profile)
    runtime = make_runtime(model=model, skills=SKILLS, config=CONFIG)
    session = await runtime.create_session()
    for turn in range(TURNS):
        await session.prompt(f"question {turn}")
    results = [m for m in session.messages if isinstance(m, ags.ToolResultMessage)]
    assert not [r for r in results if r.is_error]  # every call reached a loaded skill
    return model, session


async def test_native_tool_changes_keep_tools_and_system_byte_stable(make_runtime: Make) -> None:
    model, session = await _run(make_runtime, NATIVE)
    # The local diagnosis agrees: a load or unload in place costs no cache miss.
    dispatches = [r.entry for r in await session.log() if isinstance(r.entry, Dispatch)]
    assert "tools_changed" not in [d.cache for d in dispatches]
    _, changed = _script(11)
    assert len(model.requests) == len(changed)
    bodies = [ags.lower(r, "anthropic-messages", profile=NATIVE) for r in model.requests]
    for before, after in pairwise(bodies):
        assert after["tools"] == before["tools"]
        assert after["system"] == before["system"]
    # The changes happened all the same, in place: additions and removals of skill tools.
    blocks = [
        block["type"]
        for message in bodies[-1]["messages"]
        if message["role"] == "system"
        for block in message["content"]
    ]
    assert blocks.count("tool_addition") == sum(changed)
    assert blocks.count("tool_removal") == sum(changed) - 3


async def test_without_native_changes_every_miss_is_tools_changed_at_a_load(
    make_runtime: Make,
) -> None:
    model, session = await _run(make_runtime, RESPONSES)
    _, changed = _script(11)
    dispatches = [r.entry for r in await session.log() if isinstance(r.entry, Dispatch)]
    assert len(dispatches) == len(model.requests) == len(changed)
    expected = ["first"] + ["tools_changed" if c else "hit" for c in changed[1:]]
    assert [d.cache for d in dispatches] == expected
    assert expected.count("tools_changed") > 20
    for i, (before, after) in enumerate(pairwise(model.requests)):
        differs = tool_names(before) != tool_names(after)
        assert differs == changed[i + 1]
        body = ags.lower(after, "openai-responses", profile=RESPONSES)
        assert [t["name"] for t in body["tools"]] == tool_names(after)
