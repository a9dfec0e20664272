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
every worker (DBOS breaks ties of its enqueue clock by workflow id, so the ids ``run_turn``
makes sort in enqueue order); ``worker_concurrency`` caps the turns one worker runs. The
partition is not trusted alone: each turn begins with an order step that waits while an
earlier turn of its session runs, since DBOS's claim on a SQLite system database once let two
workers start a session's turns together (``sqlite_system_database`` closes that gap). A tenant
named in ``register(tenants=...)`` gets a queue of its own, carrying its ``TenantLimits`` (a
cap on its turns running at once across the fleet, a rate per minute) and partitioned by
session the same way, so a tenant's cap never reorders a session's turns.

A call that waits for approval ends the turn's workflow (``Settled.waiting`` names it) rather
than holding a tenant slot and the session's partition while a person decides;
``resume_turn`` carries the answers into a second workflow, in the same partition, whose tool
steps commit each answer right before its call runs. A tool step tells the neutral
layer whether it started before, from a DBOS event it sets before the tool runs, so a tool whose
worker died mid-run is closed as "may have run" and never run twice.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dbos import DBOS, Queue, SetEnqueueOptions, SetWorkflowID, WorkflowHandle

from ..errors import UsageError
from ..runtime import Runtime
from ..sync import run_sync
from . import steps
from .dbos_session import WAITS_FOR, claim_tenant, order_step
from .dbos_sqlite import sqlite_system_database
from .refs import Admitted, ApprovalAnswer, Paused, Responded, Settled, StaleStepError, ToolRan
from .tenants import TenantLimits, tenant_queue

__all__ = [
    "QUEUE",
    "WAITS_FOR",
    "ApprovalAnswer",
    "TenantLimits",
    "register",
    "resume_turn",
    "run_turn",
    "sqlite_system_database",
    "tenant_queue",
    "turn_queue",
]

QUEUE = "agentsession_turns"
T = TypeVar("T")
T2 = TypeVar("T2")
_ids_lock = threading.Lock()
_last_ns = [0]


@dataclass
class _Registration:
    runtime: Runtime
    queue_name: str
    worker_concurrency: int | None
    stale_retries: int
    polling_interval: float
    tenants: dict[str, TenantLimits]
    default_limits: TenantLimits | None
    queues: dict[str | None, Queue] = field(default_factory=dict)


_registered: list[_Registration] = []


def register(
    runtime: Runtime,
    *,
    queue_name: str = QUEUE,
    worker_concurrency: int | None = None,
    stale_retries: int = 60,
    polling_interval: float = 1.0,
    tenants: Mapping[str, TenantLimits] | None = None,
    default_limits: TenantLimits | None = None,
) -> None:
    """Bind ``runtime`` to the package's DBOS workflow and steps in this process.

    Call it after ``DBOS(config=...)`` and before ``DBOS.launch()``, in every worker and in
    every process that enqueues turns.

    Args:
        runtime: The runtime whose sessions the turns drive.
        queue_name: The default turn queue's name; a tenant's queue is ``<queue_name>.<tenant>``.
        worker_concurrency: The most turns of one queue one worker runs at once.
        stale_retries: How often a step retries, a second apart, while another live worker
            holds the session.
        polling_interval: How often, in seconds, a worker looks for queued turns.
        tenants: Tenant name → its ``TenantLimits``; each tenant's turns go through a queue
            of its own carrying them.
        default_limits: The limits of a tenant not named in ``tenants`` (its queue is made at
            its first turn); ``None``: such a tenant is refused.

    Raises:
        UsageError: A tenant's name cannot name a queue.
    """
    named = dict(tenants or {})
    for tenant in named:
        tenant_queue(queue_name, tenant)  # refuses a bad name now, not at the first turn
    _registered[:] = [
        _Registration(
            runtime,
            queue_name,
            worker_concurrency,
            stale_retries,
            polling_interval,
            named,
            default_limits,
        )
    ]


def _registration() -> _Registration:
    if not _registered:
        raise UsageError("call agentsession.durable.dbos.register(runtime) before DBOS.launch()")
    return _registered[0]


