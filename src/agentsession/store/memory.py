"""An in-memory store with the same semantics as the SQLite one, for tests and throwaway sessions.

It keeps each entry in its stored form (kind, version, JSON text from ``dump_entry``) and decodes
on every read, exactly like a database store, so an entry that does not survive the round trip
fails here too instead of only in production. ``rows_read`` counts decoded rows the same way.
A per-kind list of seqs makes ``last()`` independent of the history length, like the SQLite
kind index. Nothing survives the process.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType

from ..errors import ConflictError, SessionNotFoundError, StoreError
from ..log import LogEntry, Record, dump_entry, load_entry, now
from .base import SessionInfo

__all__ = ["MemoryStore"]


@dataclass
class _Session:
    info: SessionInfo
    rows: list[tuple[str, int, str]] = field(default_factory=list)
    by_kind: dict[str, list[int]] = field(default_factory=dict)


class MemoryStore:
    """Sessions in a dict; each store object is its own separate database."""

    rows_read: int

    def __init__(self) -> None:
        """An empty store."""
        self.rows_read = 0
        # Methods never await while holding state, but a lock keeps the store safe to share
        # with threads as the protocol promises.
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] | None = {}

    def __repr__(self) -> str:
        return "MemoryStore()"

    def _get(self, session_id: str) -> _Session:
        if self._sessions is None:
            raise StoreError("memory session store is closed")
        found = self._sessions.get(session_id)
        if found is None:
            raise SessionNotFoundError(session_id)
        return found

    def _info(self, session: _Session) -> SessionInfo:
        return replace(session.info, next_seq=len(session.rows))

    def _load(self, session_id: str, session: _Session, seqs: list[int]) -> list[Record]:
        # Counted before decoding, like the SQLite store counts the rows it fetched.
        self.rows_read += len(seqs)
        records = []
        for seq in seqs:
            kind, version, data = session.rows[seq]
            entry = load_entry(kind, version, data, session_id=session_id, seq=seq)
            records.append(Record(seq, entry))
        return records

    async def create_session(self, info: SessionInfo) -> None:
        """Create an empty session; ``ConflictError`` if the id exists (``next_seq`` is ignored)."""
        with self._lock:
            if self._sessions is None:
                raise StoreError("memory session store is closed")
            if info.id in self._sessions:
                raise ConflictError(f"a session with id {info.id!r} already exists")
            self._sessions[info.id] = _Session(replace(info, next_seq=0))

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's row with its current ``next_seq``; ``SessionNotFoundError`` if none."""
        with self._lock:
            return self._info(self._get(session_id))

    async def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently updated first (ties: newest created, then by id)."""
        with self._lock:
            if self._sessions is None:
                raise StoreError("memory session store is closed")
            infos = [self._info(s) for s in self._sessions.values()]
        infos.sort(key=lambda i: i.id)
        infos.sort(key=lambda i: (i.updated_at, i.created_at), reverse=True)
        return infos

    async def set_title(self, session_id: str, title: str) -> None:
        """Store the session's title (``updated_at`` is left alone: it tracks the log)."""
        with self._lock:
            session = self._get(session_id)
            session.info = replace(session.info, title=title)

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        """Append ``entries`` at ``expected_seq``, … all or nothing (see ``Store.append``)."""
        entries = list(entries)
        rows: list[tuple[str, int, str]] = []
        for index, entry in enumerate(entries):
            try:
                rows.append(dump_entry(entry))
            except (TypeError, ValueError) as exc:
                raise StoreError(
                    f"entry {index} of the batch ({getattr(entry, 'kind', '?')}) cannot be"
                    f" stored as JSON: {exc}"
                ) from exc
        with self._lock:
            session = self._get(session_id)
            next_seq = len(session.rows)
            if next_seq != expected_seq:
                raise ConflictError(
                    f"conflicting write to session {session_id!r}: its next seq is {next_seq},"
                    f" this write expected {expected_seq} (another writer appended first, or the"
                    " caller's view is stale); nothing of this write was stored"
                )
            if not rows:
                return []
            for seq, row in enumerate(rows, start=expected_seq):
                session.rows.append(row)
                session.by_kind.setdefault(row[0], []).append(seq)
            session.info = replace(session.info, updated_at=now())
        return [Record(expected_seq + i, entry) for i, entry in enumerate(entries)]

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        """Entries with ``start <= seq < end`` (optionally only of ``kinds``), in seq order."""
        if isinstance(kinds, str):  # one kind given bare means that kind, not its letters
            kinds = [kinds]
        with self._lock:
            session = self._get(session_id)
            lo = max(start, 0)
            hi = len(session.rows) if end is None else max(min(end, len(session.rows)), 0)
            if kinds is None:
                seqs: list[int] = list(range(lo, hi))
            else:
                # Walk only the wanted kinds' seq lists, as the kind index does.
                seqs = []
                for kind in dict.fromkeys(kinds):
                    positions = session.by_kind.get(kind, [])
                    first = bisect.bisect_left(positions, lo)
                    last = bisect.bisect_left(positions, hi)
                    seqs.extend(positions[first:last])
                seqs.sort()
            return self._load(session_id, session, seqs)

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """The newest entry of one of ``kinds``, or ``None``."""
        if isinstance(kinds, str):
            kinds = [kinds]
        with self._lock:
            session = self._get(session_id)
            tails = [session.by_kind[k][-1] for k in dict.fromkeys(kinds) if k in session.by_kind]
            if not tails:
                return None
            return self._load(session_id, session, [max(tails)])[0]

    async def close(self) -> None:
        """Drop every session (idempotent); later calls raise ``StoreError``."""
        with self._lock:
            self._sessions = None

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
