"""A DBOS worker process for the durable tests: ``python -m tests.durable.worker PLAN.json``.

The plan (JSON) names the session store, the DBOS system database, the side file the ``work``
tool appends to, and one turn: the worker enqueues it (by workflow id, so a second worker gets
the same workflow) and writes its result to ``out``. ``kill_after`` SIGKILLs the process right
after its N-th append commits — a step's effect durable, the engine not yet told: a step
boundary. ``kill_in_tool`` SIGKILLs it inside the tool, after the side effect, before its result.
A fresh worker with the same executor id recovers the turn at launch.

With ``ask`` the ``work`` tool asks for approval (an ``execute`` effect) and ``resume`` (a
workflow id and answers) finishes the paused turn after the plan's turns.

A plan with ``tenant_turns`` (a session, a tenant and a text each) enqueues them one after
another and records each answer, or the ``UsageError`` that refused it.

A plan with ``batch`` (turns of several sessions, each with a ``tenant``), ``tenants`` (name
→ ``TenantLimits`` fields) and ``default_limits`` (for the others) enqueues every turn first,
then waits for them all; its tool records each call's start and end in ``events`` and, for a
call of the ``capped`` tenant, waits before it ends until a call of the ``free`` tenant has
ended. ``listen`` names the queues this process takes turns from (``[]``: none, it only
enqueues); a plan with ``serve_until`` (a path) is a worker of the fleet with its own
``executor_id``, running turns until that path exists.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import agentsession as ags
from agentsession.log import LogEntry, Record
from agentsession.tools import Effect

from ..durability.common import planned_reply, side_tool
from ..store.wrappers import DelegatingStore

CONFIG = ags.Config(retry_base_delay=0, titles=False, environment=())


class KillAfter(DelegatingStore):
    """SIGKILLs the process right after the ``after``-th append commits (0: never)."""

    def __init__(self, inner: ags.Store, after: int) -> None:
        super().__init__(inner)
        self.after = after
        self.appends = 0

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        records = await super().append(session_id, expected_seq, entries)
        self.appends += 1
        if self.appends == self.after:
            os.kill(os.getpid(), signal.SIGKILL)
        return records


def store_of(plan: dict[str, Any]) -> ags.Store:
    """The session store the plan names: ``sqlite:<path>`` or ``postgres:<dsn>``."""
    kind, _, where = str(plan["store"]).partition(":")
    if kind == "sqlite":
        return ags.SQLiteStore(where)
    return ags.PostgresStore(where)


def _note(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def events_tool(events: Path) -> ags.Tool:
    """``work`` that records its start and end; a ``capped`` call ends after a ``free`` one."""

    @ags.tool(effect="write")
    def work(n: int, by: str, context: ags.ToolContext) -> str:
        """Do one numbered piece of work.

        Args:
            n: The piece of work.
            by: Who asked.
        """
        _note(events, f"start {context.call_id}")
        if context.call_id.startswith("capped"):
            # Bounded only so a broken queue fails the test instead of hanging it.
            deadline = time.monotonic() + 120
            while "end free" not in events.read_text(encoding="utf-8"):
                if time.monotonic() > deadline:
                    _note(events, f"gave-up {context.call_id}")
                    break
                time.sleep(0.05)
        _note(events, f"end {context.call_id}")
        return f"work {n} done for {by}"

    return work


def runtime_of(plan: dict[str, Any]) -> ags.Runtime:
    """The worker's runtime: the scripted model, the ``work`` tool, the plan's store."""
    side = Path(plan["side"])
    tool = events_tool(Path(plan["events"])) if "events" in plan else side_tool(side)
    if plan.get("kill_in_tool"):
        tool = _around(
            tool,
            "write",
            "Do one numbered piece of work, then die before the result is stored.",
            _die,
        )
    if plan.get("ask"):
        tool = _around(
            tool, "execute", "Do one numbered piece of work, once the user approves it.", str
        )
    return ags.Runtime(
        model=ags.ScriptedModel(planned_reply),
        store=KillAfter(store_of(plan), int(plan.get("kill_after", 0))),
        tools=[tool],
        project_dir=side.parent,
        config=CONFIG,
    )


def _die(result: str) -> str:
    """After the side effect, before its result is stored."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "never"


