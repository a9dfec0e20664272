"""Session semantics the log must get right: model switches, retry identity, long turns, plugin
scopes, the application's own instructions, and what a reopened session knows."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.log import ContextEpoch, Dispatch, ModelSwitched

from .conftest import MakeRuntime
from .wrapped_stores import CountingStore

Make = MakeRuntime


@ags.tool
def probe(n: int) -> str:
    """Probe once."""
    return f"probe {n}"


@ags.tool
def extra() -> str:
    """An extra tool."""
    return "extra"


def system_messages(request: ags.Request) -> list[ags.SystemMessage]:
    return [m for m in request.messages if isinstance(m, ags.SystemMessage)]


async def entries(session: ags.Session) -> list[Any]:
    return [r.entry for r in await session.log()]


# -- model switch ------------------------------------------------------------------------------


async def test_a_failed_call_then_switch_model_then_retry_goes_to_the_new_model(
    make_runtime: Make,
) -> None:
    first = ags.ScriptedModel(["one", RuntimeError("down")], name="m1")
    runtime = make_runtime(model=first)
    session = await runtime.create_session()
    await session.prompt("hello")
    with pytest.raises(ags.ProviderError):
        await session.prompt("are you there?")
    second = ags.ScriptedModel(["from m2"], name="m2")
    await session.switch_model(second)
    result = await session.retry()
    assert result.text == "from m2"
    (request,) = second.requests
    # History kept, the failed input included, in a fresh epoch for the new model.
    assert [m.content for m in request.messages if isinstance(m, ags.UserMessage)] == [
        "hello",
        "are you there?",
    ]
    log = await entries(session)
    epochs = [e for e in log if isinstance(e, ContextEpoch)]
    assert epochs[-1].model == "m2" and epochs[-1].reason == "model_switch"
    dispatches = [e for e in log if isinstance(e, Dispatch)]
    assert [d.model for d in dispatches] == ["m1", "m1", "m2"]
    assert len(first.requests) == 2  # the old epoch's request never went to m2


async def test_reopening_with_another_model_records_the_switch_truthfully(
    make_runtime: Make,
) -> None:
    runtime = make_runtime(model=ags.ScriptedModel(["one"], name="m1"))
    session = await runtime.create_session()
    await session.prompt("hello")
    other = ags.ScriptedModel(["two"], name="m2")
    reopened = await make_runtime(model=ags.ScriptedModel([], name="m1")).open_session(
        session.id, model=other
    )
    assert len(await entries(reopened)) == len(await entries(session))  # opening wrote nothing
    assert (await reopened.prompt("again")).text == "two"
    log = await entries(reopened)
    switches = [e for e in log if isinstance(e, ModelSwitched)]
    assert [(s.previous, s.model) for s in switches] == [("m1", "m2")]
    assert [d.model for d in log if isinstance(d, Dispatch)] == ["m1", "m2"]
    # A runtime configured with m2 reopening the same session records nothing new.
    third = await make_runtime(model=ags.ScriptedModel(["three"], name="m2")).open_session(
        session.id
    )
    await third.prompt("once more")
    assert len([e for e in await entries(third) if isinstance(e, ModelSwitched)]) == 1


# -- retry identity ----------------------------------------------------------------------------


async def test_retry_refuses_to_send_a_different_request(make_runtime: Make) -> None:
    runtime = make_runtime(["one", RuntimeError("down")], tools=[probe])
    session = await runtime.create_session()
    await session.prompt("hello")
    with pytest.raises(ags.ProviderError):
        await session.prompt("again")
    restarted_model = ags.ScriptedModel(["never sent"])
    restarted = make_runtime(model=restarted_model, tools=[probe, extra])
    reopened = await restarted.open_session(session.id)
    before = await entries(reopened)
    with pytest.raises(ags.UsageError, match="tool declarations differ") as info:
        await reopened.retry()
    assert "prompt()" in str(info.value)
    assert restarted_model.requests == []
    assert await entries(reopened) == before
    # prompt() continues with the current runtime instead.
    assert (await reopened.prompt("continue")).text == "never sent"


async def test_retry_resends_the_same_bytes_when_nothing_changed(make_runtime: Make) -> None:
    runtime = make_runtime(["one", RuntimeError("down"), "recovered"], tools=[probe])
    session = await runtime.create_session()
    await session.prompt("hello")
    with pytest.raises(ags.ProviderError):
        await session.prompt("again")
    assert (await session.retry()).text == "recovered"
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    assert model.requests[-1] == model.requests[-2]


# -- long turns --------------------------------------------------------------------------------


async def test_a_turn_longer_than_the_window_costs_o_window_per_step(
    make_runtime: Make, db_path: Path
) -> None:
    steps = 300
    state = {"left": steps - 1}
    store = CountingStore(ags.SQLiteStore(db_path))
    reads: list[int] = []

    def reply(request: ags.Request) -> Any:
        reads.append(store.records)
        if state["left"]:
            state["left"] -= 1
            return [ags.ToolCall("probe", {"n": state["left"]})]
        return "finished"

    runtime = make_runtime(
        model=ags.ScriptedModel(reply),
        tools=[probe],
        store=store,
        config=ags.Config(max_transcript_messages=6, max_steps=400, retry_base_delay=0),
    )
    session = await runtime.create_session()
    result = await session.prompt("probe a lot")
    assert result.steps == steps
    per_step = [b - a for a, b in itertools.pairwise(reads)]
    assert max(per_step) <= 6 * 3  # bounded by the window, not by the turn
    log = await entries(session)
    epochs = [e for e in log if isinstance(e, ContextEpoch)]
    assert len(epochs) <= steps // 20
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    for request in model.requests:
        assert len([m for m in request.messages if m.role != "system"]) <= 6
        ags.lower(request, "anthropic-messages")
    # The elision edge moves in chunks: most consecutive requests extend the previous one.
    extended = sum(
        1
        for a, b in itertools.pairwise(model.requests)
        if b.messages[: len(a.messages)] == a.messages
    )
    assert extended >= steps // 3


# -- plugin scopes -----------------------------------------------------------------------------


async def test_a_plugin_reloaded_by_name_announces_a_dropped_component_once(
    make_runtime: Make,
) -> None:
    runtime = make_runtime(["a", "b", "c", "d"])
    scope = runtime.plugin("ci")
    assert runtime.plugin("ci") is scope
    status = ags.ContextComponent(
        "plugin.ci.status", lambda: "green", removal="The CI status is no longer tracked."
    )
    branch = ags.ContextComponent("plugin.ci.branch", lambda: "main")
    scope.replay([status, branch])
    session = await runtime.create_session()
    await session.prompt("1")
    runtime.plugin("ci").replay([branch])  # a reload that drops one component
    await session.prompt("2")
    await session.prompt("3")
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    second, third = model.requests[1], model.requests[2]
    (removal,) = system_messages(second)
    assert removal.content.count("plugin.ci.status") == 1
    assert "The CI status is no longer tracked." in removal.content
    assert "plugin.ci.branch" not in removal.content  # unchanged: nothing sent
    assert system_messages(third) == [removal]  # announced once
    with pytest.raises(ags.UsageError, match=r"plugin\.ci\."):
        scope.replay([ags.ContextComponent("plugin.other.x", lambda: "x")])
    with pytest.raises(ags.UsageError, match="core"):
        runtime.register_component(ags.ContextComponent("core.agent", lambda: "x"))


# -- what a reopened session knows -------------------------------------------------------------


async def test_the_first_request_after_reopening_is_diagnosed_against_the_log(
    make_runtime: Make,
) -> None:
    runtime = make_runtime(["one"])
    session = await runtime.create_session()
    await session.prompt("hello")
    reopened = await make_runtime(["two"]).open_session(session.id)
    await reopened.prompt("again")
    dispatches = [e for e in await entries(reopened) if isinstance(e, Dispatch)]
    assert [d.cache for d in dispatches] == ["first", "hit"]


# -- the application's own instructions --------------------------------------------------------


async def test_the_agents_own_instructions_come_first(make_runtime: Make) -> None:
    persona = {"text": "You are Ada, a careful assistant."}
    runtime = make_runtime(["a", "b"], instructions=lambda: persona["text"])
    session = await runtime.create_session()
    await session.prompt("hi")
    persona["text"] = "You are Ada, and you answer briefly."
    await session.prompt("again")
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    first, second = model.requests
    assert first.system[0] == ("core.agent", "You are Ada, a careful assistant.")
    (update,) = system_messages(second)
    assert "you answer briefly" in update.content


async def test_the_environment_component_states_only_the_configured_facts(
    make_runtime: Make, tmp_path: Path
) -> None:
    runtime = make_runtime(["a"], config=ags.Config(environment=("platform",)))
    session = await runtime.create_session()
    await session.prompt("hi")
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    environment = dict(model.requests[0].system)["core.environment"]
    assert str(tmp_path) not in environment and "Platform:" in environment
    off = make_runtime(["a"], config=ags.Config(environment=()))
    quiet = await off.create_session()
    await quiet.prompt("hi")
    off_model = off.model
    assert isinstance(off_model, ags.ScriptedModel)
    assert "core.environment" not in dict(off_model.requests[0].system)
    with pytest.raises(ags.UsageError, match="environment"):
        ags.Config(environment=("cwd", "secrets"))


async def test_a_retry_can_be_streamed(make_runtime: Make) -> None:
    runtime = make_runtime([RuntimeError("down"), "a streamed retry reply"])
    session = await runtime.create_session()
    with pytest.raises(ags.ProviderError):
        await session.prompt("hello")
    events = [e async for e in session.stream_retry()]
    assert "".join(e.text for e in events if isinstance(e, ags.TextDelta)) == (
        "a streamed retry reply"
    )
    finished = events[-1]
    assert isinstance(finished, ags.TurnFinished) and finished.result.steps == 1
