"""A server whose tools and resource change mid-session, over stdio and streamable HTTP.

The lab server (``lab_server.py``, written with the SDK) changes itself when its tools are
called; every test drives it through a scripted session and checks what the next requests say.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import agentsession as ags
from agentsession.log import ContextEpoch, Dispatch, MidConversationSystemMessage
from agentsession.providers.profiles import default_profile
from agentsession.providers.scripted import Reply

from .conftest import Lab
from .wire import tool_names

EXTRA = "mcp__lab__extra"
NATIVE = replace(
    default_profile("anthropic-messages"),
    provider="scripted",
    system_placement="after_user",
    native_tool_changes=True,
    writes_titles=False,
)


def call(name: str, **arguments: object) -> list[ags.ToolCall]:
    return [ags.ToolCall(f"mcp__lab__{name}", dict(arguments))]


def results(request: ags.Request) -> list[ags.ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ags.ToolResultMessage)]


def updates(request: ags.Request) -> list[ags.SystemMessage]:
    return [m for m in request.messages if isinstance(m, ags.SystemMessage)]


async def test_tools_join_and_leave_at_the_next_boundary(
    make_runtime: Callable[..., ags.Runtime], lab: Lab
) -> None:
    replies: list[Reply] = [call("grow"), [ags.ToolCall(EXTRA, {"text": "hi"})], call("shrink")]
    replies += [[ags.ToolCall(EXTRA, {"text": "again"})], "done"]
    model = ags.ScriptedModel(replies)
    runtime = make_runtime(model=model, mcp_servers=[lab.server])
    session = await runtime.create_session()

    await session.prompt("Grow, use the new tool, shrink, use it again.")

    offered = [EXTRA in tool_names(r) for r in model.requests]
    assert offered == [False, True, True, False, False]
    used, refused = results(model.requests[2])[-1], results(model.requests[4])[-1]
    assert (used.content, used.is_error) == ("extra says hi", False)
    assert (refused.content, refused.is_error) == (f"Unknown tool: {EXTRA}", True)
    # Without native tool changes, a changed tool list opens a new epoch, diagnosed as such.
    entries = [r.entry for r in await session.log()]
    reasons = [e.reason for e in entries if isinstance(e, ContextEpoch)]
    assert reasons == ["start", "tools", "tools"]
    caches = [e.cache for e in entries if isinstance(e, Dispatch)]
    assert caches[1] == caches[3] == "tools_changed"


async def test_native_tool_changes_keep_the_top_level_tool_list(
    make_runtime: Callable[..., ags.Runtime], lab: Lab
) -> None:
    replies: list[Reply] = [call("grow"), [ags.ToolCall(EXTRA, {"text": "hi"})], call("shrink")]
    replies += [[ags.ToolCall(EXTRA, {"text": "again"})], "done"]
    model = ags.ScriptedModel(replies, profile=NATIVE)
    runtime = make_runtime(model=model, mcp_servers=[lab.server])
    session = await runtime.create_session()

    await session.prompt("Grow, use the new tool, shrink, use it again.")

    bodies = [ags.lower(r, "anthropic-messages", profile=NATIVE) for r in model.requests]
    top = {json.dumps(b["tools"], sort_keys=False) for b in bodies}
    assert len(top) == 1  # byte-identical across the epoch
    assert EXTRA not in json.dumps(bodies[0]["tools"])
    changes = [
        (tuple(m.tools_added), tuple(m.tools_removed))
        for r in model.requests[-1:]
        for m in updates(r)
    ]
    assert changes == [((EXTRA,), ()), ((), (EXTRA,))]
    refused = results(model.requests[4])[-1]
    assert (refused.content, refused.is_error) == (f"Unknown tool: {EXTRA}", True)
    entries = [r.entry for r in await session.log()]
    assert [e.reason for e in entries if isinstance(e, ContextEpoch)] == ["start"]


async def test_a_resource_change_arrives_as_one_message(
    make_runtime: Callable[..., ags.Runtime], lab: Lab
) -> None:
    replies: list[Reply] = [call("set_note", text="second note"), call("echo", text="x"), "noted"]
    replies += [call("drop_note"), "dropped"]
    model = ags.ScriptedModel(replies)
    runtime = make_runtime(model=model, mcp_servers=[lab.server])
    session = await runtime.create_session()

    await session.prompt("Change the note.")

    first, changed, quiet = model.requests[:3]
    baseline = dict(first.system)
    assert "first note" in baseline["mcp.lab.note"]
    assert "The lab server: ask it to grow or shrink." in baseline["mcp.lab"]
    assert updates(first) == []
    (update,) = updates(changed)
    assert "[mcp.lab.note]" in update.content and "second note" in update.content
    assert "first note" not in update.content
    assert updates(quiet) == [update]  # nothing new: the same message, still in place

    await session.prompt("Drop it.")

    removal = updates(model.requests[-1])[-1]
    assert "[mcp.lab.note]" in removal.content and "is gone" in removal.content
    entries = [r.entry for r in await session.log()]
    mids = [e for e in entries if isinstance(e, MidConversationSystemMessage)]
    assert [[c.key for c in m.changes] for m in mids] == [["mcp.lab.note"], ["mcp.lab.note"]]
    assert mids[1].changes[0].update is None


async def test_a_killed_server_is_unavailable_and_the_session_continues(
    make_runtime: Callable[..., ags.Runtime], lab: Lab
) -> None:
    replies: list[Reply] = [
        call("echo", text="before"),
        "fine",
        call("echo", text="after"),
        "carrying on",
    ]
    model = ags.ScriptedModel(replies)
    runtime = make_runtime(model=model, mcp_servers=[lab.server])
    session = await runtime.create_session()
    await session.prompt("Echo something.")
    assert results(model.requests[1])[-1].content == "before"
    checkpoints = len(session.system_prompt_checkpoints())

    lab.kill()
    result = await session.prompt("Echo again.")

    assert result.text == "carrying on"
    after, answered = model.requests[2:]
    assert after.system == model.requests[0].system  # the prior state is kept
    assert updates(after) == []  # nothing sent for the unavailable resource
    assert "mcp__lab__echo" in tool_names(after)  # declarations kept while it is down
    failed = results(answered)[-1]
    assert failed.is_error
    assert "MCP server 'lab'" in failed.content and "mcp__lab__echo" in failed.content
    assert len(session.system_prompt_checkpoints()) == checkpoints
    assert lab.starts() == 1  # the backoff holds the restart back
