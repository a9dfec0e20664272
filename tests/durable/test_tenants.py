"""Tenants on DBOS: a tenant's cap holds across its sessions, other tenants pass, order stays.

A fleet of two worker processes runs the turns another process (``tests.durable.worker`` with
a ``batch`` plan, listening to no queue) enqueues: turns of three sessions of tenant
``capped`` (at most one turn at a time across the fleet) and one session of tenant ``free`` (no
cap: the default limits of a tenant not named); it waits for all of them. Each turn runs
one ``work`` call that records its start and end; a ``capped`` call ends only once a ``free``
call has ended. So: the ``capped`` events never nest (its cap held while its other sessions'
turns were queued and free to run), the ``free`` turn ended while a ``capped`` one was running
(the other tenant was not held back by the capped one — were it, the capped call would give up
waiting), and every session's prompts reached its log in the order they were enqueued. No
timing is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.durable import TenantLimits, tenant_queue
from agentsession.log import UserEntry

from .test_dbos import ROOT, Setup, read_log, sessions, setup, work

pytest.importorskip("dbos", reason="the durable extra (DBOS) is not installed")
__all__ = ["setup"]  # the fixture, shared with the DBOS tests


def _start(plans: list[Path]) -> list[subprocess.Popen[bytes]]:
    """Worker processes of the fleet, one per plan."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    command = [sys.executable, "-m", "tests.durable.worker"]
    return [subprocess.Popen([*command, str(plan)], cwd=ROOT, env=env) for plan in plans]


def _events(path: Path) -> list[tuple[str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(line.split(" ", 1)[0], line.split(" ", 1)[1]) for line in lines if line]


async def test_a_tenants_cap_holds_without_holding_back_others_or_reordering_a_session(
    setup: Setup,
) -> None:
    capped = await sessions(setup, 3)
    (free,) = await sessions(setup, 1)
    batch = []
    for k in range(3):  # interleaved, so the queue holds every capped session at once
        for i, sid in enumerate(capped):
            batch.append(
                {"session": sid, "tenant": "capped", "text": f"capped-{i} prompt {k}: 1x1"}
            )
    batch.append({"session": free, "tenant": "free", "text": "free prompt 0: 1x1"})
    events = setup.tmp / "events.txt"
    tenants = {"capped": {"concurrency": 1, "per_minute": 600}}  # "free" takes the default
    common = {"tenants": tenants, "default_limits": {}, "events": str(events)}
    stop = setup.tmp / "stop"
    fleet = _start(
        [
            setup.plan("", [], serve_until=str(stop), executor_id=f"fleet-{n}", **common)
            for n in range(2)
        ]
    )
    try:
        # The enqueuer runs no turn itself: the two workers of the fleet run them all.
        *results, queues = work(setup.plan("", [], batch=batch, listen=[], **common))
    finally:
        stop.touch()
        for worker in fleet:
            assert worker.wait(timeout=300) == 0

    assert [r["text"] for r in results] == [f" answered: {t['text']}" for t in batch]
    seen = _events(events)
    assert not [e for e in seen if e[0] == "gave-up"]
    capped_events = [e for e in seen if e[1].startswith("capped")]
    assert len(capped_events) == 2 * 9
    for start, end in zip(capped_events[::2], capped_events[1::2], strict=True):
        assert start[0] == "start" and end == ("end", start[1]), capped_events  # never nested
    free_end = seen.index(("end", "free.0.0.0"))
    first_capped_end = next(i for i, e in enumerate(seen) if e[0] == "end" and e[1] != "free.0.0.0")
    assert free_end < first_capped_end  # the free tenant ran while a capped turn waited on it

    for i, sid in enumerate(capped):
        users = [r.entry for r in await read_log(setup, sid) if isinstance(r.entry, UserEntry)]
        assert [u.content for u in users] == [f"capped-{i} prompt {k}: 1x1" for k in range(3)]
        starts = [e[1] for e in seen if e[0] == "start" and e[1].startswith(f"capped-{i}.")]
        assert starts == [f"capped-{i}.{k}.0.0" for k in range(3)]

    assert queues["queues"]["capped"] == {
        "global_concurrency": 1,
        "limiter": {"limit": 600, "period": 60.0},
        "partition_concurrency": 1,
    }
    assert queues["queues"]["free"]["global_concurrency"] is None
    assert queues["queues"]["free"]["limiter"] is None


async def test_a_session_keeps_the_tenant_of_its_first_turn(setup: Setup) -> None:
    first, other = await sessions(setup, 2)
    turns = [
        (first, "a", "first prompt 0: 1x1"),
        (first, "b", "first prompt 1: 1x1"),  # another tenant's queue: refused
        (first, None, "first prompt 2: 1x1"),  # the default queue: refused
        (first, "a", "first prompt 3: 1x1"),
        (other, "b", "other prompt 0: 1x1"),  # another session may have another tenant
    ]
    plan = setup.plan(
        "",
        [],
        tenants={"a": {}, "b": {}},
        tenant_turns=[{"session": s, "tenant": t, "text": x} for s, t, x in turns],
    )
    results: list[Any] = list(work(plan))  # each turn's text, or why it was refused

    assert results[0] == " answered: first prompt 0: 1x1"
    assert results[1].startswith(f"refused: session {first} belongs to tenant 'a'")
    assert "a turn for tenant 'b' is refused" in results[1]
    assert "a turn for the default queue is refused" in results[2]
    assert results[3:] == [" answered: first prompt 3: 1x1", " answered: other prompt 0: 1x1"]
    users = [r.entry for r in await read_log(setup, first) if isinstance(r.entry, UserEntry)]
    assert [u.content for u in users] == ["first prompt 0: 1x1", "first prompt 3: 1x1"]


def test_tenant_limits_and_names_are_checked() -> None:
    with pytest.raises(ags.UsageError):
        TenantLimits(concurrency=0)
    with pytest.raises(ags.UsageError):
        TenantLimits(per_minute=-1)
    assert tenant_queue("turns", "acme") == "turns.acme"
    for bad in ("", "two words", "tab\there", "x" * 101):
        with pytest.raises(ags.UsageError):
            tenant_queue("turns", bad)


def test_an_unknown_tenant_is_refused_before_anything_is_enqueued(tmp_path: Path) -> None:
    from agentsession.durable import dbos as durable_dbos

    runtime = ags.Runtime(model=ags.ScriptedModel(["x"]), store=ags.MemoryStore())
    with pytest.raises(ags.UsageError):
        durable_dbos.register(runtime, tenants={"bad name": TenantLimits()})
    durable_dbos.register(runtime, tenants={"acme": TenantLimits(concurrency=2)})
    try:
        with pytest.raises(ags.UsageError, match="not registered"):
            durable_dbos.run_turn("s", "hello", tenant="globex")
    finally:
        durable_dbos._registered.clear()
