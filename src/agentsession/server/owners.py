"""Which owner each session belongs to, kept beside the sessions in the same database.

The server's own small table (``agentsession_owners``), apart from the store's schema: the store
knows nothing of HTTP owners, and a database used without the server never gets the table. On
SQLite it lives in the same file, on PostgreSQL in the same database, so every server process
agrees; a store of neither kind keeps owners in memory.
"""

from __future__ import annotations

from ..store.base import Store
from .side_table import SideTable

__all__ = ["Owners"]

_CREATE = (
    "CREATE TABLE IF NOT EXISTS agentsession_owners"
    " (session_id TEXT PRIMARY KEY, owner TEXT NOT NULL)"
)


class Owners:
    """Owner per session id, in the store's database."""

    def __init__(self, store: Store) -> None:
        self._sql = SideTable(store, _CREATE).sql
        self._memory: dict[str, str] = {}

    async def get(self, session_id: str) -> str | None:
        """The session's owner, or ``None`` when it has none."""
        rows = await self._sql(
            "SELECT owner FROM agentsession_owners WHERE session_id = ?", (session_id,)
        )
        if rows is None:
            return self._memory.get(session_id)
        return str(rows[0][0]) if rows else None

    async def owned(self, owner: str) -> set[str]:
        """The ids of the sessions ``owner`` holds."""
        rows = await self._sql(
            "SELECT session_id FROM agentsession_owners WHERE owner = ?", (owner,)
        )
        if rows is None:
            return {s for s, o in self._memory.items() if o == owner}
        return {str(r[0]) for r in rows}

    async def set(self, session_id: str, owner: str) -> None:
        """Record ``owner`` as the session's owner."""
        done = await self._sql(
            "INSERT INTO agentsession_owners (session_id, owner) VALUES (?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner",
            (session_id, owner),
        )
        if done is None:
            self._memory[session_id] = owner

    async def forget(self, session_id: str) -> None:
        """The session is gone."""
        done = await self._sql(
            "DELETE FROM agentsession_owners WHERE session_id = ?", (session_id,)
        )
        if done is None:
            self._memory.pop(session_id, None)
