"""The turn loop end to end on SQLite: tools, errors, events, transcript, reopen, sync facade."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import agentsession as ags
from agentsession.providers.base import ModelDone, ModelEvent

from .conftest import MakeRuntime

Make = MakeRuntime


@ags.tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@ags.tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


async def test_multi_step_turn_stores_calls_and_results(make_runtime: Make) -> None:
    runtime = make_runtime([[ags.ToolCall("add", {"a": 2, "b": 3})], "The sum is 5."], tools=[add])
    session = await runtime.create_session()
    result = await session.prompt("What is 2 + 3?")
    assert result.text == "The sum is 5."
    assert result.steps == 2
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    tool_message = session.messages[2]
    assert isinstance(tool_message, ags.ToolResultMessage)
    assert tool_message.content == "5" and not tool_message.is_error
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    second = model.requests[1]
    assert [m.role for m in second.messages] == ["user", "assistant", "tool"]
    assert [t.name for t in second.tools] == ["add"]


async def test_tool_that_raises_becomes_error_result(make_runtime: Make) -> None:
    runtime = make_runtime(
        [[ags.ToolCall("explode", {"reason": "x"})], "I saw the error."], tools=[explode]
    )
    session = await runtime.create_session()
    result = await session.prompt("go")
    assert result.text == "I saw the error."
    tool_message = session.messages[2]
    assert isinstance(tool_message, ags.ToolResultMessage)
    assert tool_message.is_error
    assert "RuntimeError: boom: x" in str(tool_message.content)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"a": 1}, "missing required b"),
        ({"a": 1, "b": "two"}, "b must be of type integer"),
        ({"a": 1, "b": 2, "c": 3}, "unexpected c"),
    ],
)
async def test_bad_arguments_get_a_clear_error_result(
    make_runtime: Make, arguments: dict[str, Any], expected: str
) -> None:
    runtime = make_runtime([[ags.ToolCall("add", arguments)], "ok"], tools=[add])
    session = await runtime.create_session()
    await session.prompt("go")
    result = session.messages[2]
    assert isinstance(result, ags.ToolResultMessage)
    assert result.is_error
    assert "Invalid arguments for tool add" in str(result.content)
    assert expected in str(result.content)


async def test_unknown_tool_is_refused_not_forwarded(make_runtime: Make) -> None:
    runtime = make_runtime([[ags.ToolCall("rm_rf", {})], "fine"], tools=[add])
    session = await runtime.create_session()
    await session.prompt("go")
    result = session.messages[2]
    assert isinstance(result, ags.ToolResultMessage)
    assert result.content == "Unknown tool: rm_rf" and result.is_error


async def test_parallel_calls_each_get_one_result(make_runtime: Make) -> None:
    calls = [ags.ToolCall("add", {"a": 1, "b": 1}), ags.ToolCall("add", {"a": 2, "b": 2})]
    runtime = make_runtime([calls, "done"], tools=[add])
    session = await runtime.create_session()
    await session.prompt("go")
    assistant = session.messages[1]
    assert isinstance(assistant, ags.AssistantMessage)
    results = [m for m in session.messages if isinstance(m, ags.ToolResultMessage)]
    assert [r.call_id for r in results] == [c.id for c in assistant.tool_calls]
    assert [r.content for r in results] == ["2", "4"]


async def test_stream_yields_events_in_order(make_runtime: Make) -> None:
    runtime = make_runtime(
        [[ags.ToolCall("add", {"a": 1, "b": 2})], "three, as a long enough reply to stream"],
        tools=[add],
    )
    session = await runtime.create_session()
    events = [e async for e in session.stream("sum?")]
    kinds = [e.kind for e in events]
    assert kinds[-1] == "turn_finished"
    assert kinds.index("tool_call_started") < kinds.index("tool_result")
    deltas = [e.text for e in events if isinstance(e, ags.TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == "three, as a long enough reply to stream"
    committed = [e for e in events if isinstance(e, ags.StepCommitted)]
    assert [c.what for c in committed] == [
        "admission",
        "response",
        "tool_result",
        "admission",
        "response",
    ]
    seqs = [c.first_seq for c in committed]
    assert seqs == sorted(seqs)


async def test_reopen_in_new_runtime_keeps_transcript(make_runtime: Make) -> None:
    runtime = make_runtime(["hello there"])
    session = await runtime.create_session()
    await session.prompt("hi")
    other = make_runtime(["again"])
    reopened = await other.open_session(session.id)
    assert reopened.messages == session.messages
    await reopened.prompt("more")
    assert [m.role for m in reopened.messages] == ["user", "assistant", "user", "assistant"]


async def test_open_unknown_session_is_typed_error(make_runtime: Make) -> None:
    runtime = make_runtime()
    with pytest.raises(ags.SessionNotFoundError):
        await runtime.open_session("does-not-exist")


async def test_transcript_hides_runtime_metadata(make_runtime: Make) -> None:
    runtime = make_runtime(["a", "b"])
    session = await runtime.create_session()
    await session.prompt("one")
    await session.prompt("two")
    log_kinds = {r.entry.kind for r in await session.log()}
    assert {"epoch", "dispatch", "system_prompt_checkpoint"} <= log_kinds
    assert {m.role for m in session.messages} == {"user", "assistant"}
    assert len(session.messages) == 4


async def test_concurrent_prompt_is_busy(make_runtime: Make) -> None:
    runtime = make_runtime(["a", "b"])
    session = await runtime.create_session()
    stream = session.stream("first")
    await anext(stream)
    with pytest.raises(ags.SessionBusyError):
        await session.prompt("second")
    async for _ in stream:
        pass
    assert (await session.prompt("third")).text == "b"


async def test_max_steps_stops_a_looping_model(make_runtime: Make) -> None:
    loop_forever = lambda request: [ags.ToolCall("add", {"a": 1, "b": 1})]  # noqa: E731
    runtime = make_runtime(
        model=ags.ScriptedModel(loop_forever),
        tools=[add],
        config=ags.Config(max_steps=3, retry_base_delay=0),
    )
    session = await runtime.create_session()
    with pytest.raises(ags.MaxStepsExceededError):
        await session.prompt("loop")
    assert len(runtime.scripted.requests) == 3


async def test_empty_prompt_is_usage_error(make_runtime: Make) -> None:
    session = await make_runtime(["x"]).create_session()
    empty: str | list[ags.TextPart]
    for empty in ([], "", "  \n"):
        with pytest.raises(ags.UsageError):
            await session.prompt(empty)
    assert await session.log() == []


def test_sync_facade(db_path: Any, tmp_path: Any) -> None:
    model = ags.ScriptedModel(["sync reply"])
    runtime = ags.Runtime(store=ags.SQLiteStore(db_path), model=model, project_dir=tmp_path)
    try:
        session = runtime.create_session_sync()
        assert session.prompt_sync("hello").text == "sync reply"
        again = runtime.open_session_sync(session.id)
        assert [m.role for m in again.messages] == ["user", "assistant"]
    finally:
        runtime.close_sync()


class SigningModel:
    """A model whose provider signs its replies with opaque data, as reasoning models do."""

    def __init__(self, name: str, provider: str, data: dict[str, Any]) -> None:
        self._name, self._data = name, data
        self._profile = ags.ModelProfile(provider=provider, reports_usage=False)
        self.requests: list[ags.Request] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def profile(self) -> ags.ModelProfile:
        return self._profile

    async def stream(self, request: ags.Request) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        message = ags.AssistantMessage(
            content=f"signed {len(self.requests)}",
            provider=self._profile.provider,
            provider_data=self._data,
        )
        yield ModelDone(message)


async def test_switch_model_drops_other_providers_opaque_data(make_runtime: Make) -> None:
    first = SigningModel("anthropic:x", "anthropic", {"anthropic-messages": {"sig": "abc"}})
    runtime = make_runtime(model=first)
    session = await runtime.create_session()
    await session.prompt("hello")
    second = ags.ScriptedModel(["ok"], name="scripted:second")
    await session.switch_model(second)
    await session.prompt("next")
    (request,) = second.requests
    carried = [m for m in request.messages if isinstance(m, ags.AssistantMessage)]
    assert [m.content for m in carried] == ["signed 1"]
    assert all(m.provider_data == {} for m in carried)
    assert request.messages[0].content == "hello"


async def test_dispatch_records_carry_a_cache_diagnosis(make_runtime: Make, clock: Any) -> None:
    from datetime import datetime

    from agentsession.log import Dispatch

    runtime = make_runtime([[ags.ToolCall("add", {"a": 1, "b": 2})], "3", "again"], tools=[add])
    session = await runtime.create_session()
    await session.prompt("sum")
    clock.moment = datetime(2026, 7, 1)
    await session.prompt("more")
    other = ags.ScriptedModel(["switched"], name="scripted:other")
    await session.switch_model(other)
    await session.prompt("last")
    caches = [r.entry.cache for r in await session.log() if isinstance(r.entry, Dispatch)]
    assert caches == ["first", "hit", "hit", "model_changed"]


async def test_same_provider_keeps_its_opaque_data(make_runtime: Make) -> None:
    data = {"anthropic-messages": {"signature": "sig"}}
    model = SigningModel("anthropic:x", "anthropic", data)
    runtime = make_runtime(model=model)
    session = await runtime.create_session()
    await session.prompt("hello")
    await session.prompt("next")
    kept = [m for m in model.requests[-1].messages if isinstance(m, ags.AssistantMessage)]
    assert kept[-1].provider_data == data


async def test_reopening_with_another_model_starts_an_epoch(make_runtime: Make) -> None:
    from agentsession.log import ContextEpoch

    runtime = make_runtime(["a"])
    session = await runtime.create_session()
    await session.prompt("one")
    other = ags.ScriptedModel(["b", "c"], name="scripted:other")
    reopened = await make_runtime(model=other).open_session(session.id)
    await reopened.prompt("two")
    await reopened.prompt("three")
    epochs = [r.entry for r in await reopened.log() if isinstance(r.entry, ContextEpoch)]
    assert [(e.reason, e.model) for e in epochs] == [
        ("start", "scripted"),
        ("model_switch", "scripted:other"),
    ]
    assert [m.content for m in other.requests[0].messages] == ["one", "a", "two"]


async def test_switch_to_a_model_of_the_same_name_keeps_the_epoch(make_runtime: Make) -> None:
    from agentsession.log import ContextEpoch

    runtime = make_runtime(["a"])
    session = await runtime.create_session()
    await session.prompt("one")
    again = ags.ScriptedModel(["b"])  # a new client object for the same model
    await session.switch_model(again)
    await session.prompt("two")
    epochs = [r for r in await session.log() if isinstance(r.entry, ContextEpoch)]
    assert len(epochs) == 1
    first = runtime.scripted.requests[0]
    assert again.requests[0].system == first.system
    assert again.requests[0].messages[: len(first.messages)] == first.messages


class _Refusing:
    """A model whose lowering refuses the request, as an SDK model's validator does."""

    name = "refusing"
    profile = ags.ModelProfile(provider="test")

    async def stream(self, request: ags.Request) -> AsyncIterator[Any]:
        raise ags.RequestValidationError("orphaned result", fmt="gemini")
        yield  # an async generator, like every model


