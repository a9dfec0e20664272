"""The PostgreSQL store's leases: taken, renewed, released and read by the server's clock.

A lease is a row whose expiry the server judges (``clock_timestamp()``), so workers on machines
with skewed clocks still agree; each owner first holds its advisory lock (``_postgres_presence``),
so a dead holder's lease is void at once. Before the pool's first use a lease is read on the
blocking connection (``_postgres_now``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from ..errors import SessionNotFoundError
from .base import DEFAULT_LEASE_TTL, Lease, check_lease, storable

try:
    import psycopg
    from psycopg import errors as pg_errors

    from ._postgres_now import LEASE_NOW, RENEW_LEASE, TAKE_LEASE, NowReader
    from ._postgres_presence import Presence
    from ._postgres_reopen import Reopening
except ImportError:  # pragma: no cover - the optional extra is not installed
    pass

__all__ = ["LeaseOps"]

#: The log's next seq, read right after the lease is taken (``_take_lease_seeing``).
_NEXT_SEQ = "SELECT next_seq FROM sessions WHERE session_id = %s"


class LeaseOps:
    """``acquire_lease``, ``renew_lease``, ``release_lease``, ``lease_of`` for ``PostgresStore``."""

    if TYPE_CHECKING:  # what the store gives its leases
        _now: NowReader
        _presence: Presence
        _reopen: Reopening

        def _connection(
            self, action: str, *, write: bool = False
        ) -> AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
            """A pooled connection (``PostgresStore``)."""

        async def _one(
            self, conn: psycopg.AsyncConnection[Any], query: str, params: Sequence[Any]
        ) -> tuple[Any, ...] | None:
            """One row of ``query`` (``PostgresStore``)."""

        async def _cold(self, reopening: str | None = None) -> bool:
            """Whether the pool is still unused (``PostgresStore``)."""

    async def acquire_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        """Take the lease when free, expired or already ``owner``'s (see ``Store``)."""
        taken, _ = await self._take(session_id, owner, ttl, seeing=False)
        return taken

    async def _take_lease_seeing(
        self, session_id: str, owner: str, ttl: float
    ) -> tuple[bool, int | None]:
        """``acquire_lease``, and the log's next seq read after it in the same round trip.

        The two statements go in one pipeline on one connection, each in its own transaction
        (autocommit): the seq is read after the lease is taken, so a session that was taken
        and whose log still ends where its opener read it has not been written since (the
        ``take_lease`` fast path, ``store.fast``).
        """
        return await self._take(session_id, owner, ttl, seeing=True)

    async def _take(
        self, session_id: str, owner: str, ttl: float, *, seeing: bool
    ) -> tuple[bool, int | None]:
        """The lease taken or not, and with ``seeing`` the log's next seq read after it."""
        check_lease(owner, ttl)
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        await self._presence.ensure(owner)  # its leases now die with its process
        async with self._connection(f"take the lease of session {session_id!r}") as conn:
            try:
                if not seeing:
                    cursor = await conn.execute(TAKE_LEASE, (session_id, owner, float(ttl)))
                    return cursor.rowcount == 1, None
                async with conn.pipeline():
                    taken = await conn.execute(TAKE_LEASE, (session_id, owner, float(ttl)))
                    ends = await conn.execute(_NEXT_SEQ, (session_id,))
            except pg_errors.ForeignKeyViolation as exc:
                raise SessionNotFoundError(session_id) from exc
            row = await ends.fetchone()
            return taken.rowcount == 1, None if row is None else int(row[0])

    async def renew_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        """Extend ``owner``'s lease; ``False`` if another owner took it or there is none."""
        check_lease(owner, ttl)
        if not storable(session_id):
            return False
        await self._presence.ensure(owner)  # its leases now die with its process
        async with self._connection(f"renew the lease of session {session_id!r}") as conn:
            cursor = await conn.execute(RENEW_LEASE, (float(ttl), session_id, owner))
            return cursor.rowcount == 1

    async def release_lease(self, session_id: str, owner: str) -> bool:
        """Give ``owner``'s lease up; ``False`` if it was not theirs."""
        if not storable(session_id) or not storable(owner):
            return False
        async with self._connection(f"release the lease of session {session_id!r}") as conn:
            cursor = await conn.execute(
                "DELETE FROM leases WHERE session_id = %s AND owner = %s", (session_id, owner)
            )
            return cursor.rowcount == 1

    async def lease_of(self, session_id: str) -> Lease | None:
        """The unexpired lease of the session, or ``None``."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        if await self._cold():
            return self._now.lease(session_id)
        snap = self._reopen.served(session_id)
        row = snap.lease if snap is not None else None
        if row is None:
            async with self._connection(f"read the lease of session {session_id!r}") as conn:
                row = await self._one(conn, LEASE_NOW, (session_id,))
        if row is None:
            raise SessionNotFoundError(session_id)
        return None if row[0] is None else Lease(session_id, str(row[0]), float(row[1]))
