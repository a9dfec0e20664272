"""The ``Store`` protocol: durable, append-only session logs, and the rows a store keeps.

Every table is keyed by ``session_id`` first. ``append`` writes a batch of entries in **one
transaction** and carries the ``seq`` the caller expects the first entry to get; when another
writer got there first the store raises ``ConflictError`` and writes nothing, so a log is never
interleaved. Reads are range queries on ``(session_id, seq)`` or ``(session_id, kind, seq)``, so
what the next request needs is read in time proportional to the window, not the history.

A session row (``SessionInfo``) also carries what a listing shows without reading the log: the
number of user-transcript messages and the last model that answered, both maintained by
``append``.

A **lease** (``Lease``) marks the process driving a session: ``acquire_lease`` succeeds when
nobody holds it or the holder let it expire; the holder renews it while a turn runs. Expiry is
judged by the database's clock, so workers on several machines agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .._frozen import frozen
from ..log import LogEntry, Record

__all__ = ["DEFAULT_LEASE_TTL", "Lease", "SessionInfo", "Store"]

#: Seconds a lease lasts after it was taken or last renewed, unless the caller says otherwise.
DEFAULT_LEASE_TTL: float = 30.0


@frozen
class SessionInfo:
    """A session's row: id, times, title, the directory it was created for, and its log length.

    ``message_count`` (user-transcript entries: user, assistant, tool results) and
    ``last_model`` (the model of the newest assistant entry that names one) are maintained by
    the store and ignored when a session is created. ``file_version`` is the session-file
    version the session was imported from (``None`` for sessions made here); an unchanged
    legacy import exports back in its own version.
    """

    id: str
    created_at: str
    updated_at: str
    title: str | None = None
    project_dir: str | None = None
    next_seq: int = 0
    message_count: int = 0
    last_model: str | None = None
    file_version: int | None = None

    def forked(self, new_id: str, timestamp: str) -> SessionInfo:
        """The row of a new session forked from this one (``fork_session`` fills the rest).

        Args:
            new_id: The new session's id.
            timestamp: Its creation time (ISO 8601).
        """
        title = f"{self.title} (fork)" if self.title else None
        return SessionInfo(new_id, timestamp, timestamp, title, self.project_dir)


@frozen
class Lease:
    """Who drives a session, until when (seconds since the epoch, by the database's clock)."""

    session_id: str
    owner: str
    expires_at: float


@runtime_checkable
class Store(Protocol):
    """Where sessions live. All methods are coroutines; implementations are safe to share."""

    async def create_session(self, info: SessionInfo, entries: Sequence[LogEntry] = ()) -> None:
        """Create a session holding ``entries`` (seq 0, 1, …) in one transaction.

        Nothing is written when anything fails. The times, title, project directory and
        ``file_version`` are taken from ``info`` as given.

        Args:
            info: The new session's row; its ``id`` must be new.
            entries: The log's first entries (an imported or forked session), or none.

        Raises:
            ConflictError: A session with this id exists.
            StoreError: The database refused the write.
        """
        ...

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's row.

        Args:
            session_id: The session's id.

        Raises:
            SessionNotFoundError: There is no such session.
        """
        ...

    async def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently updated first."""
        ...

    async def set_title(self, session_id: str, title: str) -> None:
        """Store the session's title.

        Args:
            session_id: The session's id.
            title: The new title.

        Raises:
            SessionNotFoundError: There is no such session.
        """
        ...

    async def delete_session(self, session_id: str) -> None:
        """Delete the session, its log and its lease in one transaction.

        Args:
            session_id: The session's id.

        Raises:
            SessionNotFoundError: There is no such session.
        """
        ...

    async def fork_session(self, source_id: str, info: SessionInfo, upto_seq: int) -> SessionInfo:
        """A new session ``info.id`` whose log is a copy of the source's up to ``upto_seq``.

        One transaction. Returns the new session's row.

        Args:
            source_id: The session to copy from.
            info: The new session's row; its ``id`` must be new.
            upto_seq: The last entry of the source to copy (inclusive).

        Raises:
            SessionNotFoundError: The source does not exist.
            UsageError: ``upto_seq`` is not an entry of the source.
            ConflictError: The new id exists.
        """
        ...

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        """Append ``entries`` at ``expected_seq``, ``expected_seq + 1``, … in one transaction.

        Args:
            session_id: The session's id.
            expected_seq: The log's next seq as the writer knows it; the guard against a
                second writer.
            entries: The entries to append, in order.

        Returns:
            The appended entries as records, with their seqs.

        Raises:
            ConflictError: The log's next seq is not ``expected_seq`` (nothing is written).
            SessionNotFoundError: There is no such session.
            StoreError: The database refused the write.
        """
        ...

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        """Entries with ``start <= seq < end`` (optionally only of ``kinds``), in seq order.

        Args:
            session_id: The session's id.
            start: The first seq to read.
            end: The seq to stop before; ``None`` reads to the end of the log.
            kinds: Only entries of these kinds; ``None`` reads every kind.

        Raises:
            SessionNotFoundError: There is no such session.
            CorruptEntryError: A stored entry does not decode.
        """
        ...

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """The newest entry of one of ``kinds`` (an indexed lookup), or ``None``.

        Args:
            session_id: The session's id.
            kinds: The entry kinds to look for.

        Raises:
            SessionNotFoundError: There is no such session.
        """
        ...

    async def acquire_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        """Take the session's lease for ``ttl`` seconds; ``False`` while another owner holds it.

        Succeeds when there is no lease, when it expired, or when ``owner`` already holds it
        (then it is extended).

        Args:
            session_id: The session's id.
            owner: Who takes it (a process's owner id).
            ttl: Seconds until the lease expires unless renewed.

        Raises:
            SessionNotFoundError: There is no such session.
        """
        ...

    async def renew_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        """Extend ``owner``'s lease to ``ttl`` seconds from now; ``False`` if it is not theirs.

        Args:
            session_id: The session's id.
            owner: Who holds the lease.
            ttl: Seconds from now until it expires.
        """
        ...

    async def release_lease(self, session_id: str, owner: str) -> bool:
        """Give the lease up; ``False`` (and nothing changed) if ``owner`` did not hold it.

        Args:
            session_id: The session's id.
            owner: Who holds the lease.
        """
        ...

    async def lease_of(self, session_id: str) -> Lease | None:
        """The session's unexpired lease, or ``None``.

        Args:
            session_id: The session's id.

        Raises:
            SessionNotFoundError: There is no such session.
        """
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...
