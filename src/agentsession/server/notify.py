"""News of new log entries: within this process, and between processes.

A process that commits entries says so (``published``); a reader following a session's log
waits for news or a polling interval, whichever comes first, and then reads the log itself —
the log is the truth, news only wakes readers early. Between processes PostgreSQL carries the
news (``LISTEN``/``NOTIFY`` on one channel, the session id as payload); on SQLite readers poll
the file, which is local and cheap to ask.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from ..store.base import Store

__all__ = ["CHANNEL", "Notifier"]

_log = logging.getLogger(__name__)

#: The PostgreSQL channel that carries "session X has new entries" between processes.
CHANNEL = "agentsession_log"


class Notifier:
    """Wakes readers of a session's log when entries may have been appended."""

    def __init__(self, store: Store) -> None:
        self._dsn: str | None = getattr(store, "dsn", None)
        self._generation: dict[str, int] = {}
        self._changed = asyncio.Condition()
        self._listener: asyncio.Task[None] | None = None
        self._sender: Any = None
        self._sending = asyncio.Lock()
        #: Seconds between reads of the log when no news comes (news may come from elsewhere).
        self.poll_interval = 1.0 if self._dsn else 0.25
        #: Set when the server stops: followers end their streams (clients resume elsewhere).
        #: A plain flag, so a signal handler may set it; followers see it within one interval.
        self.stopping = False
        #: Set once this process listens to the others (PostgreSQL).
        self.listening = asyncio.Event()

    async def start(self) -> None:
        """Begin listening to other processes (PostgreSQL only)."""
        if self._dsn and self._listener is None:
            self._listener = asyncio.create_task(self._listen(self._dsn))

    async def close(self) -> None:
        """Stop listening; readers fall back to polling."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        if self._sender is not None:
            with contextlib.suppress(Exception):
                await self._sender.close()
            self._sender = None

    async def published(self, session_id: str) -> None:
        """Entries of ``session_id`` were committed here: wake readers here and elsewhere."""
        await self._wake(session_id)
        if self._dsn:
            try:
                await self._notify(self._dsn, session_id)
            except Exception as exc:  # news is a hint: readers still poll the log
                _log.debug("NOTIFY failed: %s", exc)

    def generation(self, session_id: str) -> int:
        """A number that grows each time news about ``session_id`` arrives."""
        return self._generation.get(session_id, 0)

    async def wait(self, session_id: str, seen: int) -> None:
        """Return when news newer than ``seen`` arrived or the polling interval passed."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self.generation(session_id) != seen),
                    self.poll_interval,
                )

    async def _wake(self, session_id: str) -> None:
        async with self._changed:
            self._generation[session_id] = self.generation(session_id) + 1
            self._changed.notify_all()

    async def _notify(self, dsn: str, session_id: str) -> None:
        import psycopg

        async with self._sending:
            if self._sender is None or self._sender.closed:
                self._sender = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
            await self._sender.execute("SELECT pg_notify(%s, %s)", (CHANNEL, session_id))

    async def _listen(self, dsn: str) -> None:
        """Forward PostgreSQL notifications to local readers; reconnect when the link drops."""
        while True:
            try:
                async for session_id in _notifications(dsn, self.listening):
                    await self._wake(session_id)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.debug("LISTEN connection lost, reconnecting: %s", exc)
            await asyncio.sleep(self.poll_interval)


async def _notifications(dsn: str, listening: asyncio.Event) -> AsyncIterator[str]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(f"LISTEN {CHANNEL}")
        listening.set()
        async for note in conn.notifies():
            yield note.payload
