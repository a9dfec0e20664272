"""Cancel requests between server processes, kept in the store's database.

A process asked to cancel a turn another process runs records the request in a small table of
the server's own (``agentsession_cancels``, beside the sessions: the same SQLite file or
PostgreSQL database) with the log's next seq at that moment, and on PostgreSQL also sends a
``NOTIFY`` so the holder hears it at once. The process running turns looks for requests
addressed to them — woken by the notification, and every ``POLL`` seconds anyway (the only way
on SQLite, and a safety net on PostgreSQL) — and cancels the turn when the request is not older
than the turn (its seq at least the turn's first seq). A request is deleted once honoured, and
requests older than a turn are dropped when that turn starts.
"""

from __future__ import annotations

from ..store.base import Store
from .notify import CANCEL_CHANNEL
from .side_table import SideTable

__all__ = ["POLL", "Cancels"]

#: Seconds between looks for requests while this process runs turns.
POLL = 0.3

_CREATE = (
    "CREATE TABLE IF NOT EXISTS agentsession_cancels"
    " (session_id TEXT PRIMARY KEY, seq BIGINT NOT NULL)"
)
_REQUEST = (
    "INSERT INTO agentsession_cancels (session_id, seq) VALUES (?, ?)"
    " ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq"
)


class Cancels:
    """The cancel requests of one database (in memory for a store of neither kind)."""

    def __init__(self, store: Store) -> None:
        table = SideTable(store, _CREATE)
        self._sql, self._dsn = table.sql, table.dsn
        self._memory: dict[str, int] = {}
        #: Seconds between looks; PostgreSQL's notifications make its looks a safety net only.
        self.poll = 1.0 if self._dsn else POLL

    async def request(self, session_id: str, seq: int) -> None:
        """Ask whoever runs ``session_id``'s turn (started at or before ``seq``) to cancel it."""
        if await self._sql(_REQUEST, (session_id, seq)) is None:
            self._memory[session_id] = seq
        if self._dsn:
            await self._sql("SELECT pg_notify(?, ?)", (CANCEL_CHANNEL, session_id))

    async def due(self, running: dict[str, int]) -> list[str]:
        """Which of the ``running`` turns (session → first seq) were asked to cancel."""
        if not running:
            return []
        ids = sorted(running)
        marks = ", ".join("?" for _ in ids)
        rows = await self._sql(
            f"SELECT session_id, seq FROM agentsession_cancels WHERE session_id IN ({marks})",
            tuple(ids),
        )
        found = rows if rows is not None else [(s, q) for s, q in self._memory.items()]
        return [str(s) for s, q in found if s in running and int(q) >= running[s]]

    async def clear(self, session_id: str, before: int | None = None) -> None:
        """Drop the session's request (only one older than seq ``before``, when given)."""
        if before is None:
            done = await self._sql(
                "DELETE FROM agentsession_cancels WHERE session_id = ?", (session_id,)
            )
        else:
            done = await self._sql(
                "DELETE FROM agentsession_cancels WHERE session_id = ? AND seq < ?",
                (session_id, before),
            )
        if done is None and (before is None or self._memory.get(session_id, before) < before):
            self._memory.pop(session_id, None)
