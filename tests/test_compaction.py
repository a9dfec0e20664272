"""Compaction, budget preflight with and without auto-compaction, and the 200-turn window run."""

from __future__ import annotations

from typing import Any

import pytest

import agentsession as ags
from agentsession.budget import measure
from agentsession.log import ContextEpoch, Summary

from .conftest import MakeRuntime

Make = MakeRuntime


def requests(runtime: ags.Runtime) -> list[ags.Request]:
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    return model.requests


async def test_compact_keeps_last_turns_and_opens_epoch(make_runtime: Make) -> None:
    # Another model: it cannot read the conversation's cache, so it gets the history as text.
    summarizer = ags.ScriptedModel(["## Goal\nCount things."], name="summariser")
    runtime = make_runtime(
        ["a1", "a2", "a3", "a4"],
        summarizer=summarizer,
        config=ags.Config(keep_user_turns=2, retry_base_delay=0),
    )
    session = await runtime.create_session()
    for text in ("one", "two", "three"):
        await session.prompt(text)
    assert await session.compact() is True
    (summary_request,) = summarizer.requests
    sent = repr(summary_request)
    assert "USER: one" in sent and "ASSISTANT: a1" in sent
    assert "USER: two" not in sent  # kept verbatim, not summarised
    await session.prompt("four")
    request = requests(runtime)[-1]
    first = request.messages[0]
    assert isinstance(first, ags.UserMessage)
    assert str(first.content).endswith("## Goal\nCount things.")
    assert [m.content for m in request.messages[1:]] == ["two", "a2", "three", "a3", "four"]
    assert [k for k, _ in request.system] == ["core.date", "core.environment", "core.permissions"]
    log = [r.entry for r in await session.log()]
    epochs = [e for e in log if isinstance(e, ContextEpoch)]
    assert [e.reason for e in epochs] == ["start", "compaction"]
    assert any(isinstance(e, Summary) for e in log)
    # The user transcript still has everything; the summary is not part of it.
    assert [m.content for m in session.messages if m.role == "user"] == [
        "one",
        "two",
        "three",
        "four",
    ]
    checkpoints = session.system_prompt_checkpoints()
    assert list(checkpoints[-1].changed) == ["core.date", "core.environment", "core.permissions"]


async def test_compact_with_nothing_to_summarise(make_runtime: Make) -> None:
    runtime = make_runtime(["a"])
    session = await runtime.create_session()
    assert await session.compact() is False
    await session.prompt("only turn")
    assert await session.compact() is False


async def test_compaction_never_splits_a_turn(make_runtime: Make) -> None:
    @ags.tool
    def step(n: int) -> str:
        """One step."""
        return f"step {n}"

    replies: list[Any] = []
    for turn in range(3):
        replies += [[ags.ToolCall("step", {"n": turn})], f"done {turn}"]
    summarizer = ags.ScriptedModel(["summary"])
    runtime = make_runtime(
        [*replies, "final"],
        tools=[step],
        summarizer=summarizer,
        config=ags.Config(keep_user_turns=1, retry_base_delay=0),
    )
    session = await runtime.create_session()
    for turn in range(3):
        await session.prompt(f"turn {turn}")
    assert await session.compact()
    await session.prompt("next")
    request = requests(runtime)[-1]
    roles = [m.role for m in request.messages]
    assert roles == ["user", "user", "assistant", "tool", "assistant", "user"]
    assert request.messages[1].content == "turn 2"


async def request_tokens(session: ags.Session, runtime: ags.Runtime, text: str) -> int:
    preview = await session.preview_request(text)
    return measure(preview, runtime.token_counter).total


async def test_one_token_over_budget_without_auto_compaction(make_runtime: Make) -> None:
    runtime = make_runtime(["a", "b"], config=ags.Config(auto_compact=False, retry_base_delay=0))
    session = await runtime.create_session()
    await session.prompt("first " * 50)
    tokens = await request_tokens(session, runtime, "second")
    tight = make_runtime(
        ["never"],
        config=ags.Config(
            auto_compact=False,
            context_window=tokens - 1,
            reserve_output_tokens=0,
            retry_base_delay=0,
        ),
    )
    reopened = await tight.open_session(session.id)
    before = await reopened.log()
    with pytest.raises(ags.BudgetExceededError) as info:
        await reopened.prompt("second")
    assert info.value.tokens == tokens and info.value.budget == tokens - 1
    assert "message[0]:user" in str(info.value)
    assert await reopened.log() == before
    assert requests(tight) == []
    # Exactly at the budget it fits.
    exact = make_runtime(
        ["fits"],
        config=ags.Config(
            auto_compact=False, context_window=tokens, reserve_output_tokens=0, retry_base_delay=0
        ),
    )
    assert (await (await exact.open_session(session.id)).prompt("second")).text == "fits"


