"""A DBOS worker process for the durable tests: ``python -m tests.durable.worker PLAN.json``.

The plan (JSON) names the session store, the DBOS system database, the side file the ``work``
tool appends to, and one turn: the worker enqueues it (by workflow id, so a second worker gets
the same workflow) and writes its result to ``out``. ``kill_after`` SIGKILLs the process right
after its N-th append commits — a step's effect durable, the engine not yet told: a step
boundary. ``kill_in_tool`` SIGKILLs it inside the tool, after the side effect, before its result.
A fresh worker with the same executor id recovers the turn at launch.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import agentsession as ags
from agentsession.log import LogEntry, Record

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


def runtime_of(plan: dict[str, Any]) -> ags.Runtime:
    """The worker's runtime: the scripted model, the ``work`` tool, the plan's store."""
    side = Path(plan["side"])
    tool = side_tool(side)
    if plan.get("kill_in_tool"):
        inner = tool

        @ags.tool(effect="write", name="work")
        def work(n: int, by: str, context: ags.ToolContext) -> str:
            """Do one numbered piece of work, then die before the result is stored.

            Args:
                n: The piece of work.
                by: Who asked.
            """
            inner.fn(n=n, by=by, context=context)
            os.kill(os.getpid(), signal.SIGKILL)
            return "never"

        tool = work
    return ags.Runtime(
        model=ags.ScriptedModel(planned_reply),
        store=KillAfter(store_of(plan), int(plan.get("kill_after", 0))),
        tools=[tool],
        project_dir=side.parent,
        config=CONFIG,
    )


def dbos_config(plan: dict[str, Any]) -> Any:
    """DBOS's configuration: the plan's system database, one executor id for every worker."""
    config: dict[str, Any] = {
        "name": "agentsession-tests",
        "system_database_url": plan["system_db"],
        "executor_id": "durable-test-worker",
        "log_level": "WARNING",
        "notification_listener_polling_interval_sec": 0.1,
    }
    if plan.get("schema"):
        config["dbos_system_schema"] = plan["schema"]
    return config


def main(path: str) -> None:
    from dbos import DBOS

    from agentsession.durable import dbos as durable_dbos

    plan = json.loads(Path(path).read_text(encoding="utf-8"))
    runtime = runtime_of(plan)
    DBOS(config=dbos_config(plan))
    durable_dbos.register(runtime, polling_interval=0.1, stale_retries=30)
    DBOS.launch()
    try:
        results = []
        for turn in plan["turns"]:
            handle = durable_dbos.run_turn(plan["session"], turn["text"], workflow_id=turn["id"])
            results.append(handle.get_result().as_json())
        Path(plan["out"]).write_text(json.dumps(results), encoding="utf-8")
    finally:
        DBOS.destroy()
        from agentsession.sync import run_sync

        run_sync(runtime.close())


if __name__ == "__main__":
    main(sys.argv[1])