def _declare(reg: _Registration, tenant: str | None) -> Queue:
    """Register the queue of ``tenant`` (``None``: the default queue) in the system database."""
    limits = TenantLimits()
    name = reg.queue_name
    if tenant is not None:
        name = tenant_queue(reg.queue_name, tenant)
        found = reg.tenants.get(tenant, reg.default_limits)
        if found is None:
            raise UsageError(
                f"tenant {tenant!r} is not registered: name it in register(tenants=...) or"
                " give register(default_limits=...)"
            )
        limits = found
    worker = reg.worker_concurrency
    if worker is not None and limits.concurrency is not None:
        worker = min(worker, limits.concurrency)  # DBOS refuses a worker cap above the queue's
    per_minute = limits.per_minute
    return DBOS.register_queue(
        name,
        worker_concurrency=worker,
        global_concurrency=limits.concurrency,
        limiter=None if per_minute is None else {"limit": per_minute, "period": 60.0},
        partition_concurrency=1,  # one turn of a session at a time, the oldest first
        polling_interval_sec=reg.polling_interval,
    )


def turn_queue(tenant: str | None = None) -> Queue:
    """A turn queue, registered in the system database (after ``DBOS.launch()``).

    Without ``tenant`` it is the default queue, and the queues of every tenant named in
    ``register(tenants=...)`` are registered with it, so a worker that calls it once serves
    them all (DBOS workers take turns from every queue registered in the system database).

    Args:
        tenant: A tenant's name: its own queue.

    Raises:
        UsageError: ``register`` was not called, or the tenant is unknown.
    """
    reg = _registration()
    if tenant is None and None not in reg.queues:
        for named in sorted(reg.tenants):
            turn_queue(named)
    queue = reg.queues.get(tenant)
    if queue is None:
        queue = reg.queues[tenant] = _declare(reg, tenant)
    return queue


def run_turn(
    session_id: str, text: str, *, workflow_id: str | None = None, tenant: str | None = None
) -> WorkflowHandle[Settled]:
    """Enqueue one turn of ``session_id``; its handle's result is the turn's ``Settled``.

    The queue partition is the session: its turns run one at a time, in order (a turn holds
    the session's lease only while a step runs, so two turns of a session must never
    interleave). A session belongs to one tenant, the one its first turn named: the order
    holds within one queue, so a turn for another tenant is refused.

    Args:
        session_id: The session the turn belongs to.
        text: The prompt.
        workflow_id: Makes the enqueue idempotent (one workflow per id). DBOS orders a
            session's turns enqueued within one tick of its clock by their ids, so ids you
            give must sort in the order of the session's turns; without one, ``run_turn``
            makes an id that does.
        tenant: The tenant whose queue and limits the turn goes through (``None``: the
            default queue, without tenant limits).

    Raises:
        UsageError: ``register`` was not called, the tenant is unknown, or the session's
            turns go through another tenant (``None``: the default queue).
    """
    return _enqueue(tenant, session_id, workflow_id, _turn_workflow, text)


def _enqueue(
    tenant: str | None,
    session_id: str,
    workflow_id: str | None,
    workflow: Callable[[str, T2], Settled],
    argument: T2,
) -> WorkflowHandle[Settled]:
    """Enqueue ``workflow`` in the session's partition of the tenant's queue."""
    queue = turn_queue(tenant)
    claim_tenant(session_id, tenant)
    with (
        SetEnqueueOptions(queue_partition_key=session_id),
        SetWorkflowID(workflow_id or _ordered_id()),
    ):
        return queue.enqueue(workflow, session_id, argument)


def _ordered_id() -> str:
    """A workflow id that sorts after every id this process made before.

    DBOS starts a partition's turns by enqueue time, then by workflow id; its clock may tick
    once a second (SQLite), so turns of a session enqueued within one tick keep their order
    only through their ids.
    """
    with _ids_lock:
        ns = _last_ns[0] = max(time.time_ns(), _last_ns[0] + 1)
    return f"agentsession-{ns:020d}-{uuid.uuid4().hex[:8]}"


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
    stale_retries = _registration().stale_retries
    for attempt in range(stale_retries + 1):
        try:
            return run_sync(
                steps.admit_prompt(_registration().runtime, session_id, expected_seq, text)
            )
        except StaleStepError as exc:
            if exc.expected_seq is not None:
                return None  # another prompt came first: read the log's end again
            if attempt == stale_retries:
                raise
            time.sleep(1.0)  # another live worker holds the session: wait it out
    raise AssertionError("unreachable")  # pragma: no cover


