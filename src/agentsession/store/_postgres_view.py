"""The PostgreSQL store's ``read_view`` and ``count_held``: nothing here needs the driver.

A session's writer reads its epoch view (the newest epoch, the window's rows from where its view
starts, the newest dispatch) in one call when the store declares ``read_view``. On PostgreSQL
those are the blocking connection's reads (``_postgres_now``); at a reopen they are answered
from its snapshot (``_postgres_snapshot``) on the caller's thread, with no hop to a worker
thread at all; so is the user-turn count a reopen asks for (``count_held``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

from ..errors import SessionNotFoundError
from ..log import Record
from .base import ViewRows, storable

__all__ = ["ViewRead"]


class _Viewer(Protocol):
    def view(
        self,
        session_id: str,
        end: int,
        kinds: Sequence[str],
        start_of: Callable[[Record], int],
        dispatch: bool,
    ) -> ViewRows: ...

    def held(self, session_id: str, kinds: Sequence[str], end: int) -> int | None: ...


class _Store(Protocol):
    @property
    def _now(self) -> _Viewer: ...

    async def _cold(self, reopening: str | None = None) -> bool: ...


class ViewRead:
    """``read_view`` and ``count_held`` for ``PostgresStore`` (a mixin over its blocking reads)."""

    def _count_held(self: _Store, session_id: str, kinds: Sequence[str], end: int) -> int | None:
        """``count_now`` from a reopen's snapshot, on the caller's thread; ``None`` without one."""
        return self._now.held(session_id, kinds, end)

    async def _read_view(
        self: _Store,
        session_id: str,
        end: int,
        kinds: Sequence[str],
        start_of: Callable[[Record], int],
        dispatch: bool,
    ) -> ViewRows:
        """The newest epoch, the ``kinds`` records from ``start_of(epoch)`` up to ``end``.

        With ``dispatch``, also the newest dispatch (when there is an epoch). A reopen's is
        answered from its snapshot on the caller's thread (no hop to a worker thread); later
        ones, rare (a new epoch whose view reaches further back), wait on a thread.
        ``SessionNotFoundError`` for an unknown session.
        """
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        reader = self._now
        if await self._cold():
            return reader.view(session_id, end, kinds, start_of, dispatch)
        return await asyncio.to_thread(reader.view, session_id, end, kinds, start_of, dispatch)
