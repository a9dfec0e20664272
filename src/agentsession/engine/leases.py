"""The lease that marks the process driving a session.

The owner is the process (host and pid): session objects of one process share it. A session
takes the lease before anything that writes, keeps it between operations (it is renewed only
when past half its life, so a busy session pays one write per half-life, not one per prompt) and
renews it in the background while a long turn runs. Another process that wants to drive the
session waits until the lease is released or expires; until then it gets a ``ConflictError`` and
must not recover the holder's unfinished step, which is live, not dead — except when the holder
is a process of this same machine that no longer exists: then its lease is void at once.
``Runtime.close()`` releases the leases of the sessions it handed out.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import AsyncIterator, Callable

from ..errors import ConflictError
from ..store.base import Lease, Store
from ..store.fast import fast_paths

__all__ = ["LeaseKeeper", "delete_undriven", "live_lease", "new_owner"]


def new_owner() -> str:
    """The lease owner name of this process: its machine and its pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _dead_here(owner: str) -> bool:
    """Whether ``owner`` names a process of this machine that has ended."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdecimal():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (we may just not be allowed to signal it)
    return _zombie(int(pid))


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has ended but its parent has not collected it yet (Linux; else False).

    A killed worker of ``serve --workers N`` stays a zombie until its supervisor looks: it
    holds nothing any more, so its leases are void already.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # "pid (name) state ...": the name may hold spaces and parentheses.
            return stat.read().rpartition(b")")[2].split()[:1] == [b"Z"]
    except OSError:
        return False


async def live_lease(store: Store, session_id: str) -> Lease | None:
    """The session's lease if a live process may hold it (a dead local holder's is void)."""
    lease = await store.lease_of(session_id)
    if lease is None or _dead_here(lease.owner):
        return None
    return lease


async def delete_undriven(store: Store, session_id: str, ttl: float) -> None:
    """Delete a session unless another live process drives it (``ConflictError`` then).

    Taking the lease first keeps a running turn from finding its session gone mid-step.
    """
    await LeaseKeeper(store, session_id, ttl).hold()
    await store.delete_session(session_id)


class LeaseKeeper:
    """Holds one session's lease for one session object."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        ttl: float,
        owner: str | None = None,
        on_taken: Callable[[int | None], None] | None = None,
    ) -> None:
        """Hold nothing yet; ``on_taken`` hears of each new taking of the lease.

        It gets the log's next seq the store read right after taking it (``None``: the store
        cannot tell).
        """
        self._on_taken = on_taken
        self._store = store
        self._session_id = session_id
        self._ttl = ttl
        self.owner = owner or new_owner()
        self._until = 0.0  # monotonic time the lease is known to run until

    @property
    def ttl(self) -> float:
        """Seconds the lease lasts after it was taken or last renewed."""
        return self._ttl

    @property
    def held(self) -> bool:
        """Whether this object believes it holds the lease right now."""
        return time.monotonic() < self._until

    async def hold(self) -> None:
        """Make sure the lease is ours for at least half its life; ``ConflictError`` if not."""
        if self._until - time.monotonic() > self._ttl / 2:
            return
        started = time.monotonic()
        if not await self._take():
            lease = await self._store.lease_of(self._session_id)
            # No live lease now: it was released, or its holder died, between the two
            # statements (a killed holder's connection ends on the database's schedule) —
            # take it at once rather than answer a conflict with nobody on the other side.
            gone = lease is None
            if lease is not None and _dead_here(lease.owner):
                await self._store.release_lease(self._session_id, lease.owner)
                gone = True
            if gone and await self._take():
                self._until = started + self._ttl
                return
            holder = ""
            if lease is not None:
                left = max(0.0, lease.expires_at - time.time())
                holder = f" by {lease.owner}, for up to {left:.0f} s more unless renewed"
            raise ConflictError(
                f"session {self._session_id} is being driven by another process (lease held"
                f"{holder}); try again when it is done",
                session_id=self._session_id,
                holder=None if lease is None else lease.owner,
            )
        self._until = started + self._ttl

    async def _take(self) -> bool:
        """``acquire_lease``; where the store can, noting the log's end read right after it."""
        take = fast_paths(self._store).take_lease
        end: int | None = None
        if take is None:
            took = await self._store.acquire_lease(self._session_id, self.owner, self._ttl)
        else:
            took, end = await take(self._session_id, self.owner, self._ttl)
        if took and self._on_taken is not None:
            self._on_taken(end)
        return took

    @contextlib.asynccontextmanager
    async def renewing(self) -> AsyncIterator[None]:
        """Keep the lease fresh while the block runs (a turn can outlast one lease).

        A timer, not a task waiting on an event: a turn is usually over long before the first
        renewal is due, and a task started and cancelled per turn cost several event-loop
        rounds each time. A renewal runs as a task of its own only once it is due.
        """
        renewal = _Renewal(self)
        try:
            yield
        finally:
            await renewal.stop()

    async def renew(self) -> bool:
        """Extend the lease now; ``False`` (and it is no longer believed held) if it was lost."""
        started = time.monotonic()
        if await self._store.renew_lease(self._session_id, self.owner, self._ttl):
            self._until = started + self._ttl
            return True
        self._until = 0.0
        return False

    async def release(self) -> None:
        """Give the lease up (nothing happens when it is not ours)."""
        if self._until:
            self._until = 0.0
            await self._store.release_lease(self._session_id, self.owner)


class _Renewal:
    """The renewals of one ``renewing`` block: every third of the lease's life until stopped."""

    def __init__(self, keeper: LeaseKeeper) -> None:
        self._keeper = keeper
        self._loop = asyncio.get_running_loop()
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        self._timer = self._loop.call_later(keeper.ttl / 3, self._due)

    def _due(self) -> None:
        if not self._stopped:
            self._task = self._loop.create_task(self._renew())

    async def _renew(self) -> None:
        if await self._keeper.renew() and not self._stopped:
            self._timer = self._loop.call_later(self._keeper.ttl / 3, self._due)

    async def stop(self) -> None:
        """No renewal after this; one under way is cancelled and waited for.

        The flag as well as the cancel: a driver may swallow a cancellation that lands while it
        waits for a pooled connection (``asyncio.wait_for`` before Python 3.12), and the renewal
        must still end rather than keep the lease, and the block, forever.
        """
        self._stopped = True
        self._timer.cancel()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
