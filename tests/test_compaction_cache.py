"""Compaction that reads the cache: the summary request extends the request last dispatched.

The session's own model summarises by extending the live request (same system part, tools and
windowed history, the instruction appended as the last user message), so a provider reads the
summary's input from its prompt cache; a summariser of another provider gets the plain text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import agentsession as ags
from agentsession.compaction import CompactionPlan, cached_summary_request
from agentsession.log import Dispatch, SideCall
from agentsession.providers.cache_controls import CacheControls, cache_key_for
from agentsession.request import digest

Make = Callable[..., ags.Runtime]


def scripted(runtime: ags.Runtime) -> ags.ScriptedModel:
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    return model


async def test_summary_request_extends_the_last_dispatched_request(make_runtime: Make) -> None:
    @ags.tool
    def look(n: int) -> str:
        """Look something up."""
        return f"found {n}"

    runtime = make_runtime(
        ["a1", [ags.ToolCall("look", {"n": 2})], "a2", "a3", "## Goal\nCount.", "a4"],
        tools=[look],
        config=ags.Config(keep_user_turns=1, retry_base_delay=0),
    )
    session = await runtime.create_session()
    for text in ("one", "two", "three"):
        await session.prompt(text)
    sent = list(scripted(runtime).requests)
    last = sent[-1]
    assert await session.compact() is True
    summary = scripted(runtime).requests[-1]
    assert len(scripted(runtime).requests) == len(sent) + 1
    # Same system part and tools; the messages extend the last request's (its answer, then
    # the instruction): the shared prefix has the digest the log recorded for the dispatch.
    assert summary.system == last.system and summary.tools == last.tools
    shared = len(last.messages)
    assert summary.messages[:shared] == last.messages
    prefix = ags.Request(
        system=summary.system, messages=summary.messages[:shared], tools=last.tools
    )
    dispatches = [r.entry for r in await session.log() if isinstance(r.entry, Dispatch)]
    assert digest(prefix) == digest(last) == dispatches[-1].digest
    assert [m.content for m in summary.messages[shared:-1]] == ["a3"]
    instruction = summary.messages[-1]
    assert isinstance(instruction, ags.UserMessage)
    text = str(instruction.content)
    assert "begins: «three»" in text and "## Goal" in text and "USER: one" not in text
    # The summary is billed as a side call, and the next request starts from it.
    calls = [r.entry for r in await session.log() if isinstance(r.entry, SideCall)]
    assert [c.purpose for c in calls] == ["compaction"]
    await session.prompt("four")
    after = scripted(runtime).requests[-1]
    assert str(after.messages[0].content).endswith("## Goal\nCount.")
    assert [m.content for m in after.messages[1:]] == ["three", "a3", "four"]


async def test_summariser_of_another_provider_gets_plain_text(make_runtime: Make) -> None:
    elsewhere = ags.ModelProfile(provider="elsewhere", reports_usage=False, writes_titles=False)
    summarizer = ags.ScriptedModel(["## Goal\nCount."], name="small", profile=elsewhere)
    runtime = make_runtime(
        ["a1", "a2", "a3"],
        summarizer=summarizer,
        config=ags.Config(keep_user_turns=1, retry_base_delay=0),
    )
    session = await runtime.create_session()
    for text in ("one", "two", "three"):
        await session.prompt(text)
    assert await session.compact() is True
    (request,) = summarizer.requests
    assert [key for key, _ in request.system] == ["compaction"] and request.tools == ()
    (message,) = request.messages
    assert "USER: one" in str(message.content) and "ASSISTANT: a2" in str(message.content)
    assert "USER: three" not in str(message.content)
    assert len(scripted(runtime).requests) == 3  # the conversation's model was not asked


async def test_same_model_as_a_separate_summariser_reads_the_cache(make_runtime: Make) -> None:
    """A summariser with the conversation model's provider and name shares its cache."""
    summarizer = ags.ScriptedModel(["## Goal\nCount."])
    runtime = make_runtime(
        ["a1", "a2"], summarizer=summarizer, config=ags.Config(keep_user_turns=1)
    )
    session = await runtime.create_session()
    for text in ("one", "two"):
        await session.prompt(text)
    assert await session.compact() is True
    (request,) = summarizer.requests
    last = scripted(runtime).requests[-1]
    assert request.messages[: len(last.messages)] == last.messages
    assert request.system == last.system


def test_live_window_without_the_head_gives_no_cached_request() -> None:
    """A live window that starts at the kept tail holds nothing to summarise: no extension."""
    messages = (ags.UserMessage("five"), ags.AssistantMessage("a5"), ags.UserMessage("six"))
    live = ags.Request(
        system=(("core.date", "today"),), messages=messages, sources=((15,), (16,), (17,))
    )
    plan = CompactionPlan(head=(), cut_seq=15, kept_turns=2)
    assert cached_summary_request(live, plan) is None
    extended = cached_summary_request(live, CompactionPlan(head=(), cut_seq=17, kept_turns=1))
    assert extended is not None and extended.messages[:3] == messages
    assert extended.sources == (*live.sources, ())
    assert "begins: «six»" in str(extended.messages[-1].content)


async def test_compaction_setting_is_checked_and_every_mode_compacts(make_runtime: Make) -> None:
    with pytest.raises(ags.UsageError, match=r"Config\.compaction"):
        ags.Config(compaction="server")
    assert ags.Config().compaction == "local"
    for mode in ("local", "provider", "auto"):
        runtime = make_runtime(
            ["a1", "a2", "## Goal\nCount."],
            config=ags.Config(compaction=mode, keep_user_turns=1, retry_base_delay=0),
        )
        session = await runtime.create_session()
        for text in ("one", "two"):
            await session.prompt(text)
        # Provider compaction is not built yet: every mode compacts through the cache.
        assert await session.compact() is True
        sent = scripted(runtime).requests
        last, summary = sent[-2], sent[-1]
        assert summary.messages[: len(last.messages)] == last.messages


class Controlled(ags.ScriptedModel):
    """A scripted model that takes provider cache controls, as the SDK clients do."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies)
        self.controls: list[CacheControls] = []

    def stream_with(self, request: ags.Request, controls: CacheControls) -> AsyncIterator[Any]:
        self.controls.append(controls)
        return self.stream(request)


async def test_summary_call_goes_with_the_sessions_cache_key(make_runtime: Make) -> None:
    """The provider routes the summary to the cache the turns wrote: same key, same lifetime."""
    model = Controlled(["a1", "a2", "## Goal\nCount."])
    runtime = make_runtime(model=model, config=ags.Config(keep_user_turns=1, retry_base_delay=0))
    session = await runtime.create_session()
    for text in ("one", "two"):
        await session.prompt(text)
    assert await session.compact() is True
    turns, summary = model.controls[:-1], model.controls[-1]
    assert len(model.controls) == 3 == len(model.requests)
    assert summary.key == turns[-1].key == cache_key_for(session.id)
    assert summary.ttl == turns[-1].ttl
