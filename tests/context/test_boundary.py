"""Scenarios of the safe boundary, read off the requests the scripted model received."""

from __future__ import annotations

from datetime import datetime

import pytest

import agentsession as ags
from agentsession.context import LoadResult
from agentsession.log import Dispatch, MidConversationSystemMessage, ProviderFailed

from ..conftest import Clock, MakeRuntime

Make = MakeRuntime


def requests(runtime: ags.Runtime) -> list[ags.Request]:
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    return model.requests


def system_messages(request: ags.Request) -> list[ags.SystemMessage]:
    return [m for m in request.messages if isinstance(m, ags.SystemMessage)]


def assert_prefix(previous: ags.Request, current: ags.Request) -> None:
    """``current`` starts with everything ``previous`` sent, byte for byte."""
    assert current.system == previous.system
    assert current.messages[: len(previous.messages)] == previous.messages


class Box:
    """A mutable value behind a component."""

    def __init__(self, value: LoadResult | str) -> None:
        self.value = value

    def __call__(self) -> LoadResult | str:
        return self.value


async def test_first_request_has_baseline_and_no_update(make_runtime: Make) -> None:
    runtime = make_runtime(["hi"])
    session = await runtime.create_session()
    await session.prompt("hello")
    (request,) = requests(runtime)
    assert [key for key, _ in request.system] == [
        "core.date",
        "core.environment",
        "core.permissions",
    ]
    assert "2026-01-01" in dict(request.system)["core.date"]
    assert system_messages(request) == []


async def test_date_change_emits_one_message_and_keeps_prefix(
    make_runtime: Make, clock: Clock
) -> None:
    runtime = make_runtime(["one", "two", "three"])
    session = await runtime.create_session()
    await session.prompt("first")
    clock.moment = datetime(2026, 1, 2, 0, 0, 1)
    await session.prompt("second")
    first, second = requests(runtime)
    assert_prefix(first, second)
    added = second.messages[len(first.messages) :]
    assert [m.role for m in added] == ["assistant", "user", "system"]
    (update,) = system_messages(second)
    assert "Today's date is now Friday, 2026-01-02." in update.content
    assert "core.environment" not in update.content
    # Nothing changes: no message, and the old one stays in place byte-identical.
    await session.prompt("third")
    third = requests(runtime)[2]
    assert_prefix(second, third)
    assert system_messages(third) == [update]


async def test_two_changes_combine_into_one_message(make_runtime: Make, clock: Clock) -> None:
    status = Box("green")
    runtime = make_runtime(
        ["a", "b"], components=[ags.ContextComponent("plugin.ci.status", status)]
    )
    session = await runtime.create_session()
    await session.prompt("first")
    status.value = "red"
    clock.moment = datetime(2026, 3, 4, 9, 0)
    await session.prompt("second")
    (update,) = system_messages(requests(runtime)[1])
    assert update.content.index("[core.date]") < update.content.index("[plugin.ci.status]")
    assert "\nred" in update.content
    assert requests(runtime)[1].messages[-1] == update


async def test_unavailable_keeps_prior_state_and_emits_nothing(make_runtime: Make) -> None:
    status = Box(ags.UNAVAILABLE)
    runtime = make_runtime(
        ["a", "b", "c", "d"], components=[ags.ContextComponent("plugin.ci.status", status)]
    )
    session = await runtime.create_session()
    await session.prompt("1")
    # Before the first successful load the component is simply omitted.
    assert "plugin.ci.status" not in dict(requests(runtime)[0].system)
    status.value = "green"
    await session.prompt("2")
    (update,) = system_messages(requests(runtime)[1])
    assert "green" in update.content
    status.value = ags.UNAVAILABLE
    await session.prompt("3")
    assert system_messages(requests(runtime)[2]) == [update]
    status.value = "green"  # back, unchanged: still nothing new
    await session.prompt("4")
    assert system_messages(requests(runtime)[3]) == [update]


async def test_loader_that_returns_unavailable_keeps_state_and_one_that_raises_fails(
    make_runtime: Make,
) -> None:
    calls = {"n": 0}

    def flaky() -> LoadResult | str:
        calls["n"] += 1
        if calls["n"] == 2:
            return ags.UNAVAILABLE  # the explicit way to say "temporarily down"
        if calls["n"] == 4:
            raise OSError("source down")
        return "stable"

    runtime = make_runtime(["a", "b", "c"], components=[ags.ContextComponent("plugin.x.y", flaky)])
    session = await runtime.create_session()
    for text in ("1", "2", "3"):
        await session.prompt(text)
    assert all(system_messages(r) == [] for r in requests(runtime))
    assert calls["n"] == 3  # sampled exactly once per provider call
    with pytest.raises(ags.ContextLoadError, match=r"plugin\.x\.y"):
        await session.prompt("4")
    assert len(requests(runtime)) == 3


