"""The window inside real sessions: an over-long turn is elided, never orphaned or emptied."""

from __future__ import annotations

from typing import Any

import agentsession as ags

from .conftest import MakeRuntime

Make = MakeRuntime


@ags.tool
def probe(n: int) -> str:
    """Probe once."""
    return f"probe {n}"


async def test_turn_longer_than_the_cap_keeps_user_message_and_newest_groups(
    make_runtime: Make,
) -> None:
    calls = {"left": 5}

    def reply(request: ags.Request) -> Any:
        if calls["left"]:
            calls["left"] -= 1
            return [ags.ToolCall("probe", {"n": calls["left"]})]
        return "finished"

    runtime = make_runtime(
        model=ags.ScriptedModel(reply),
        tools=[probe],
        config=ags.Config(max_transcript_messages=6, retry_base_delay=0),
    )
    session = await runtime.create_session()
    await session.prompt("probe a lot")
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    last = model.requests[-1]
    counted = [m for m in last.messages if m.role != "system"]
    assert len(counted) <= 6
    first = last.messages[0]
    assert isinstance(first, ags.UserMessage)
    assert first.content == "probe a lot\n\n[6 earlier messages of this turn omitted]"
    for i, message in enumerate(last.messages):
        if isinstance(message, ags.ToolResultMessage):
            owner = last.messages[i - 1]
            assert isinstance(owner, ags.AssistantMessage)
            assert message.call_id in {c.id for c in owner.tool_calls}
    # The stored input is never rewritten.
    assert session.messages[0].content == "probe a lot"


async def test_checkpoints_survive_reopen(make_runtime: Make) -> None:
    runtime = make_runtime(["a", "b"])
    session = await runtime.create_session()
    await session.prompt("one")
    reopened = await make_runtime(["c"]).open_session(session.id)
    assert reopened.system_prompt_checkpoints() == session.system_prompt_checkpoints()
    assert len(reopened.system_prompt_checkpoints()) == 1
