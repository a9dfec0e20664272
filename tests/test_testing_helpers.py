"""agentsession.testing's scripted-model helpers, used the way an application's tests would."""

from __future__ import annotations

import pytest

import agentsession as ags
from agentsession.testing import (
    assert_prefix_stable,
    calls,
    failure,
    tool_results,
    updates,
    user_texts,
)

from .conftest import MakeRuntime

Make = MakeRuntime


async def test_scripted_replies_and_what_the_model_received(make_runtime: Make) -> None:
    seen: list[str] = []

    @ags.tool
    def note(text: str = "") -> str:
        """Write a note."""
        seen.append(text)
        return f"noted {text}"

    model = ags.ScriptedModel(
        [calls("note", ("note", {"text": "b"})), failure("busy", transient=True), "done"]
    )
    runtime = make_runtime(model=model, tools=[note])
    session = await runtime.create_session()
    assert (await session.prompt("take notes")).text == "done"
    assert seen == ["", "b"]
    last = model.requests[-1]
    assert user_texts(last) == ["take notes"]
    assert [r.name for r in tool_results(last)] == ["note", "note"]
    assert updates(last) == []
    assert_prefix_stable(model)  # the retried request and the next one extend the first


async def test_a_context_change_is_an_update_and_keeps_the_prefix(make_runtime: Make) -> None:
    state = {"phase": "one"}
    component = ags.ContextComponent("app.phase", lambda: f"phase {state['phase']}")
    model = ags.ScriptedModel(["a", "b"])
    runtime = make_runtime(model=model, components=[component])
    session = await runtime.create_session()
    await session.prompt("first")
    state["phase"] = "two"
    await session.prompt("second")
    assert any("phase two" in text for text in updates(model.requests[-1]))
    assert_prefix_stable(model)


def test_a_request_that_rewrites_history_breaks_the_prefix() -> None:
    model = ags.ScriptedModel([])
    first = ags.Request(system=(("k", "v"),), messages=(ags.UserMessage("one"),))
    model.requests += [first, ags.Request(system=first.system, messages=(ags.UserMessage("1"),))]
    with pytest.raises(AssertionError, match="request 1 does not extend request 0"):
        assert_prefix_stable(model)
    # A new epoch (another system part) may start over.
    model.requests[1] = ags.Request(system=(("k", "w"),), messages=(ags.UserMessage("1"),))
    assert_prefix_stable(model)


def test_failure_builds_the_two_kinds_of_provider_failure() -> None:
    assert type(failure("x", transient=True)) is ags.TransientProviderError
    assert type(failure("x")) is ags.ProviderError


async def test_a_window_advance_is_a_new_epoch_the_helper_accepts(make_runtime: Make) -> None:
    # Nothing in the context changes, so the fresh baseline of the window's epoch is the same
    # text: only the log says a new epoch began, and the view's first message moved with it.
    config = ags.Config(retry_base_delay=0, titles=False, max_transcript_messages=4, window_step=1)
    model = ags.ScriptedModel(["one", "two", "three", "four"])
    runtime = make_runtime(model=model, config=config)
    session = await runtime.create_session()
    for text in ("first", "second", "third", "fourth"):
        await session.prompt(text)
    reasons = [r.entry.reason for r in await session.log() if r.entry.kind == "epoch"]
    assert "window" in reasons
    assert model.requests[-1].system == model.requests[0].system
    assert_prefix_stable(model)
    # The window's move is no licence to rewrite the history that stays in view.
    broken = model.requests[-1]
    model.requests.append(
        ags.Request(broken.system, (ags.UserMessage("rewritten"), *broken.messages[1:]),
                    broken.tools, broken.sources)
    )  # fmt: skip
    with pytest.raises(AssertionError, match="does not extend"):
        assert_prefix_stable(model)