async def test_absent_emits_removal_text_once(make_runtime: Make) -> None:
    status = Box("present")
    runtime = make_runtime(
        ["a", "b", "c"],
        components=[ags.ContextComponent("plugin.ci.status", status, removal="CI status gone.")],
    )
    session = await runtime.create_session()
    await session.prompt("1")
    status.value = ags.ABSENT
    await session.prompt("2")
    await session.prompt("3")
    second, third = requests(runtime)[1:]
    (removal,) = system_messages(second)
    assert "CI status gone." in removal.content
    assert system_messages(third) == [removal]


async def test_plugin_registered_mid_session_and_reloads(make_runtime: Make) -> None:
    runtime = make_runtime(["a", "b", "c", "d", "e"])
    session = await runtime.create_session()
    await session.prompt("1")
    scope = runtime.plugin("demo")
    scope.replay([ags.ContextComponent("plugin.demo.status", lambda: "ready")])
    await session.prompt("2")
    (added,) = system_messages(requests(runtime)[1])
    assert "[plugin.demo.status]\nready" in added.content
    # An unchanged reload emits nothing.
    scope.replay([ags.ContextComponent("plugin.demo.status", lambda: "ready")])
    await session.prompt("3")
    assert system_messages(requests(runtime)[2]) == [added]
    # A reload that drops the component announces its removal once.
    scope.replay([])
    await session.prompt("4")
    await session.prompt("5")
    fourth, fifth = requests(runtime)[3:]
    removal = system_messages(fourth)[-1]
    assert "[plugin.demo.status]" in removal.content and "no longer applies" in removal.content
    assert system_messages(fifth) == system_messages(fourth)


async def test_handle_remove_and_duplicate_keys(make_runtime: Make) -> None:
    runtime = make_runtime(["a", "b"])
    handle = runtime.register_component(ags.ContextComponent("plugin.a.b", lambda: "x"))
    with pytest.raises(ags.UsageError, match="duplicate"):
        runtime.register_component(ags.ContextComponent("plugin.a.b", lambda: "y"))
    with pytest.raises(ags.UsageError, match=r"core\. namespace"):
        runtime.register_component(ags.ContextComponent("core.date", lambda: "y"))
    session = await runtime.create_session()
    await session.prompt("1")
    handle.remove()
    handle.remove()  # idempotent
    await session.prompt("2")
    (removal,) = system_messages(requests(runtime)[1])
    assert "[plugin.a.b]" in removal.content


async def test_component_order_is_builtins_then_plugins_by_key(make_runtime: Make) -> None:
    runtime = make_runtime(
        ["a"],
        components=[
            ags.ContextComponent("plugin.zeta.k", lambda: "z"),
            ags.ContextComponent("plugin.alpha.k", lambda: "a"),
        ],
    )
    session = await runtime.create_session()
    await session.prompt("1")
    keys = [k for k, _ in requests(runtime)[0].system]
    assert keys == [
        "core.date",
        "core.environment",
        "core.permissions",
        "plugin.alpha.k",
        "plugin.zeta.k",
    ]


async def test_update_follows_tool_results(make_runtime: Make) -> None:
    status = Box("v1")

    @ags.tool
    def bump() -> str:
        """Change the status."""
        status.value = "v2"
        return "bumped"

    runtime = make_runtime(
        [[ags.ToolCall("bump", {})], "done"],
        tools=[bump],
        components=[ags.ContextComponent("plugin.s.v", status)],
    )
    session = await runtime.create_session()
    await session.prompt("bump it")
    second = requests(runtime)[1]
    assert [m.role for m in second.messages] == ["user", "assistant", "tool", "system"]
    assert "v2" in second.messages[-1].content


async def test_provider_failure_keeps_admitted_message_and_retry_replays_it(
    make_runtime: Make, clock: Clock
) -> None:
    runtime = make_runtime(["ok", RuntimeError("socket closed"), "recovered"])
    session = await runtime.create_session()
    await session.prompt("1")
    clock.moment = datetime(2026, 1, 5, 8, 0)
    with pytest.raises(ags.ProviderError) as info:
        await session.prompt("2")
    assert isinstance(info.value.__cause__, RuntimeError)
    log = await session.log()
    mids = [r.entry for r in log if isinstance(r.entry, MidConversationSystemMessage)]
    assert len(mids) == 1 and "2026-01-05" in mids[0].text
    assert isinstance(log[-1].entry, ProviderFailed)
    assert [m.role for m in session.messages] == ["user", "assistant", "user"]
    clock.moment = datetime(2026, 1, 6, 8, 0)  # a retry replays; it does not re-sample
    result = await session.retry()
    assert result.text == "recovered"
    failed, replayed = requests(runtime)[1:]
    assert replayed == failed
    digests = [r.entry.digest for r in await session.log() if isinstance(r.entry, Dispatch)]
    assert digests[-1] == digests[-2]


async def test_transient_failure_is_retried_with_the_same_request(make_runtime: Make) -> None:
    runtime = make_runtime([ags.TransientProviderError("429"), "fine"])
    session = await runtime.create_session()
    events = [e async for e in session.stream("hi")]
    assert any(isinstance(e, ags.ProviderRetry) for e in events)
    first, second = requests(runtime)
    assert first == second
    dispatches = [r for r in await session.log() if isinstance(r.entry, Dispatch)]
    assert len(dispatches) == 1


