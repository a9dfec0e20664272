"""A lease holder's presence on PostgreSQL: a session-level advisory lock on its own connection.

A lease row alone says "owner X, until T"; when X's process dies, the row stays until T (the
lease TTL). So every owner that takes a lease through a store also holds an advisory lock keyed
by its name on one dedicated connection. PostgreSQL drops the lock the moment that connection
ends — at once when the process dies (its kernel closes the socket), within ``VANISHED_BOUND``
seconds when its machine or the network goes away (the server's TCP keepalive and user timeout
on that connection; the owner's kernel, not its busy process, answers the probes, so a loaded
holder is not taken for dead). A lease whose owner holds no such lock is void: taking it
and reading it ask ``pg_try_advisory_xact_lock`` on the owner's key, which succeeds only when
nobody holds it (and is released when that statement's transaction ends). The TTL still bounds
a holder that is alive but stuck.

A hash collision between two live owners makes each look alive to the other's probe, which
errs on the safe side (the TTL then decides). After the server restarts, each owner takes its
lock again within ``CHECK_EVERY`` seconds; until then another process may take its leases, and
the log's expected-seq check keeps the log whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import psycopg

from .base import storable

__all__ = ["ALIVE", "CHECK_EVERY", "VANISHED_BOUND", "Presence", "presence_void"]

_log = logging.getLogger(__name__)

#: The first key of every presence lock (two-key advisory locks live apart from one-key ones).
NAMESPACE = 0x61677373
#: Seconds between checks that the presence connection still stands.
CHECK_EVERY = 2.0
#: The server drops a vanished client's connection after about idle + interval × count seconds
#: of silence (the keeper's ``SELECT 1`` every ``CHECK_EVERY`` seconds is traffic too), and
#: ``tcp_user_timeout`` when its own bytes go unacknowledged: ``VANISHED_BOUND`` either way.
_KEEPALIVE = {
    "tcp_keepalives_idle": 2,
    "tcp_keepalives_interval": 1,
    "tcp_keepalives_count": 2,
}
#: Milliseconds the server waits for its sent bytes to be acknowledged (PostgreSQL 12 and later).
_USER_TIMEOUT_MS = 4000
#: Seconds after a holder's machine vanished by which the server has dropped its presence.
VANISHED_BOUND = 4.0


def presence_void(owner_sql: str) -> str:
    """SQL that is true when the owner named by ``owner_sql`` holds no presence lock."""
    return f"pg_try_advisory_xact_lock({NAMESPACE}, hashtext({owner_sql}))"


#: SQL: true while the lease row's owner (``l.owner``) is present.
ALIVE = f"NOT {presence_void('l.owner')}"


class Presence:
    """The presence locks of the owners that took leases through one store."""

    def __init__(self, dsn: str, read_only: bool = False) -> None:
        self._dsn = dsn
        self._off = read_only  # a read-only store takes no leases
        self._held: dict[str, psycopg.AsyncConnection[Any]] = {}
        self._wanted: set[str] = set()
        self._keeper: asyncio.Task[None] | None = None
        self._taking = asyncio.Lock()

    async def ensure(self, owner: str) -> None:
        """Hold ``owner``'s presence lock (a failure only leaves the TTL to decide)."""
        if self._off or owner in self._held or not storable(owner):
            return
        self._wanted.add(owner)
        if self._keeper is None or self._keeper.done():
            self._keeper = asyncio.create_task(self._keep())
        await self._take(owner)

    async def _take(self, owner: str) -> None:
        async with self._taking:
            if owner in self._held:
                return
            try:
                self._held[owner] = await self._lock(owner)
            except (psycopg.Error, OSError) as exc:
                _log.debug("no presence lock for a lease owner: %s", type(exc).__name__)

    async def _lock(self, owner: str) -> psycopg.AsyncConnection[Any]:
        conn = await psycopg.AsyncConnection.connect(
            self._dsn,
            autocommit=True,
            connect_timeout=10,  # an address that never answers must not hold a lease up
            keepalives=1,
            keepalives_idle=2,
            keepalives_interval=1,
            keepalives_count=2,
        )
        try:
            for name, value in _KEEPALIVE.items():
                await conn.execute(f"SET {name} = {int(value)}")
            with contextlib.suppress(psycopg.errors.UndefinedObject):  # before PostgreSQL 12
                await conn.execute(f"SET tcp_user_timeout = {_USER_TIMEOUT_MS}")
            # A probe holds the key for one statement at most; wait for it, not for a collision.
            await conn.execute("SET lock_timeout = '5s'")
            await conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (NAMESPACE, owner))
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _keep(self) -> None:
        """Take the locks again on fresh connections when the server dropped them."""
        while True:
            await asyncio.sleep(CHECK_EVERY)
            for owner in list(self._wanted):
                conn = self._held.get(owner)
                if conn is not None:
                    try:
                        await conn.execute("SELECT 1")
                        continue
                    except (psycopg.Error, OSError):
                        self._held.pop(owner, None)
                        with contextlib.suppress(Exception):
                            await conn.close()
                await self._take(owner)

    async def close(self) -> None:
        """Drop every presence lock: this store's owners no longer hold anything."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await keeper
        held, self._held = self._held, {}
        self._wanted.clear()
        for conn in held.values():
            with contextlib.suppress(Exception):
                # Before the close returns, not when the server notices the socket closed.
                await conn.execute("SELECT pg_advisory_unlock_all()")
            with contextlib.suppress(Exception):
                await conn.close()