def _around(
    inner: ags.Tool, effect: Effect, description: str, then: Callable[[str], str]
) -> ags.Tool:
    """``work`` that runs ``inner``, then returns ``then`` of its result."""

    @ags.tool(effect=effect, name="work", description=description)
    def work(n: int, by: str, context: ags.ToolContext) -> str:
        """Do one numbered piece of work.

        Args:
            n: The piece of work.
            by: Who asked.
        """
        return then(str(inner.fn(n=n, by=by, context=context)))

    return work


def dbos_config(plan: dict[str, Any]) -> Any:
    """DBOS's configuration: the plan's system database, one executor id for every worker."""
    config: dict[str, Any] = {
        "name": "agentsession-tests",
        "system_database_url": plan["system_db"],
        "executor_id": plan.get("executor_id", "durable-test-worker"),
        "log_level": "WARNING",
        "notification_listener_polling_interval_sec": 0.1,
    }
    if plan.get("schema"):
        config["dbos_system_schema"] = plan["schema"]
    if str(plan["system_db"]).startswith("sqlite"):
        from agentsession.durable.dbos import sqlite_system_database

        config["system_database_engine"] = sqlite_system_database(plan["system_db"])
    return config


def main(path: str) -> None:
    from dbos import DBOS

    from agentsession.durable import dbos as durable_dbos

    plan = json.loads(Path(path).read_text(encoding="utf-8"))
    runtime = runtime_of(plan)
    DBOS(config=dbos_config(plan))
    tenants = {k: durable_dbos.TenantLimits(**v) for k, v in plan.get("tenants", {}).items()}
    default = plan.get("default_limits")
    durable_dbos.register(
        runtime,
        polling_interval=0.1,
        stale_retries=30,
        tenants=tenants,
        default_limits=None if default is None else durable_dbos.TenantLimits(**default),
    )
    if "listen" in plan:
        DBOS.listen_queues(plan["listen"])
    DBOS.launch()
    try:
        results: list[Any] = []
        if "serve_until" in plan:  # a worker of the fleet: run turns until told to stop
            durable_dbos.turn_queue()
            while not Path(plan["serve_until"]).exists():
                time.sleep(0.1)
        if "batch" in plan:
            durable_dbos.turn_queue()
            handles = [
                durable_dbos.run_turn(t["session"], t["text"], tenant=t["tenant"])
                for t in plan["batch"]
            ]
            results = [h.get_result().as_json() for h in handles]
            results.append({"queues": _queues({t["tenant"] for t in plan["batch"]})})
        for turn in plan.get("tenant_turns", []):  # each: answered, or why it was refused
            try:
                durable_dbos.turn_queue()
                handle = durable_dbos.run_turn(turn["session"], turn["text"], tenant=turn["tenant"])
                results.append(handle.get_result().text)
            except ags.UsageError as exc:
                results.append(f"refused: {exc}")
        for turn in plan.get("turns", []):
            handle = durable_dbos.run_turn(plan["session"], turn["text"], workflow_id=turn["id"])
            results.append(handle.get_result().as_json())
        if "resume" in plan:
            answers = [durable_dbos.ApprovalAnswer(**a) for a in plan["resume"]["answers"]]
            handle = durable_dbos.resume_turn(
                plan["session"], answers, workflow_id=plan["resume"]["id"]
            )
            results.append(handle.get_result().as_json())
        Path(plan["out"]).write_text(json.dumps(results), encoding="utf-8")
    finally:
        DBOS.destroy()
        from agentsession.sync import run_sync

        run_sync(runtime.close())


def _queues(tenants: set[str]) -> dict[str, Any]:
    """Each tenant queue's limits as DBOS stored them."""
    from dbos import DBOS

    from agentsession.durable import dbos as durable_dbos

    found = {}
    for tenant in tenants:
        queue = DBOS.retrieve_queue(durable_dbos.tenant_queue(durable_dbos.QUEUE, tenant))
        assert queue is not None
        found[tenant] = {
            "global_concurrency": queue.global_concurrency,
            "limiter": queue.limiter,
            "partition_concurrency": queue.partition_concurrency,
        }
    return found


if __name__ == "__main__":
    main(sys.argv[1])
