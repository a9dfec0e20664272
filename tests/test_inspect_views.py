"""``session.inspect()``: the typed views an application builds its own UI from."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.budget import EstimateCounter, measure
from agentsession.cli.inspecting import next_context
from agentsession.inspection._measure import _same_prefix, measure_in_order
from agentsession.inspection.inputs import inspect_records
from agentsession.inspection.inputs import next_context as next_context_of
from agentsession.inspection.views import Inspection, turn_marks
from agentsession.log import SkillLoaded
from agentsession.request import digest

from .benchmark_modules import load_benchmarks
from .conftest import MakeRuntime

Make = MakeRuntime


_lookup = load_benchmarks("_lookup")
lookup = _lookup.lookup
tool_then_text = _lookup.lookup_replies(lambda text: "k" if "lookup" in text else None, "done")


async def test_inspection_counts_turns_epochs_and_requests(make_runtime: Make) -> None:
    fact = {"value": "one"}
    runtime = make_runtime(
        tool_then_text,
        tools=[lookup],
        components=[ags.ContextComponent("plugin.t.fact", lambda: fact["value"])],
        summarizer=ags.ScriptedModel(["## Goal\nsummary"]),
    )
    session = await runtime.create_session()
    await session.prompt("please lookup")
    fact["value"] = "two"
    await session.prompt("plain")
    await session.prompt("plain again")
    assert await session.compact()
    await session.prompt("after compaction")

    ins = await session.inspect()
    assert isinstance(ins, Inspection)
    assert ins.session_id == session.id and ins.title == session.title
    assert ins.counts == dataclasses.replace(ins.counts, user=4, assistant=5, tool=1)
    assert [t.number for t in ins.turns] == [1, 2, 3, 4]
    assert [t.requests for t in ins.turns] == [2, 1, 1, 1]
    assert [t.tool_calls for t in ins.turns] == [1, 0, 0, 0]
    assert {t.outcome for t in ins.turns} == {"answered"}
    assert [e.reason for e in ins.epochs] == ["start", "compaction"]
    assert [r.number for r in ins.requests] == [1, 2, 3, 4, 5]
    assert [r.turn for r in ins.requests] == [1, 1, 2, 3, 4]
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    assert [r.request for r in ins.requests] == model.requests
    assert all(r.exact for r in ins.requests)
    assert ins.model == "scripted"
    assert ins.entries == len(await session.log())
    # Every entry is on the timeline once, in order, each with its turn.
    assert [i.seq for i in ins.timeline] == list(range(ins.entries))
    kinds = {i.kind: i for i in ins.timeline}
    assert kinds["mid_conversation_system"].category == "context"
    assert "plugin.t.fact" in kinds["mid_conversation_system"].title
    assert kinds["summary"].title.startswith("compaction summary")


async def test_cacheable_prefix_and_diagnosis(make_runtime: Make) -> None:
    fact = {"value": "one"}
    runtime = make_runtime(
        tool_then_text,
        tools=[lookup],
        components=[ags.ContextComponent("plugin.t.fact", lambda: fact["value"])],
    )
    session = await runtime.create_session()
    await session.prompt("please lookup")
    fact["value"] = "two"
    await session.prompt("plain")
    await session.switch_model(ags.ScriptedModel(["switched"], name="scripted:other"))
    await session.prompt("on the other model")

    requests = (await session.inspect()).requests
    counter = runtime.token_counter
    first, second, third, fourth = requests
    assert first.cache == "first" and first.cacheable == 0 and first.new == first.tokens
    # The second request extends the first: everything the first sent is its cacheable prefix.
    assert second.cache == "hit"
    assert second.cacheable == measure(first.request, counter).total
    # An update message follows the new input: the prefix is the whole previous request.
    assert third.cache == "hit"
    assert third.cacheable == measure(second.request, counter).total
    assert 0 < third.new < third.tokens
    # Another model: nothing is cacheable, whatever repeats.
    assert fourth.cache == "model_changed" and fourth.cacheable == 0
    for request in requests:
        assert request.tokens == measure(request.request, counter).total
        assert request.reported_input is not None and request.reported_cached == 0


async def test_next_request_is_annotated_without_admitting_anything(make_runtime: Make) -> None:
    fact = {"value": "one"}
    runtime = make_runtime(
        tool_then_text,
        tools=[lookup],
        components=[ags.ContextComponent("plugin.t.fact", lambda: fact["value"])],
        instructions="Be brief.",
    )
    session = await runtime.create_session()
    await session.prompt("please lookup")
    fact["value"] = "two"
    before = await session.log()

    view = (await session.inspect()).next_request
    assert view is not None
    assert await session.log() == before  # nothing admitted
    assert view.epoch == 0 and not view.new_epoch and view.epoch_reason == "start"
    assert [p.label for p in view.sections][:2] == ["core.agent", "core.date"]
    roles = [p.role for p in view.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "system"]
    kinds = [p.source_kinds for p in view.messages]
    assert kinds[:4] == [("user",), ("assistant",), ("tool_result",), ("assistant",)]
    assert kinds[4] == ("new",)  # the update message this preview would admit
    assert "two" in view.messages[4].text
    # Each message points at the log entry it came from.
    by_seq = {r.seq: r.entry for r in before}
    for part in view.messages[:4]:
        assert by_seq[part.sources[0]].kind == part.source_kinds[0]
    # The parts add up to the measured total.
    parts = [*view.sections, *view.messages, *view.tools]
    assert sum(p.tokens for p in parts) + view.overhead == view.total
    assert view.total == measure(view.request, runtime.token_counter).total
    assert 0 < view.total < view.limit
    assert view.window_start == 0 and view.before_window == 0 and view.left_out == 0
    # ``context`` and ``/context`` show it alone, with no past request rebuilt: the same view.
    assert await next_context(session) == view
    assert await session.log() == before


async def test_window_edge_and_elision_are_reported(make_runtime: Make) -> None:
    config = ags.Config(max_transcript_messages=4, retry_base_delay=0)
    calls = iter([[ags.ToolCall("lookup", {"key": str(i)})] for i in range(3)])

    def script(request: ags.Request) -> Any:
        last = request.messages[-1]
        if isinstance(last, ags.UserMessage) and "many" not in str(last.content):
            return "ok"
        return next(calls, "all done")

    runtime = make_runtime(script, tools=[lookup], config=config)
    session = await runtime.create_session()
    for i in range(3):
        await session.prompt(f"short {i}")
    await session.prompt("many calls")
    ins = await session.inspect()
    last = ins.requests[-1]
    records = await session.log()
    from agentsession.inspection.views import past_context

    view = past_context(ins, last.number, records, runtime.token_counter)
    # Three short turns (6 messages) lie before the window; the long turn is elided inside it.
    assert view.before_window == 6
    # user, 3 × (call, result), answer: the user message and the newest 3 messages fit the cap.
    assert view.left_out == 4
    assert view.messages[0].text.endswith("[4 earlier messages of this turn omitted]")
    # Elision alone keeps the epoch: its edge moves in chunks (docs/decisions.md); the epoch in
    # force began when the window left the short turns behind.
    assert not view.new_epoch and view.epoch_reason == "window"


async def test_outcomes_failed_cancelled_and_generic_kinds(make_runtime: Make) -> None:
    runtime = make_runtime([RuntimeError("down"), "fine"])
    session = await runtime.create_session()
    with pytest.raises(ags.ProviderError):
        await session.prompt("first")
    await session.prompt("second")
    # A state entry the inspection has no sentence for is still shown, from its fields.
    from agentsession.engine.writer import LogWriter

    info = await runtime.store.get_session(session.id)
    writer = LogWriter(runtime.store, session.id, info.next_seq, [], [])
    await writer.append([SkillLoaded("pdf", "rev1", "/skills/pdf", "call_1")])
    ins = await session.inspect()
    assert [t.outcome for t in ins.turns] == ["failed", "answered"]
    item = ins.timeline[-1]
    assert item.kind == "skill_loaded" and item.category == "state"
    assert item.title == "skill loaded"
    assert "name: pdf" in item.text and "location: /skills/pdf" in item.text


async def test_a_cancelled_turn_is_an_outcome(make_runtime: Make) -> None:
    started = asyncio.Event()

    class Slow(ags.ScriptedModel):
        async def stream(self, request: ags.Request) -> Any:
            started.set()
            await asyncio.sleep(60)
            yield  # pragma: no cover

    runtime = make_runtime(model=Slow(["x"]))
    session = await runtime.create_session()
    task = asyncio.create_task(session.prompt("wait"))
    await started.wait()
    assert session.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    ins = await session.inspect()
    assert [t.outcome for t in ins.turns] == ["cancelled"]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(["text", "tool", "change"]), min_size=1, max_size=8))
def test_sizes_are_consistent_for_any_session(make_runtime: Make, steps: list[str]) -> None:
    async def scenario() -> None:
        fact = {"value": 0}
        runtime = make_runtime(
            tool_then_text,
            tools=[lookup],
            components=[ags.ContextComponent("plugin.t.n", lambda: str(fact["value"]))],
            store=ags.MemoryStore(),
        )
        session = await runtime.create_session()
        for step in steps:
            if step == "change":
                fact["value"] += 1
            await session.prompt("please lookup" if step == "tool" else "plain")
        ins = await session.inspect()
        previous = None
        for request in ins.requests:
            assert 0 <= request.cacheable <= request.tokens
            assert request.exact and digest(request.request)
            if previous is not None and request.cache == "hit":
                # A hit extends the previous request: all of it is the cacheable prefix.
                assert request.cacheable == previous.tokens
            previous = request

    asyncio.run(scenario())


async def test_requests_measured_in_order_match_measuring_each_alone(make_runtime: Make) -> None:
    # A small window moves often: epochs change, prefixes are shared and then not.
    config = ags.Config(retry_base_delay=0, max_transcript_messages=6)
    runtime = make_runtime(tool_then_text, tools=[lookup], config=config)
    session = await runtime.create_session()
    for n in range(12):
        await session.prompt(f"lookup {n}" if n % 2 else f"just talk {n}")
    inspection = await session.inspect()
    requests = [r.request for r in inspection.requests]
    assert len(requests) > 12 and len(inspection.epochs) > 1
    counter = EstimateCounter()
    in_order = measure_in_order(requests, counter)
    alone = [[t for _, t in measure(r, counter).contributors] for r in requests]
    assert in_order == alone
    assert [r.tokens for r in inspection.requests] == [sum(t) for t in alone]
    # The shared prefix is reused, not recounted: most requests keep earlier messages.
    assert sum(bool(_same_prefix(a, b)) for a, b in itertools.pairwise(requests)) > 6


async def test_turn_marks_are_those_of_the_whole_inspection(make_runtime: Make) -> None:
    # ``show`` marks a transcript from the log alone; the marks must be the inspection's.
    summarizer = ags.ScriptedModel(["## Goal\nCount things.", "## Goal\nAgain."], name="summariser")
    runtime = make_runtime(
        [RuntimeError("down"), "a1", "a2", "a3", "a4", "a5"],
        summarizer=summarizer,
        config=ags.Config(keep_user_turns=1, retry_base_delay=0),
    )
    session = await runtime.create_session()
    with pytest.raises(ags.ProviderError):
        await session.prompt("zero")
    for text in ("one", "two", "three"):
        await session.prompt(text)
    assert await session.compact() is True
    await session.prompt("four")
    assert await session.compact() is True
    ins = await session.inspect()
    outcomes, compacted = turn_marks(await session.log())
    assert outcomes == [t.outcome for t in ins.turns]
    assert outcomes[0] == "failed" and outcomes[-1] == "answered"
    assert compacted == {i.turn: i.title for i in ins.timeline if i.kind == "summary"}
    assert len(compacted) == 2


async def test_the_next_request_alone_says_why_it_cannot_be_previewed(make_runtime: Make) -> None:
    runtime = make_runtime(["a1"])
    session = await runtime.create_session()
    await session.prompt("one")
    inputs = await session._inspection_inputs()
    inputs = dataclasses.replace(inputs, upcoming="no model at hand")
    records = await session.log()
    ins = inspect_records(inputs, records)
    assert ins.next_request is None
    assert next_context_of(inputs, records) == (None, ins.next_error) == (None, "no model at hand")
