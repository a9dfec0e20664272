"""The ``Store`` protocol: durable, append-only session logs.

Every table is keyed by ``session_id`` first. ``append`` writes a batch of entries in **one
transaction** and carries the ``seq`` the caller expects the first entry to get; when another
writer got there first the store raises ``ConflictError`` and writes nothing, so a log is never
interleaved. Reads are range queries on ``(session_id, seq)`` or ``(session_id, kind, seq)``, so
what the next request needs is read in time proportional to the window, not the history.

Stores count the rows they decode in ``rows_read`` so tests can prove that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..log import LogEntry, Record

__all__ = ["SessionInfo", "Store"]


@dataclass(frozen=True)
class SessionInfo:
    """A session's row: id, times, title, the directory it was created for, and its log length."""

    id: str
    created_at: str
    updated_at: str
    title: str | None = None
    project_dir: str | None = None
    next_seq: int = 0


@runtime_checkable
class Store(Protocol):
    """Where sessions live. All methods are coroutines; implementations are safe to share."""

    rows_read: int

    async def create_session(self, info: SessionInfo) -> None:
        """Create an empty session; ``ConflictError`` if the id exists."""
        ...

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's row; ``SessionNotFoundError`` if there is none."""
        ...

    async def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently updated first."""
        ...

    async def set_title(self, session_id: str, title: str) -> None:
        """Store the session's title."""
        ...

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        """Append ``entries`` at ``expected_seq``, ``expected_seq + 1``, … in one transaction.

        Raises ``ConflictError`` (writing nothing) when the log's next seq is not
        ``expected_seq``, ``SessionNotFoundError`` for an unknown session and ``StoreError``
        when the database refuses the write.
        """
        ...

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        """Entries with ``start <= seq < end`` (optionally only of ``kinds``), in seq order."""
        ...

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """The newest entry of one of ``kinds`` (an indexed lookup), or ``None``."""
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...
