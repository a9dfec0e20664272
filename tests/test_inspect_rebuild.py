"""Past requests rebuilt from the log, byte for byte what the model received.

A scripted 100-turn session goes through everything that shapes a request — tool calls, context
changes (a plugin fact, the permission preset), a turn longer than the window (elision), window
advances, a manual compaction, a provider failure and its retry, a model switch and a reopen in a
new runtime — and every dispatched request is then rebuilt from the log alone and compared with
what ``ScriptedModel.requests`` recorded.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentsession as ags
from agentsession.codec import encode
from agentsession.inspection._carried import Projected, carried
from agentsession.inspection._rebuilder import Rebuilder
from agentsession.inspection.rebuild import rebuild, rebuild_all
from agentsession.log.fingerprint import chain_link
from agentsession.projection import project
from agentsession.request import digest

from .conftest import MakeRuntime

Make = MakeRuntime


@ags.tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"value of {key}"


class Replies:
    """Answers ``calls N …`` with N tool calls, one per step, then text; anything else with text.

    Calls made are counted per prompt text (each prompt's text is unique), not read back from the
    request: an over-long turn's window leaves its early calls out.
    """

    def __init__(self) -> None:
        self.made: dict[str, int] = {}

    def __call__(self, request: ags.Request) -> Any:
        users = [m for m in request.messages if isinstance(m, ags.UserMessage)]
        content = users[-1].content if users else ""
        text = content.split("\n")[0] if isinstance(content, str) else ""
        wanted = int(text.split()[1]) if text.startswith("calls ") else 0
        done = self.made.get(text, 0)
        if done < wanted:
            self.made[text] = done + 1
            return [ags.ToolCall("lookup", {"key": f"k{done}"})]
        return f"answer to {text[:40]!r} after {done} calls"


class Flaky:
    """Fails the request it is armed for once, as a non-transient provider error."""

    def __init__(self) -> None:
        self.armed = False
        self.replies = Replies()

    def __call__(self, request: ags.Request) -> Any:
        if self.armed:
            self.armed = False
            return RuntimeError("provider down")
        return self.replies(request)


def requests_of(*models: ags.ScriptedModel) -> list[ags.Request]:
    return [r for m in models for r in m.requests]


def wire(request: ags.Request) -> dict[str, Any]:
    return {
        "system": encode(request.system),
        "messages": encode(request.messages),
        "tools": encode(request.tools),
    }


async def test_every_request_of_a_100_turn_session_is_rebuilt_byte_for_byte(
    make_runtime: Make,
) -> None:
    flaky = Flaky()
    first = ags.ScriptedModel(flaky, name="scripted:first")
    second = ags.ScriptedModel(flaky.replies, name="scripted:second")
    fact = {"value": "build green"}
    status = ags.ContextComponent("plugin.ci.status", lambda: fact["value"])
    config = ags.Config(max_transcript_messages=14, retry_base_delay=0, provider_retries=0)
    summarizer = ags.ScriptedModel(["## Goal\nKeep going."] * 5)

    def runtime_with(model: ags.ScriptedModel) -> ags.Runtime:
        return make_runtime(
            model=model,
            tools=[lookup],
            components=[status],
            config=config,
            summarizer=summarizer,
            instructions="You are a careful assistant.",
        )

    runtime = runtime_with(first)
    session = await runtime.create_session()
    for turn in range(100):
        if turn == 40:
            # Reopened in a new runtime (a new process would do the same), on the same model.
            session = await runtime_with(first).open_session(session.id)
        if turn % 3 == 1:
            fact["value"] = f"build {turn} red"
        if turn == 20:
            session.set_permission_preset("read-only")
        if turn == 30:
            text = "calls 9 (turn 30)"  # longer than the window alone: the turn is elided
        elif turn % 5 == 2:
            text = f"calls {turn % 3 + 1} (turn {turn})"
        else:
            text = f"turn {turn}: say something"
        if turn == 55:
            assert await session.compact()
        if turn == 60:
            flaky.armed = True
            with pytest.raises(ags.ProviderError):
                await session.prompt(text)
            await session.retry()
            continue
        if turn == 70:
            await session.switch_model(second)
        await session.prompt(text)

    records = await session.log()
    kinds = [r.entry.kind for r in records]
    epochs = [r.entry for r in records if isinstance(r.entry, ags.ContextEpoch)]
    reasons = {e.reason for e in epochs}
    assert {"start", "window", "compaction", "model_switch"} <= reasons
    assert kinds.count("mid_conversation_system") >= 10
    assert "provider_failed" in kinds and "permission_changed" in kinds

    sent = requests_of(first, second)
    specs = {t.name: t.spec for t in (lookup,)}
    rebuilt = rebuild_all(records, specs=specs, config=config, tools=["lookup"])
    # The failed request and its retry are two dispatches of one request, both recorded.
    assert len(rebuilt) == len(sent) == kinds.count("dispatch")
    assert len(sent) > 140
    for item, original in zip(rebuilt, sent, strict=True):
        assert item.exact, (item.number, item.mismatch)
        assert item.request == original, item.number
        assert json.dumps(wire(item.request), sort_keys=True) == json.dumps(
            wire(original), sort_keys=True
        )
        assert digest(item.request) == item.dispatch.digest == digest(original)
        assert ags.lower(item.request, "openai-chat") == ags.lower(original, "openai-chat")
    assert [r.number for r in rebuilt] == list(range(1, len(sent) + 1))

    # One request alone gives the same as the whole pass.
    middle = len(sent) // 2
    alone = rebuild(records, middle, specs=specs, config=config, tools=["lookup"])
    assert alone == rebuilt[middle - 1]

    # Without the application's tool declarations (a command line that does not have its
    # tools), or with other ones, no request is exact and each says why, yet each still holds
    # the messages and the system part that were sent, as a rebuild of that request alone does.
    other = ags.ToolSpec("lookup", "another description", {"type": "object"})
    for known, why in (({}, "not known here: lookup"), ({"lookup": other}, "declarations differ")):
        blind = rebuild_all(records, specs=known, config=config, tools=["lookup"])
        assert len(blind) == len(sent)
        for item, original in zip(blind, sent, strict=True):
            assert not item.exact and why in item.mismatch, (item.number, item.mismatch)
            assert item.request.messages == original.messages, item.number
            assert item.request.system == original.system, item.number
        one = rebuild(records, middle, specs=known, config=config, tools=["lookup"])
        assert one == blind[middle - 1]

    # The message chain that proves those, hashed from the part digests kept per record, is
    # the chain hashed from scratch, whichever epoch's records the messages are looked up in.
    rebuilder = Rebuilder(records, {}, config, ["lookup"])
    for number, at in enumerate(rebuilder.dispatches, start=1):
        item = rebuilder.rebuild(at, number)
        plain = ""
        for message in item.request.messages:
            plain = chain_link(plain, message)
        assert plain == item.dispatch.messages_digest, number
        for origin in rebuilder._origins.values():
            assert rebuilder._chained(item.request.messages, origin) == plain, number

    # An epoch's view carried over from the epoch before it, wherever it can be, is the view
    # projecting its records gives; most epochs here are carried (window advances).
    starts = [i for i, r in enumerate(records) if isinstance(r.entry, ags.ContextEpoch)]
    ranges = []
    for n, i in enumerate(starts):
        epoch = records[i].entry
        assert isinstance(epoch, ags.ContextEpoch)
        start = min(epoch.history_start, records[i].seq)
        if epoch.summary_seq is not None:
            start = min(start, epoch.summary_seq)
        lo = next(k for k, r in enumerate(records) if r.seq >= start)
        ranges.append((lo, starts[n + 1] if n + 1 < len(starts) else len(records), epoch))
    last: Projected | None = None
    carried_over = 0
    for lo, end, epoch in ranges:
        projected = project(records[lo:end], epoch)
        view = carried(records, lo, end, epoch, last)
        if view is not None:
            carried_over += 1
            assert view == projected, epoch.epoch
        last = Projected(lo, end, epoch, view if view is not None else projected)
    assert carried_over > len(ranges) // 2


async def test_a_rebuild_that_cannot_be_exact_says_why(make_runtime: Make) -> None:
    runtime = make_runtime([[ags.ToolCall("lookup", {"key": "a"})], "done"], tools=[lookup])
    session = await runtime.create_session()
    await session.prompt("calls 1")
    records = await session.log()
    config = ags.Config()

    unknown = rebuild(records, 1, specs={}, config=config, tools=["lookup"])
    assert not unknown.exact
    assert unknown.mismatch == "tool declarations not known here: lookup"

    other = ags.ToolSpec("lookup", "a different description", {"type": "object"})
    changed = rebuild(records, 2, specs={"lookup": other}, config=config, tools=["lookup"])
    assert not changed.exact
    assert "tool declarations differ" in changed.mismatch

    good = rebuild(records, 2, specs={"lookup": lookup.spec}, config=config, tools=["lookup"])
    assert good.exact and good.mismatch == ""
    with pytest.raises(ags.UsageError, match="no dispatched request 3: the session has 2"):
        rebuild(records, 3, specs={}, config=config)


async def test_a_smaller_window_cap_than_the_application_used_still_rebuilds(
    make_runtime: Make,
) -> None:
    config = ags.Config(max_transcript_messages=40)
    runtime = make_runtime(Replies(), tools=[lookup], config=config)
    session = await runtime.create_session()
    for turn in range(8):
        await session.prompt(f"calls {turn % 3} (turn {turn})")
    records = await session.log()
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    # Inspected with the default cap of a tool that does not know the application's: the
    # digest finds the window that was really used.
    narrow = ags.Config(max_transcript_messages=4)
    rebuilt = rebuild_all(records, specs={"lookup": lookup.spec}, config=narrow)
    assert all(r.exact for r in rebuilt)
    assert [r.request for r in rebuilt] == model.requests