async def test_transient_failures_exhaust_retries(make_runtime: Make) -> None:
    runtime = make_runtime(
        [ags.TransientProviderError("503")] * 3,
        config=ags.Config(provider_retries=2, retry_base_delay=0),
    )
    session = await runtime.create_session()
    with pytest.raises(ags.TransientProviderError):
        await session.prompt("hi")
    assert len(requests(runtime)) == 3
    assert [m.role for m in session.messages] == ["user"]


async def test_budget_rejection_admits_nothing(make_runtime: Make) -> None:
    runtime = make_runtime(["a"], config=ags.Config(context_window=60, retry_base_delay=0))
    session = await runtime.create_session()
    before = await session.log()
    with pytest.raises(ags.BudgetExceededError) as info:
        await session.prompt("word " * 500)
    assert info.value.text == "word " * 500
    assert info.value.contributors
    assert await session.log() == before == []
    assert requests(runtime) == []
    assert session.messages == []


async def test_preview_request_admits_nothing(make_runtime: Make, clock: Clock) -> None:
    runtime = make_runtime(["a"])
    session = await runtime.create_session()
    preview = await session.preview_request("hello")
    assert await session.log() == []
    await session.prompt("hello")
    assert requests(runtime)[0] == preview


async def test_system_prompt_checkpoints(make_runtime: Make, clock: Clock) -> None:
    status = Box("on")
    runtime = make_runtime(["a", "b", "c"], components=[ags.ContextComponent("plugin.s.v", status)])
    session = await runtime.create_session()
    await session.prompt("1")
    await session.prompt("2")
    status.value = ags.ABSENT
    await session.prompt("3")
    checkpoints = session.system_prompt_checkpoints()
    assert len(checkpoints) == 2
    first, removal = checkpoints
    assert list(first.changed) == [
        "core.date",
        "core.environment",
        "core.permissions",
        "plugin.s.v",
    ]
    assert first.message_count == 1
    assert removal.changed == {"plugin.s.v": None}
    assert removal.message_count == 5
    first.changed["core.date"] = "tampered"
    assert session.system_prompt_checkpoints()[0].changed["core.date"] != "tampered"


async def test_model_switch_starts_epoch_and_hides_old_messages(
    make_runtime: Make, clock: Clock
) -> None:
    runtime = make_runtime(["a", "b"])
    session = await runtime.create_session()
    await session.prompt("1")
    clock.moment = datetime(2026, 2, 1, 10, 0)
    await session.prompt("2")
    assert len(system_messages(requests(runtime)[1])) == 1
    other = ags.ScriptedModel(["from the new model"], name="scripted:other")
    await session.switch_model(other)
    clock.moment = datetime(2026, 2, 2, 10, 0)
    await session.prompt("3")
    (request,) = other.requests
    assert system_messages(request) == []
    assert "2026-02-02" in dict(request.system)["core.date"]
    assert [m.role for m in request.messages] == ["user", "assistant", "user", "assistant", "user"]
    log = await session.log()
    assert sum(isinstance(r.entry, MidConversationSystemMessage) for r in log) == 1
    assert all(m.role != "system" for m in session.messages)


async def test_title_sees_only_the_user_transcript(make_runtime: Make) -> None:
    title_model = ags.ScriptedModel(["Planning a trip"])
    runtime = make_runtime(
        ["Sure."],
        title_model=title_model,
        components=[ags.ContextComponent("plugin.secret.v", lambda: "SECRET-CONTEXT")],
    )
    session = await runtime.create_session()
    await session.prompt("Help me plan a trip")
    assert await session.named() == "Planning a trip"
    (request,) = title_model.requests
    sent = repr(request)
    assert "Help me plan a trip" in sent
    assert "SECRET-CONTEXT" not in sent and "core.date" not in sent and "2026" not in sent
    infos = await runtime.list_sessions()
    assert infos[0].title == "Planning a trip"


async def test_new_prompt_after_a_failure_follows_the_failed_input(make_runtime: Make) -> None:
    runtime = make_runtime(["ok", ValueError("bad gateway"), "after"])
    session = await runtime.create_session()
    await session.prompt("1")
    with pytest.raises(ags.ProviderError):
        await session.prompt("2")
    assert (await session.prompt("3")).text == "after"
    last = requests(runtime)[-1]
    assert [m.content for m in last.messages] == ["1", "ok", "2", "3"]
    assert [m.content for m in session.messages] == ["1", "ok", "2", "3", "after"]
    with pytest.raises(ags.UsageError, match="nothing to retry"):
        await session.retry()


async def test_failing_title_model_falls_back_to_the_first_words(make_runtime: Make) -> None:
    runtime = make_runtime(["Sure."], title_model=ags.ScriptedModel([OSError("no network")]))
    session = await runtime.create_session()
    assert (await session.prompt("Help me plan a trip")).text == "Sure."
    assert await session.named() == "Help me plan a trip"
