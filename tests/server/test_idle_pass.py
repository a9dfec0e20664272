"""The idle pass of ``serve``: two real processes tend one stored session, and only one acts.

A session with reported usage and a price is made here by a clock the test moves, so that its
cache is 20 s from expiring and its gaps argue for keeping it warm. Two subprocesses open the
same store (SQLite file or PostgreSQL), each with a runtime whose clock stands at that moment
(nothing depends on how fast the machine is), and on one signal both run the pass
(``server.idle_pass.tend_stored``) twice. Exactly one keep-warm call reaches the log: the lease
lets one process act at a time, and a process that opens the session after the other kept it
warm sees the refresh in the log and does nothing. A session waiting on an approval, and one
this process runs a turn for, are left alone.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.log import SideCall
from agentsession.server import create_app
from agentsession.server.idle_pass import IdlePass, tend_stored
from agentsession.server.notify import Notifier
from agentsession.server.turns import Turns

PRICE = ags.ModelPrice(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
T0 = datetime(2026, 12, 1, 9, 0).astimezone()

_TENDER = textwrap.dedent(
    """
    import asyncio, json, sys
    from datetime import datetime
    import agentsession as ags
    from agentsession.server.idle_pass import tend_stored
    from agentsession.server.notify import Notifier
    from agentsession.server.turns import Turns

    async def main(kind, where, moment):
        store = ags.PostgresStore(where) if kind == "postgres" else ags.SQLiteStore(where)
        profile = ags.ModelProfile(provider="test", reports_usage=True)
        model = ags.ScriptedModel(lambda request: "ok", name="test-model", profile=profile)
        price = ags.ModelPrice(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
        config = ags.Config(titles=False, prices={"test-model": price}, idle_policy="auto")
        now = datetime.fromisoformat(moment)
        runtime = ags.Runtime(store=store, model=model, clock=lambda: now, config=config)
        turns = Turns(runtime, Notifier(store))
        print("READY", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        actions = []
        for _ in range(2):
            done = await tend_stored(runtime, turns, horizon=3600 * 24 * 365)
            actions += [o.action for o in done.values()]
        await runtime.close()
        print(json.dumps(actions), flush=True)

    asyncio.run(main(*sys.argv[1:]))
    """
)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _store(kind: str, where: str) -> ags.Store:
    return ags.PostgresStore(where) if kind == "postgres" else ags.SQLiteStore(where)


def _runtime(store: ags.Store, clock: Clock) -> ags.Runtime:
    profile = ags.ModelProfile(provider="test", reports_usage=True)
    model = ags.ScriptedModel(
        lambda r: f"answer {len(r.messages)}", name="test-model", profile=profile
    )
    config = ags.Config(titles=False, prices={"test-model": PRICE}, idle_policy="auto")
    return ags.Runtime(store=store, model=model, clock=clock, config=config)


async def _warm_session(store: ags.Store, clock: Clock) -> str:
    """A session whose 5-minute cache has 20 s left and whose gaps say: keep it warm."""
    async with _runtime(store, clock) as runtime:
        session = await runtime.create_session()
        await session.prompt("first " + "word " * 2_000)
        for gap in (30, 400, 400, 400):
            clock.now += timedelta(seconds=gap)
            await session.prompt("again")
        clock.now += timedelta(seconds=280)
        return session.id


async def _two_tenders(kind: str, where: str) -> None:
    store, clock = _store(kind, where), Clock()
    session_id = await _warm_session(store, clock)
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _TENDER,
            kind,
            where,
            clock.now.isoformat(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert (await asyncio.wait_for(proc.stdout.readline(), 120)).strip() == b"READY"
        for proc in procs:  # both start their passes together
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            await proc.stdin.drain()
        reports = []
        for proc in procs:
            assert proc.stdout is not None
            reports.append(json.loads(await asyncio.wait_for(proc.stdout.readline(), 120)))
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
    actions = [a for report in reports for a in report]
    assert actions.count("kept_warm") == 1, reports
    async with _runtime(_store(kind, where), clock) as runtime:
        session = await runtime.open_session(session_id)
        calls = [r.entry for r in await session.log() if isinstance(r.entry, SideCall)]
    assert [c.purpose for c in calls] == ["keep_warm"]


async def test_two_processes_keep_one_sqlite_session_warm_once(tmp_path: Path) -> None:
    await _two_tenders("sqlite", str(tmp_path / "db.sqlite"))


@pytest.mark.postgres
async def test_two_processes_keep_one_postgres_session_warm_once(pg_dsn: str) -> None:
    await _two_tenders("postgres", pg_dsn)


async def test_the_pass_leaves_a_session_this_process_runs_alone(tmp_path: Path) -> None:
    store, clock = ags.SQLiteStore(tmp_path / "db.sqlite"), Clock()
    session_id = await _warm_session(store, clock)
    async with _runtime(ags.SQLiteStore(tmp_path / "db.sqlite"), clock) as runtime:
        turns = Turns(runtime, Notifier(runtime.store))
        held = turns.claim(session_id)  # as a turn starting would
        assert held is not None
        assert await tend_stored(runtime, turns, horizon=10**9) == {}
        held.set()
        turns.tending.pop(session_id)
        done = await tend_stored(runtime, turns, horizon=10**9)
        assert done[session_id].action == "kept_warm"
        # opened afresh a moment later: the refresh in the log restarts the lifetime
        clock.now += timedelta(seconds=5)
        again = await tend_stored(runtime, turns, horizon=10**9)
        assert again[session_id].action == "nothing"
        assert "stays warm" in again[session_id].reason


async def test_the_pass_runs_on_its_timer_and_stops_after_the_pass_under_way(
    tmp_path: Path,
) -> None:
    store, clock = ags.SQLiteStore(tmp_path / "db.sqlite"), Clock()
    session_id = await _warm_session(store, clock)
    async with _runtime(ags.SQLiteStore(tmp_path / "db.sqlite"), clock) as runtime:
        app = create_app(runtime, idle_interval=0.01)
        idle = app.state.idle_pass
        assert isinstance(idle, IdlePass)
        idle.start()
        for _ in range(12_000):  # a bound, not a measure: the pass runs when the loop lets it
            if idle.passes:
                break
            await asyncio.sleep(0.01)
        await idle.stop()
        assert idle.passes >= 1
        session = await runtime.open_session(session_id)
        calls = [r.entry for r in await session.log() if isinstance(r.entry, SideCall)]
        assert [c.purpose for c in calls] == ["keep_warm"]
    assert create_app(runtime).state.idle_pass is None


@pytest.mark.parametrize("value", ["0", "-5", "nan"])
def test_serve_refuses_an_idle_interval_that_is_not_positive(tmp_path: Path, value: str) -> None:
    command = [sys.executable, "-m", "agentsession", "--db", str(tmp_path / "x.db")]
    done = subprocess.run(
        [*command, "--model", "scripted:demo", "serve", "--port", "1", "--idle-interval", value],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0 and not (tmp_path / "x.db").exists()
    assert "--idle-interval must be a positive number" in done.stderr
