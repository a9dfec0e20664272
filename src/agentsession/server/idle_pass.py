"""The idle pass of ``agentsession serve --idle-interval``: ``tend_idle`` over stored sessions.

Every ``interval`` seconds the pass looks at the sessions updated within the longest cache
lifetime (older ones hold no warm cache, so there is nothing to decide) and tends each that no
turn of this process runs and no other process leases: it opens the session, runs one idle
decision through ``Runtime.tend_idle`` (which leaves a session waiting on approvals alone and
takes the session's lease before it calls a model), and closes it, releasing the lease. Every
process of a fleet may run the pass: the lease lets only one of them act on a session, and a
process that opens a session after another kept it warm sees that call in the log (its moment
restarts the lifetime), so it does not refresh it again. Within the process, a turn and the
pass never hold one session at once: ``Turns.start`` waits for the pass to let go of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta

from ..engine.leases import live_lease, new_owner
from ..errors import AgentSessionError
from ..ledger import LONGEST_TTL
from ..ledger.idle import IdleOutcome
from ..runtime import Runtime
from .turns import Turns

__all__ = ["IdlePass", "tend_stored"]

_LOG = logging.getLogger("agentsession.server.idle")


async def tend_stored(runtime: Runtime, turns: Turns, *, horizon: float) -> dict[str, IdleOutcome]:
    """One idle decision for each stored session updated within ``horizon`` seconds.

    Sessions this process runs a turn for, and sessions another process leases, are skipped
    (not listed). Returns what was done per session tended.
    """
    cutoff = datetime.now().astimezone() - timedelta(seconds=horizon)
    done: dict[str, IdleOutcome] = {}
    for info in await runtime.list_sessions():
        if _updated(info.updated_at) < cutoff:
            break  # newest first: the rest are older still
        if info.id in turns.running or info.id in turns.tending:
            continue
        lease = await live_lease(runtime.store, info.id)
        if lease is not None and lease.owner != new_owner():
            continue
        outcome = await _tend_one(runtime, turns, info.id)
        if outcome is not None:
            done[info.id] = outcome
    return done


async def _tend_one(runtime: Runtime, turns: Turns, session_id: str) -> IdleOutcome | None:
    released = turns.claim(session_id)
    if released is None:
        return None
    try:
        session = await runtime.open_session(session_id)
        try:
            return (await runtime.tend_idle([session]))[session.id]
        finally:
            await session.close()
    except AgentSessionError as exc:  # gone, leased meanwhile, a store error: next time
        _LOG.info("idle pass skipped %s: %s", session_id, exc)
        return None
    finally:
        released.set()
        turns.tending.pop(session_id, None)


def _updated(stamp: str) -> datetime:
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return datetime.min.replace(tzinfo=datetime.now().astimezone().tzinfo)
    return moment if moment.tzinfo else moment.astimezone()


class IdlePass:
    """``tend_stored`` every ``interval`` seconds until stopped; a failing pass is logged."""

    def __init__(self, runtime: Runtime, turns: Turns, interval: float) -> None:
        self.runtime = runtime
        self.turns = turns
        self.interval = interval
        self.passes = 0
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Run the pass in the background."""
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        horizon = LONGEST_TTL + self.interval
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.interval)
                return
            try:
                await tend_stored(self.runtime, self.turns, horizon=horizon)
            except Exception:  # the store is away: try again at the next interval
                _LOG.warning("idle pass failed", exc_info=True)
            self.passes += 1

    async def stop(self) -> None:
        """Stop after the pass under way (a call it makes is recorded, never left billed)."""
        self._stopping.set()
        if self._task is not None:
            await self._task