async def test_package_errors_from_the_model_keep_their_type(make_runtime: Make) -> None:
    runtime = make_runtime(model=_Refusing())
    session = await runtime.create_session()
    with pytest.raises(ags.RequestValidationError):
        await session.prompt("hi")
    assert (await session.log())[-1].entry.kind == "provider_failed"


async def test_a_scripted_package_error_is_a_provider_failure(make_runtime: Make) -> None:
    # DESIGN §4: whatever a ScriptedModel reply raises ends the prompt with ProviderError.
    scripted = ags.RequestValidationError("orphaned result", fmt="gemini")
    runtime = make_runtime([scripted])
    session = await runtime.create_session()
    with pytest.raises(ags.ProviderError) as caught:
        await session.prompt("hi")
    assert caught.value.__cause__ is scripted
    assert (await session.log())[-1].entry.kind == "provider_failed"


async def test_a_session_another_process_drives_is_not_deleted(make_runtime: Any) -> None:
    runtime = make_runtime(["hi"])
    session = await runtime.create_session()
    await session.prompt("hello")
    await session.close()  # this process lets go of its lease
    # Another machine's worker takes it for a long turn.
    assert await runtime.store.acquire_lease(session.id, "elsewhere:4242", 60)
    with pytest.raises(ags.ConflictError, match="being driven by another process") as driven:
        await runtime.delete_session(session.id)
    assert (driven.value.session_id, driven.value.holder) == (session.id, "elsewhere:4242")
    assert await runtime.store.get_session(session.id)  # still there
    await runtime.store.release_lease(session.id, "elsewhere:4242")
    await runtime.delete_session(session.id)
    with pytest.raises(ags.SessionNotFoundError):
        await runtime.store.get_session(session.id)
    with pytest.raises(ags.SessionNotFoundError):
        await runtime.delete_session(session.id)


async def test_a_stale_session_object_gets_a_conflict_that_says_where_the_log_is(
    make_runtime: Any,
) -> None:
    runtime = make_runtime(["one", "two", "three"])
    first = await runtime.create_session()
    await first.prompt("hello")
    stale = await runtime.open_session(first.id)
    await first.prompt("again")  # the log moves on behind the stale object
    end = (await runtime.store.get_session(first.id)).next_seq
    with pytest.raises(ags.ConflictError, match=r"session\.refresh\(\)") as caught:
        await stale.prompt("from the stale one")
    lost = caught.value
    assert lost.session_id == first.id and lost.found_seq == end
    assert lost.expected_seq is not None and lost.expected_seq < end
