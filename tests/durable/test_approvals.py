"""Approvals inside a turn of durable steps: the turn pauses, the answer resumes it by reference.

A call the preset asks about pauses the turn (``settle_turn`` says ``approval_required`` and
which calls wait); ``paused_turn`` says where it continues; ``run_tool`` with the user's
``ApprovalAnswer`` commits the answer right before the call runs. The log is the one
``prompt()``, ``approve()``/``deny()`` and ``retry()`` write, entry for entry; a retried step
never runs the call twice, and an answer stored without a result closes the call as "may have
run" instead of running it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import agentsession as ags
from agentsession.durable import (
    ApprovalAnswer,
    Paused,
    Settled,
    admit_prompt,
    last_seq,
    model_step,
    paused_turn,
    run_tool,
    settle_turn,
)
from agentsession.engine.recovery import INTERRUPTED_RESULT
from agentsession.log import ApprovalDecided, ToolResultEntry, now

from .common import shape

Make = Callable[..., Any]
CONFIG = ags.Config(retry_base_delay=0, titles=False, environment=())


def _deploy(runs: list[str]) -> ags.Tool:
    @ags.tool(effect="execute")
    def deploy(target: str) -> str:
        """Deploy to a target (the preset asks first).

        Args:
            target: Where to.
        """
        runs.append(target)
        return f"deployed to {target}"

    return deploy


def _script() -> list[Any]:
    return [
        [ags.ToolCall("deploy", {"target": "staging"}, "d1")],
        "done deploying",
        [ags.ToolCall("deploy", {"target": "prod"}, "d2")],
        "prod stays as it is",
    ]


async def _pause(runtime: ags.Runtime, sid: str, text: str) -> tuple[Settled, Paused]:
    admitted = await admit_prompt(runtime, sid, await last_seq(runtime, sid), text)
    responded = await model_step(runtime, sid, admitted.seq, 1)
    (call_id,) = responded.calls
    ran = await run_tool(runtime, sid, responded.seq, call_id, first_attempt=True)
    assert ran.paused
    settled = await settle_turn(runtime, sid, admitted.seq)
    return settled, await paused_turn(runtime, sid)


async def _resume(runtime: ags.Runtime, paused: Paused, answer: ApprovalAnswer) -> Settled:
    sid = paused.session_id
    ran = await run_tool(
        runtime, sid, paused.response_seq, answer.call_id, first_attempt=True, answer=answer
    )
    again = await run_tool(
        runtime, sid, paused.response_seq, answer.call_id, first_attempt=False, answer=answer
    )
    assert again == ran  # a retried step finds the result: the call ran once
    responded = await model_step(runtime, sid, ran.seq, paused.step + 1)
    assert not responded.calls
    return await settle_turn(runtime, sid, paused.dispatch_seq)


async def test_an_approval_pauses_the_turn_and_its_answer_resumes_it_as_retry_does(
    make_runtime: Make,
) -> None:
    stepped_runs: list[str] = []
    prompted_runs: list[str] = []
    stepped = make_runtime(_script(), tools=[_deploy(stepped_runs)], config=CONFIG)
    prompted = make_runtime(_script(), tools=[_deploy(prompted_runs)], config=CONFIG)
    sid = (await stepped.create_session()).id

    settled, paused = await _pause(stepped, sid, "deploy to staging")
    assert (settled.stop_reason, settled.waiting) == ("approval_required", ("d1",))
    assert (paused.calls, paused.waiting, paused.step) == (("d1",), ("d1",), 1)
    assert stepped_runs == []
    with pytest.raises(ags.SessionBusyError):  # no next prompt while a call waits
        await admit_prompt(stepped, sid, await last_seq(stepped, sid), "and then?")
    with pytest.raises(ags.UsageError):  # an answer for a call that does not wait
        await run_tool(
            stepped,
            sid,
            paused.response_seq,
            "d1",
            first_attempt=True,
            answer=ApprovalAnswer("d9", approved=True),
        )
    done = await _resume(stepped, paused, ApprovalAnswer("d1", approved=True))
    assert (done.text, done.stop_reason, done.waiting) == ("done deploying", "end_turn", ())
    assert stepped_runs == ["staging"]

    settled, paused = await _pause(stepped, sid, "deploy to prod")
    denied = await _resume(stepped, paused, ApprovalAnswer("d2", approved=False, note="not today"))
    assert denied.text == "prod stays as it is"
    assert stepped_runs == ["staging"]  # denied: never ran
    with pytest.raises(ags.UsageError):
        await paused_turn(stepped, sid)  # nothing waits any more

    session = await prompted.create_session()
    assert (await session.prompt("deploy to staging")).stop_reason == "approval_required"
    await session.approve("d1")
    assert (await session.retry()).text == "done deploying"
    assert (await session.prompt("deploy to prod")).stop_reason == "approval_required"
    await session.deny("d2", "not today")
    await session.retry()
    await session.close()
    assert prompted_runs == stepped_runs
    assert shape(await stepped.store.read(sid)) == shape(await prompted.store.read(session.id))


async def test_an_answer_stored_without_a_result_closes_the_call_and_never_runs_it(
    make_runtime: Make,
) -> None:
    runs: list[str] = []
    runtime = make_runtime(_script(), tools=[_deploy(runs)], config=CONFIG)
    sid = (await runtime.create_session()).id
    _, paused = await _pause(runtime, sid, "deploy to staging")
    # A worker committed the answer, then died before the call's result: it may have run.
    await runtime.store.append(
        sid, await last_seq(runtime, sid) + 1, [ApprovalDecided("d1", True, False, "", now())]
    )
    answer = ApprovalAnswer("d1", approved=True)
    ran = await run_tool(
        runtime, sid, paused.response_seq, "d1", first_attempt=False, answer=answer
    )
    assert ran.is_error and runs == []
    (record,) = await runtime.store.read(sid, ran.seq)
    assert isinstance(record.entry, ToolResultEntry)
    assert record.entry.content == INTERRUPTED_RESULT["process"]
    responded = await model_step(runtime, sid, ran.seq, paused.step + 1)
    assert not responded.calls  # the turn goes on


def test_answers_and_pauses_are_small_json_references() -> None:
    from agentsession.durable import Reference, reference_from_json

    refs: list[Reference] = [
        ApprovalAnswer("c1", approved=False, note="no"),
        Paused("s", 4, 5, 1, ("c1", "c2"), ("c1",)),
        Settled("s", "", "approval_required", 7, ("c1",)),
    ]
    for ref in refs:
        assert reference_from_json(ref.as_json()) == ref
