"""Leaving ``stream()`` during a tool call: the session is idle at once, and the preview of the
next prompt is exactly what that prompt sends (the abandoned call closed, never left unanswered).
"""

from __future__ import annotations

import agentsession as ags
from agentsession.providers import validate
from agentsession.request import AssistantMessage, ToolResultMessage, digest

from .conftest import MakeRuntime

Make = MakeRuntime


@ags.tool
def look(what: str) -> str:
    """Look at something."""
    return f"saw {what}"


async def test_leaving_the_stream_at_a_tool_call_leaves_an_idle_session_and_a_true_preview(
    make_runtime: Make,
) -> None:
    model = ags.ScriptedModel([[ags.ToolCall("look", {"what": "x"})], "after"])
    runtime = make_runtime(model=model, tools=[look])
    session = await runtime.create_session()
    async for event in session.stream("look at x"):
        if isinstance(event, ags.ToolCallStarted):
            break
    assert session.busy is False

    preview = await session.preview_request("and now?")
    calls = [
        c.id for m in preview.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    answered = [m.call_id for m in preview.messages if isinstance(m, ToolResultMessage)]
    assert calls and sorted(calls) == sorted(answered)  # no call left without its result
    validate(ags.lower(preview, "anthropic-messages"), "anthropic-messages")

    assert (await session.prompt("and now?")).text == "after"
    assert digest(model.requests[-1]) == digest(preview)
    assert session.busy is False
