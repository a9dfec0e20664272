"""A worker that runs two turns of one session at once: ``python -m tests.durable.race_worker``.

The turns go through a queue without DBOS's partition limit (``partition_concurrency`` left
out on purpose) that one worker takes two turns at a time from, so DBOS starts both at once,
as two workers once did on a SQLite system database (issue 38); only the package's own order
keeps the second turn out of the session. The first turn's ``work`` call ends once the second
turn says, through its ``WAITS_FOR`` event, that it waits for the first. The plan names the
session store, the DBOS system database, the session and the two workflow ids; the results
(each turn's ``Settled`` and the second turn's recorded order step) go to ``out``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import agentsession as ags

from ..durability.common import planned_reply
from .worker import CONFIG, dbos_config, store_of


def racing_tool(second: str) -> ags.Tool:
    """``work`` that ends once the turn ``second`` waits for it (bounded, so a bug fails)."""
    from dbos import DBOS

    from agentsession.durable.dbos import WAITS_FOR

    @ags.tool(effect="write")
    def work(n: int, by: str) -> str:
        """Do one numbered piece of work.

        Args:
            n: The piece of work.
            by: Who asked.
        """
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if DBOS.get_event(second, WAITS_FOR, timeout_seconds=0) is not None:
                return f"work {n} done for {by}"
            time.sleep(0.05)
        return "gave up waiting for the second turn"

    return work


def main(path: str) -> None:
    from dbos import DBOS, SetEnqueueOptions, SetWorkflowID

    from agentsession.durable import dbos as durable_dbos

    plan = json.loads(Path(path).read_text(encoding="utf-8"))
    second = plan["ids"][1]
    runtime = ags.Runtime(
        model=ags.ScriptedModel(planned_reply),
        store=store_of(plan),
        tools=[racing_tool(second)],
        project_dir=Path(plan["out"]).parent,
        config=CONFIG,
    )
    DBOS(config=dbos_config(plan))
    durable_dbos.register(runtime, polling_interval=0.1, stale_retries=30)
    DBOS.launch()
    try:
        bypass = DBOS.register_queue("race", worker_concurrency=2, polling_interval_sec=0.1)
        handles = []
        for wid, text in zip(plan["ids"], plan["texts"], strict=True):
            with SetEnqueueOptions(queue_partition_key=plan["session"]), SetWorkflowID(wid):
                handles.append(bypass.enqueue(durable_dbos._turn_workflow, plan["session"], text))
        results: list[Any] = [h.get_result().as_json() for h in handles]
        steps = DBOS.list_workflow_steps(second)
        results.append([s["output"] for s in steps if s["function_name"] == "agentsession.order"])
        Path(plan["out"]).write_text(json.dumps(results), encoding="utf-8")
    finally:
        DBOS.destroy()
        from agentsession.sync import run_sync

        run_sync(runtime.close())


if __name__ == "__main__":
    main(sys.argv[1])