async def test_one_token_over_budget_with_auto_compaction(make_runtime: Make) -> None:
    runtime = make_runtime(["a", "b"], config=ags.Config(auto_compact=False, retry_base_delay=0))
    session = await runtime.create_session()
    await session.prompt("first " * 50)
    await session.prompt("again " * 50)
    tokens = await request_tokens(session, runtime, "third")
    summarizer = ags.ScriptedModel(["short summary"])
    tight = make_runtime(
        ["after compaction"],
        summarizer=summarizer,
        config=ags.Config(
            context_window=tokens - 1,
            reserve_output_tokens=0,
            keep_user_turns=1,
            compact_threshold=1.0,
            retry_base_delay=0,
        ),
    )
    reopened = await tight.open_session(session.id)
    result = await reopened.prompt("third")
    assert result.text == "after compaction"
    assert len(summarizer.requests) == 1
    (request,) = requests(tight)
    assert measure(request, tight.token_counter).total <= tokens - 1
    assert "short summary" in str(request.messages[0].content)
    kinds = [r.entry.kind for r in await reopened.log()]
    assert kinds.count("summary") == 1 and kinds.count("epoch") == 2


async def test_auto_compaction_off_disables_threshold(make_runtime: Make) -> None:
    runtime = make_runtime(
        ["a", "b", "c"],
        config=ags.Config(auto_compact=False, compact_threshold=0.01, retry_base_delay=0),
    )
    session = await runtime.create_session()
    for text in ("1", "2", "3"):
        await session.prompt(text)
    assert "summary" not in [r.entry.kind for r in await session.log()]


async def test_failed_summariser_leaves_old_epoch(make_runtime: Make) -> None:
    summarizer = ags.ScriptedModel([RuntimeError("summariser down")])
    runtime = make_runtime(["a", "b", "c"], summarizer=summarizer)
    session = await runtime.create_session()
    await session.prompt("1")
    await session.prompt("2")
    await session.prompt("3")
    before = await session.log()
    with pytest.raises(ags.ProviderError):
        await session.compact()
    assert await session.log() == before
    assert session.busy is False


async def test_200_turns_keep_the_current_value_after_the_window_passes(
    make_runtime: Make,
) -> None:
    value = {"v": "alpha"}
    runtime = make_runtime(
        lambda request: "ok",
        components=[ags.ContextComponent("plugin.flag.mode", lambda: value["v"])],
        config=ags.Config(max_transcript_messages=60, retry_base_delay=0),
    )
    session = await runtime.create_session()
    for turn in range(200):
        if turn == 10:
            value["v"] = "beta"
        await session.prompt(f"turn {turn}")
    sent = requests(runtime)
    assert len(sent) == 200
    for i, request in enumerate(sent):
        assert len([m for m in request.messages if m.role != "system"]) <= 60
        first = request.messages[0]
        assert isinstance(first, ags.UserMessage)
        told = dict(request.system).get("plugin.flag.mode", "")
        told += "".join(m.content for m in request.messages if isinstance(m, ags.SystemMessage))
        if i >= 10:
            assert "beta" in told, f"request {i} lost the current value"
            assert told.rfind("beta") >= told.rfind("alpha")
    epochs = [r.entry for r in await session.log() if isinstance(r.entry, ContextEpoch)]
    assert len(epochs) > 1 and all(e.reason in ("start", "window") for e in epochs)


async def test_window_step_changes_prefix_less_often(make_runtime: Make) -> None:
    counts = {}
    for step in (1, 5):
        runtime = make_runtime(
            lambda request: "ok",
            store=ags.MemoryStore(),
            config=ags.Config(max_transcript_messages=20, window_step=step, retry_base_delay=0),
        )
        session = await runtime.create_session()
        for turn in range(60):
            await session.prompt(f"turn {turn}")
        epochs = [r for r in await session.log() if isinstance(r.entry, ContextEpoch)]
        counts[step] = len(epochs)
    assert counts[5] < counts[1]


async def test_model_switch_after_compaction_keeps_the_summary(make_runtime: Make) -> None:
    runtime = make_runtime(
        ["a", "b", "c"],
        summarizer=ags.ScriptedModel(["what happened before"]),
        config=ags.Config(keep_user_turns=1, retry_base_delay=0),
    )
    session = await runtime.create_session()
    for text in ("1", "2", "3"):
        await session.prompt(text)
    assert await session.compact()
    other = ags.ScriptedModel(["new model"], name="scripted:other")
    await session.switch_model(other)
    await session.prompt("4")
    (request,) = other.requests
    assert "what happened before" in str(request.messages[0].content)
    assert [m.content for m in request.messages[1:]] == ["3", "c", "4"]


async def test_failed_summariser_over_the_threshold_does_not_fail_a_fitting_prompt(
    make_runtime: Make,
) -> None:
    summarizer = ags.ScriptedModel([RuntimeError("summariser down")])
    runtime = make_runtime(
        ["a", "b", "c"],
        summarizer=summarizer,
        config=ags.Config(
            context_window=2_000, compact_threshold=0.01, keep_user_turns=1, retry_base_delay=0
        ),
    )
    session = await runtime.create_session()
    await session.prompt("1")
    await session.prompt("2")
    assert (await session.prompt("3")).text == "c"
    assert len(summarizer.requests) == 1
    assert "summary" not in [r.entry.kind for r in await session.log()]
