"""What keeps a session's turns on DBOS together: their order, and the one tenant they go through.

A session's turns share a queue partition, so DBOS starts them one at a time, in enqueue order.
Two things here do not leave that to DBOS alone:

- ``order_step`` is the first step of every turn: it waits while a turn of the same session
  that DBOS ordered earlier (enqueue time, then workflow id) still runs. DBOS's claim is a read
  then a write, and on a SQLite system database two workers once both read a partition free
  and ran a session's turns side by side (issue 38). It reads only the workflows running now
  (a handful per worker), so no id scheme or index is needed. An earlier turn still queued is
  not waited for: it cannot start while this turn holds the partition.
- ``claim_tenant`` records a session's tenant at its first enqueue — the input of a tiny
  workflow whose id is made from the session id, so the first claim wins and every later one
  reads it — and refuses a turn for another tenant, whose queue would not keep the order.
"""

from __future__ import annotations

import time

from dbos import DBOS, SetWorkflowID

from ..errors import UsageError

__all__ = ["WAITS_FOR", "claim_tenant", "order_step"]

#: The DBOS event a turn sets while it waits for earlier turns of its session: their ids.
WAITS_FOR = "agentsession.waits_for"
#: The workflows that are a session's turns (or the rest of one).
TURN_WORKFLOWS = ("agentsession.turn", "agentsession.resume")


@DBOS.step(name="agentsession.order")
def order_step(session_id: str, polling_interval: float) -> int:
    """Wait until no earlier turn of the session runs; how many turns it waited for.

    The output is recorded like any step's, so a recovered turn does not wait again.
    """
    own = DBOS.workflow_id
    assert own is not None  # a step runs inside its workflow
    waited: set[str] = set()
    while True:
        earlier = _earlier_running(session_id, own)
        if not earlier:
            return len(waited)
        if not earlier <= waited:
            waited.update(earlier)
            DBOS.set_event(WAITS_FOR, sorted(waited))  # for whoever looks why it waits
        time.sleep(polling_interval)


def _earlier_running(session_id: str, own: str) -> set[str]:
    """Ids of the session's turns that run now and were enqueued before the turn ``own``."""
    running = DBOS.list_workflows(
        status="PENDING", name=list(TURN_WORKFLOWS), load_input=False, load_output=False
    )
    ours = [w for w in running if w.queue_partition_key == session_id]
    me = next((w for w in ours if w.workflow_id == own), None)
    if me is None:  # not started through a queue: nothing orders it
        return set()
    mine = (me.created_at or 0, own)
    return {w.workflow_id for w in ours if (w.created_at or 0, w.workflow_id) < mine}


@DBOS.workflow(name="agentsession.tenant")
def _tenant_workflow(session_id: str, tenant: str) -> str:
    """The record of a session's tenant: its input (``""``: the default queue)."""
    return tenant


def claim_tenant(session_id: str, tenant: str | None) -> None:
    """Record ``tenant`` as the session's at its first turn; refuse any other one later.

    Raises:
        UsageError: The session's turns went through another tenant's queue (or the default
            queue, ``None``).
    """
    record = f"agentsession-tenant-{session_id}"
    with SetWorkflowID(record):
        DBOS.start_workflow(_tenant_workflow, session_id, tenant or "")
    (status,) = DBOS.list_workflows(workflow_ids=[record], load_output=False)
    assert status.input is not None  # a workflow's inputs are stored when it is made
    first: str = status.input["args"][1]
    if first != (tenant or ""):

        def name(t: str) -> str:
            return f"tenant {t!r}" if t else "the default queue"

        raise UsageError(
            f"session {session_id} belongs to {name(first)}: its turns keep their order only"
            f" in one queue, so a turn for {name(tenant or '')} is refused"
        )
