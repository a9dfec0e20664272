"""Turns on DBOS: a worker runs them, an enqueuer and an HTTP endpoint start them.

Each turn is one DBOS workflow whose steps pass references (a session id, seqs, call ids): the
conversation stays in the session's log, so DBOS keeps a few hundred bytes per step. A worker
binds its runtime with ``register(runtime)`` before ``DBOS.launch()``; ``run_turn(session_id,
text)`` enqueues a turn from anywhere connected to the same DBOS system database and returns a
workflow handle. Each turn goes through its tenant's queue (``TenantLimits``: at most two of
the tenant's turns at once across the fleet, sixty a minute), partitioned by session so a
session's turns run one at a time, in order. A call the permission preset asks about settles
the turn as ``approval_required``; ``resume_turn`` with the user's answer finishes it. Here
everything runs offline in one process, on SQLite files in a temporary
folder, with a scripted model. For a fleet, start ``python examples/dbos_worker.py worker
STORE_DB SYSTEM_DB_URL`` once per worker (PostgreSQL for both on many machines) and enqueue from
your web process. Needs the ``durable`` extra (DBOS); the endpoint needs FastAPI (and httpx to
call it in-process).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import tempfile
import threading
from pathlib import Path

import agentsession as ags
from agentsession.durable import dbos as durable

LOOKUPS: list[str] = []
REFUNDS: list[str] = []
TENANTS = {"acme": durable.TenantLimits(concurrency=2, per_minute=60)}


@ags.tool
def lookup_order(order: int) -> str:
    """Look an order up.

    Args:
        order: The order's number.
    """
    LOOKUPS.append(str(order))  # the side effect a retried turn must not repeat
    return f"order {order}: shipped Tuesday"


@ags.tool(effect="execute")
def refund_order(order: int) -> str:
    """Refund an order (runs the payment script, so the preset asks first).

    Args:
        order: The order's number.
    """
    REFUNDS.append(str(order))
    return f"order {order}: refunded"


def make_runtime(store_path: Path) -> ags.Runtime:
    """The worker's runtime: its store, the scripted model, the application's tools."""
    model = ags.ScriptedModel(
        [
            [ags.ToolCall("lookup_order", {"order": 42})],
            "Order 42 shipped on Tuesday.",
            "You're welcome.",
            [ags.ToolCall("refund_order", {"order": 42}, "refund-42")],
            "Order 42 is refunded.",
        ]
    )
    return ags.Runtime(
        model=model,
        store=ags.SQLiteStore(store_path),
        tools=[lookup_order, refund_order],
        project_dir=store_path.parent,
        config=ags.Config(titles=False),
    )


def start_worker(runtime: ags.Runtime, system_db: str) -> None:
    """Bind the runtime, launch DBOS (recovering what a dead worker left), listen to the queue."""
    from dbos import DBOS, DBOSConfig

    config: DBOSConfig = {
        "name": "agentsession-example",
        "system_database_url": system_db,
        "log_level": "WARNING",
    }
    if system_db.startswith("sqlite"):  # so DBOS's queue limits hold across worker processes
        config["system_database_engine"] = durable.sqlite_system_database(system_db)
    DBOS(config=config)
    durable.register(runtime, polling_interval=0.1, tenants=TENANTS)
    DBOS.launch()
    durable.turn_queue()


def endpoint() -> object:
    """A FastAPI endpoint that enqueues a turn and answers at once with its workflow id."""
    from fastapi import Body, FastAPI

    app = FastAPI()

    @app.post("/sessions/{session_id}/turns", status_code=202)
    async def start_turn(
        session_id: str,
        body: dict[str, str] = Body(),  # noqa: B008 (FastAPI's way to name the JSON body)
    ) -> dict[str, str]:
        # run_turn talks to DBOS's system database synchronously: off the event loop.
        handle = await asyncio.to_thread(
            durable.run_turn, session_id, body["text"], tenant=body["tenant"]
        )
        return {"workflow_id": handle.workflow_id}

    return app


async def over_http(app: object, session_id: str, text: str) -> tuple[int, str]:
    """POST a prompt to the endpoint in-process (no port, no network)."""
    import httpx

    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://example") as client:
        body = {"text": text, "tenant": "acme"}
        response = await client.post(f"/sessions/{session_id}/turns", json=body)
    return response.status_code, str(response.json()["workflow_id"])


def demo() -> None:
    """Three turns offline: one enqueued directly, one through the endpoint, one approved."""
    from dbos import DBOS

    with tempfile.TemporaryDirectory() as folder:
        runtime = make_runtime(Path(folder) / "sessions.db")
        start_worker(runtime, f"sqlite:///{folder}/dbos.sqlite")
        try:
            session_id = runtime.create_session_sync().id
            # The enqueuer: any process connected to DBOS's system database.
            first = durable.run_turn(session_id, "Where is order 42?", tenant="acme")
            settled = first.get_result()
            print(f"turn 1: {settled.text} ({settled.stop_reason}, last seq {settled.last_seq})")
            status, workflow_id = asyncio.run(over_http(endpoint(), session_id, "Thanks!"))
            print(f"enqueued over HTTP: {status}")
            settled = DBOS.retrieve_workflow(workflow_id).get_result()
            print(f"turn 2: {settled.text} ({settled.stop_reason}, last seq {settled.last_seq})")
            paused = durable.run_turn(session_id, "Refund it.", tenant="acme").get_result()
            print(f"turn 3: {paused.stop_reason}, waiting {list(paused.waiting)}")
            answers = [durable.ApprovalAnswer(call_id, approved=True) for call_id in paused.waiting]
            settled = durable.resume_turn(session_id, answers, tenant="acme").get_result()
            print(f"turn 3 resumed: {settled.text} ({settled.stop_reason})")
            print(f"tool runs: {LOOKUPS}, refunds: {REFUNDS}")
            messages = runtime.open_session_sync(session_id).messages
            print(f"transcript: {[m.role for m in messages]}")
        finally:
            DBOS.destroy()
            runtime.close_sync()


def worker(store_path: str, system_db: str) -> None:
    """Run turns until SIGTERM or SIGINT."""
    from dbos import DBOS

    runtime = make_runtime(Path(store_path))
    start_worker(runtime, system_db)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    DBOS.destroy()
    runtime.close_sync()


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker(sys.argv[2], sys.argv[3])
    else:
        demo()
