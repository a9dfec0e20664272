"""Turns as DBOS workflows: one workflow per turn, made of the package's durable steps.

A worker binds its runtime with ``register(runtime)`` before ``DBOS.launch()`` (so workflows
DBOS recovers at launch find it), then listens with ``turn_queue()``; anyone connected to the
same DBOS system database starts a turn with ``run_turn(session_id, text)``, which enqueues the
workflow and returns its handle, whose result is the turn's ``Settled`` (text, stop reason,
last seq).

What DBOS stores per turn is only references: the workflow's inputs (a session id and the
prompt's text) and each step's output (seqs, call ids, a digest). The conversation stays in the
session's log, so the engine's history is the same size at the first turn and the thousandth —
and a workflow per turn, rather than one workflow for a session's life, keeps each history
short without DBOS ever needing a continue-as-new.

The queue is partitioned by session: a session's turns run one at a time, in order, across
every worker; ``worker_concurrency`` caps the turns one worker runs. A tool step tells the neutral
layer whether it started before, from a DBOS event it sets before the tool runs, so a tool whose
worker died mid-run is closed as "may have run" and never run twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from dbos import DBOS, Queue, SetEnqueueOptions, SetWorkflowID, WorkflowHandle

from ..errors import UsageError
from ..runtime import Runtime
from ..sync import run_sync
from . import steps
from .refs import Admitted, Responded, Settled, StaleStepError, ToolRan

__all__ = ["QUEUE", "register", "run_turn", "turn_queue"]

QUEUE = "agentsession_turns"
T = TypeVar("T")


@dataclass
class _Registration:
    runtime: Runtime
    queue_name: str
    worker_concurrency: int | None
    stale_retries: int
    polling_interval: float
    queue: Queue | None = None


_registered: list[_Registration] = []


def register(
    runtime: Runtime,
    *,
    queue_name: str = QUEUE,
    worker_concurrency: int | None = None,
    stale_retries: int = 60,
    polling_interval: float = 1.0,
) -> None:
    """Bind ``runtime`` to the package's DBOS workflow and steps in this process.

    Call it after ``DBOS(config=...)`` and before ``DBOS.launch()``. ``worker_concurrency`` caps
    the turns one worker runs at once. ``stale_retries`` is how often a step retries,
    a second apart, while another live worker holds the session. ``polling_interval`` is how
    often, in seconds, a worker looks for queued turns.
    """
    _registered[:] = [
        _Registration(
            runtime,
            queue_name,
            worker_concurrency,
            stale_retries,
            polling_interval,
        )
    ]


def _registration() -> _Registration:
    if not _registered:
        raise UsageError("call agentsession.durable.dbos.register(runtime) before DBOS.launch()")
    return _registered[0]


def turn_queue() -> Queue:
    """The turn queue, registered in the system database (after ``DBOS.launch()``)."""
    reg = _registration()
    if reg.queue is None:
        reg.queue = DBOS.register_queue(
            reg.queue_name,
            worker_concurrency=reg.worker_concurrency,
            partition_concurrency=1,  # one turn of a session at a time
            polling_interval_sec=reg.polling_interval,
        )
    return reg.queue


def run_turn(
    session_id: str, text: str, *, workflow_id: str | None = None
) -> WorkflowHandle[Settled]:
    """Enqueue one turn of ``session_id``; its handle's result is the turn's ``Settled``.

    The queue partition is the session: its turns run one at a time, in order (a turn holds
    the session's lease only while a step runs, so two turns of a session must never
    interleave). ``workflow_id`` makes the enqueue idempotent (one workflow per id).
    """
    queue = turn_queue()
    with SetEnqueueOptions(queue_partition_key=session_id):
        if workflow_id is None:
            return queue.enqueue(_turn_workflow, session_id, text)
        with SetWorkflowID(workflow_id):
            return queue.enqueue(_turn_workflow, session_id, text)


def _run(step: Callable[[Runtime], Coroutine[Any, Any, T]]) -> T:
    """Run a neutral step on the package's loop; wait out another live worker's lease."""
    reg = _registration()
    for attempt in range(reg.stale_retries + 1):
        try:
            return run_sync(step(reg.runtime))
        except StaleStepError:
            if attempt == reg.stale_retries:
                raise
            time.sleep(1.0)
    raise AssertionError("unreachable")  # pragma: no cover


@DBOS.step(name="agentsession.last_seq")
def _last_seq_step(session_id: str) -> int:
    return _run(lambda rt: steps.last_seq(rt, session_id))


@DBOS.step(name="agentsession.admit")
def _admit_step(session_id: str, expected_seq: int, text: str) -> Admitted | None:
    try:
        return run_sync(steps.admit_prompt(_registration().runtime, session_id, expected_seq, text))
    except StaleStepError as exc:
        if exc.expected_seq is None:
            return _run(lambda rt: steps.admit_prompt(rt, session_id, expected_seq, text))
        return None  # another prompt came first: read the log's end again


@DBOS.step(name="agentsession.model")
def _model_step(session_id: str, after_seq: int, step: int) -> Responded:
    return _run(lambda rt: steps.model_step(rt, session_id, after_seq, step))


@DBOS.step(name="agentsession.tool")
def _tool_step(session_id: str, response_seq: int, call_id: str) -> ToolRan:
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None  # a step runs inside its workflow
    key = f"started:{call_id}"
    first = DBOS.get_event(workflow_id, key, timeout_seconds=0) is None
    if first:
        DBOS.set_event(key, True)  # durable before the tool runs
    return _run(
        lambda rt: steps.run_tool(rt, session_id, response_seq, call_id, first_attempt=first)
    )


@DBOS.step(name="agentsession.settle")
def _settle_step(session_id: str, admitted_seq: int) -> Settled:
    return _run(lambda rt: steps.settle_turn(rt, session_id, admitted_seq))


@DBOS.workflow(name="agentsession.turn")
def _turn_workflow(session_id: str, text: str) -> Settled:
    admitted: Admitted | None = None
    for _ in range(_registration().stale_retries + 1):
        admitted = _admit_step(session_id, _last_seq_step(session_id), text)
        if admitted is not None:
            break
    if admitted is None:
        raise StaleStepError(f"session {session_id}: other prompts kept coming first")
    after, step = admitted.seq, 1
    while True:
        responded = _model_step(session_id, after, step)
        for call_id in responded.calls:
            ran = _tool_step(session_id, responded.seq, call_id)
            after = ran.seq
            if ran.paused:  # a call waits for the user's approval: the turn ends here
                return _settle_step(session_id, admitted.seq)
        if not responded.calls:
            return _settle_step(session_id, admitted.seq)
        step += 1