@DBOS.step(name="agentsession.model")
def _model_step(session_id: str, after_seq: int, step: int) -> Responded:
    return _run(lambda rt: steps.model_step(rt, session_id, after_seq, step))


@DBOS.step(name="agentsession.tool")
def _tool_step(
    session_id: str, response_seq: int, call_id: str, answer: ApprovalAnswer | None = None
) -> ToolRan:
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None  # a step runs inside its workflow
    key = f"started:{call_id}"
    first = DBOS.get_event(workflow_id, key, timeout_seconds=0) is None
    if first:
        DBOS.set_event(key, True)  # durable before the tool runs
    return _run(
        lambda rt: steps.run_tool(
            rt, session_id, response_seq, call_id, first_attempt=first, answer=answer
        )
    )


@DBOS.step(name="agentsession.paused")
def _paused_step(session_id: str) -> Paused:
    return _run(lambda rt: steps.paused_turn(rt, session_id))


@DBOS.step(name="agentsession.settle")
def _settle_step(session_id: str, admitted_seq: int) -> Settled:
    return _run(lambda rt: steps.settle_turn(rt, session_id, admitted_seq))


@DBOS.workflow(name="agentsession.turn")
def _turn_workflow(session_id: str, text: str) -> Settled:
    order_step(session_id, _registration().polling_interval)
    admitted: Admitted | None = None
    for _ in range(_registration().stale_retries + 1):
        admitted = _admit_step(session_id, _last_seq_step(session_id), text)
        if admitted is not None:
            break
    if admitted is None:
        raise StaleStepError(f"session {session_id}: other prompts kept coming first")
    return _until_settled(session_id, admitted.seq, admitted.seq, 1)


def _until_settled(session_id: str, turn_seq: int, after: int, step: int) -> Settled:
    """Model steps and their calls from ``after`` on, until an answer without calls or a pause."""
    while True:
        responded = _model_step(session_id, after, step)
        for call_id in responded.calls:
            ran = _tool_step(session_id, responded.seq, call_id)
            after = ran.seq
            if ran.paused:  # a call waits for the user's approval: the turn ends here
                return _settle_step(session_id, turn_seq)
        if not responded.calls:
            return _settle_step(session_id, turn_seq)
        step += 1


@DBOS.workflow(name="agentsession.resume")
def _resume_workflow(session_id: str, answers: tuple[ApprovalAnswer, ...]) -> Settled:
    order_step(session_id, _registration().polling_interval)
    paused = _paused_step(session_id)
    given = {a.call_id: a for a in answers}
    unknown = sorted(set(given) - set(paused.waiting))
    if unknown:
        raise UsageError(f"session {session_id}: no approval waits for {', '.join(unknown)}")
    after = paused.response_seq
    for call_id in paused.calls:
        ran = _tool_step(session_id, paused.response_seq, call_id, given.get(call_id))
        after = ran.seq
        if ran.paused:  # a waiting call left unanswered, or a later call asks too
            return _settle_step(session_id, paused.dispatch_seq)
    return _until_settled(session_id, paused.dispatch_seq, after, paused.step + 1)


def resume_turn(
    session_id: str,
    answers: Sequence[ApprovalAnswer],
    *,
    workflow_id: str | None = None,
    tenant: str | None = None,
) -> WorkflowHandle[Settled]:
    """Enqueue the rest of a turn that settled with ``stop_reason="approval_required"``.

    The answers travel into the tool steps as references: each is committed right before its
    call runs (a call whose answer was stored is never run again by a retried step), the
    turn's remaining calls run in order, then its model steps, as ``run_turn``'s would. A
    waiting call without an answer, or a later call the preset asks about, settles the turn
    as ``approval_required`` again. The turn goes through the session's queue partition, so it
    keeps its place among the session's turns.

    Args:
        session_id: The session whose turn waits.
        answers: One ``ApprovalAnswer`` per waiting call (``Settled.waiting``).
        workflow_id: Makes the enqueue idempotent (one workflow per id).
        tenant: The session's tenant, as given to ``run_turn``.

    Raises:
        UsageError: ``register`` was not called, the tenant is unknown, or the session's
            turns go through another tenant. The handle's result raises ``UsageError`` when
            an answer names a call that does not wait.
    """
    return _enqueue(tenant, session_id, workflow_id, _resume_workflow, tuple(answers))
