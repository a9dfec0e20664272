"""A dead holder's lease is void at once, not after its TTL: a real process killed with SIGKILL.

The holder is a real subprocess that takes a session's lease (a TTL of ten minutes) and then
waits; it is killed with SIGKILL, so nothing is released or flushed. On PostgreSQL the holder's
presence lock dies with its connection; on SQLite the holder is a process of this machine that
no longer exists. Either way another owner takes the lease well before the TTL could have run
out — which is what the test asserts, without measuring time.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.engine.leases import LeaseKeeper, _dead_here
from agentsession.errors import ConflictError

_TTL = 600.0  # far longer than the test's own bounds: only a void lease can be taken

_HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    import agentsession as ags
    from agentsession.engine.leases import LeaseKeeper

    async def main(kind, where, session_id, owner=None):
        store = ags.PostgresStore(where) if kind == "postgres" else ags.SQLiteStore(where)
        await LeaseKeeper(store, session_id, ttl=600.0, owner=owner).hold()
        print("HELD", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main(*sys.argv[1:]))
    """
)


def _store(kind: str, where: str) -> ags.Store:
    return ags.PostgresStore(where) if kind == "postgres" else ags.SQLiteStore(where)


async def _take_after_kill(kind: str, where: str, elsewhere: bool = False) -> None:
    """``elsewhere``: the holder names another machine, so only the database can void it."""
    store = _store(kind, where)
    runtime = ags.Runtime(store=store, model=ags.ScriptedModel([]))
    session = await runtime.create_session()
    await session.close()
    owner = [f"elsewhere.invalid:{os.getpid()}"] if elsewhere else []
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLDER, kind, where, session.id, *owner, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        line = await asyncio.wait_for(holder.stdout.readline(), 120)
        assert line.strip() == b"HELD"
        # An owner name of this test's own: presence locks are keyed database-wide.
        taker = LeaseKeeper(store, session.id, ttl=_TTL, owner=f"taker-{session.id}")
        with pytest.raises(ConflictError):
            await taker.hold()  # the holder is alive: its lease holds
        lease = await store.lease_of(session.id)
        assert lease is not None
        if elsewhere:
            assert lease.owner == owner[0]
        else:
            assert lease.owner.endswith(f":{holder.pid}")
        assert not _dead_here(lease.owner)  # alive, or out of this machine's sight
    finally:
        holder.kill()  # SIGKILL: the holder releases nothing
        await asyncio.wait_for(holder.wait(), 120)
    # The server notices the closed connection on its own schedule: ask until it has, within a
    # bound far below the lease's TTL (nothing here depends on how fast the machine is).
    for _ in range(1200):
        try:
            await taker.hold()
            break
        except ConflictError:
            await asyncio.sleep(0.1)
    else:
        raise AssertionError("the dead holder's lease was never void")
    lease = await store.lease_of(session.id)
    assert lease is not None and lease.owner == taker.owner
    await taker.release()
    await runtime.close()


async def test_a_killed_holders_lease_is_taken_at_once_on_sqlite(tmp_path: Path) -> None:
    await _take_after_kill("sqlite", str(tmp_path / "db.sqlite"))


@pytest.mark.postgres
async def test_a_killed_holders_lease_is_taken_at_once_on_postgres(pg_dsn: str) -> None:
    await _take_after_kill("postgres", pg_dsn)


@pytest.mark.postgres
async def test_a_killed_holder_on_another_machine_is_void_by_its_connection_alone(
    pg_dsn: str,
) -> None:
    """The holder's owner names another machine (this pid, alive throughout): no look at this
    machine's processes can void its lease, only the database ending its presence connection.
    With a TTL of ten minutes the takeover cannot have waited for it."""
    await _take_after_kill("postgres", pg_dsn, elsewhere=True)


@pytest.mark.postgres
async def test_a_live_holder_keeps_its_lease_and_a_closed_store_lets_go(pg_dsn: str) -> None:
    """Presence is per owner: a live owner's lease holds; closing its store voids it."""
    first, second = ags.PostgresStore(pg_dsn), ags.PostgresStore(pg_dsn)
    runtime = ags.Runtime(store=first, model=ags.ScriptedModel([]))
    session = await runtime.create_session()
    await session.close()
    assert await first.acquire_lease(session.id, "one", _TTL)
    assert not await second.acquire_lease(session.id, "two", _TTL)
    found = await second.lease_of(session.id)
    assert found is not None and found.owner == "one"
    await runtime.close()  # closes ``first``: its owners' presence ends with it
    assert await second.acquire_lease(session.id, "two", _TTL)
    found = await second.lease_of(session.id)
    assert found is not None and found.owner == "two"
    await second.close()


class _LetGoMeanwhile(ags.MemoryStore):
    """A store where the holder lets go between a taker's refused take and its read of the
    lease: the order a killed holder's connection ending at the database can fall in."""

    def __init__(self, holder: str) -> None:
        super().__init__()
        self.holder = holder

    async def lease_of(self, session_id: str) -> ags.Lease | None:
        await self.release_lease(session_id, self.holder)
        return await super().lease_of(session_id)


async def test_a_lease_let_go_between_the_take_and_the_read_is_taken_not_refused() -> None:
    store = _LetGoMeanwhile("elsewhere.invalid:1")
    runtime = ags.Runtime(store=store, model=ags.ScriptedModel([]))
    session = await runtime.create_session()
    await session.close()
    assert await store.acquire_lease(session.id, store.holder, _TTL)
    taker = LeaseKeeper(store, session.id, ttl=_TTL, owner="taker")
    await taker.hold()  # no conflict with nobody on the other side
    assert taker.held
    lease = await store.lease_of(session.id)
    assert lease is not None and lease.owner == "taker"
    await runtime.close()


@pytest.mark.skipif(sys.platform != "linux", reason="zombies are read from /proc")
def test_a_killed_process_its_parent_has_not_collected_holds_no_lease() -> None:
    """Between its death and its parent's ``wait`` a process is a zombie: its pid still exists."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        owner = f"{socket.gethostname()}:{child.pid}"
        assert not _dead_here(owner)  # alive: its leases hold
        os.kill(child.pid, signal.SIGKILL)
        # Wait for the death without collecting it (``WNOWAIT``): the pid stays, a zombie.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert _dead_here(owner)
    finally:
        child.kill()
        child.wait()
