"""An in-memory store with the same semantics as the database stores, for tests and throwaways.

It keeps each entry in its stored form (kind, version, JSON text from ``dump_row``, and the
baseline texts its epochs refer to, once per session) and decodes on every read, exactly like a
database store, so an entry that does not survive the round trip fails here too instead of only
in production. A per-kind list of seqs makes ``last()`` independent of the history length, like
the database kind index. Leases are judged by this process's clock. Nothing survives the
process.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType

from ..errors import SessionNotFoundError, StoreError
from ..log import LogEntry, Record, now
from .base import (
    DEFAULT_LEASE_TTL,
    Batch,
    Lease,
    SessionInfo,
    check_fork,
    check_info,
    check_lease,
    conflict,
    decode_row,
    encode_batch,
    exists,
    kinds_list,
)
from .fast import FastPaths

__all__ = ["MemoryStore"]


@dataclass
class _Session:
    info: SessionInfo
    rows: list[tuple[str, int, str]] = field(default_factory=list)
    by_kind: dict[str, list[int]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    lease: Lease | None = None

    def add(self, batch: Batch) -> None:
        for row in batch.rows:
            self.by_kind.setdefault(row[0], []).append(len(self.rows))
            self.rows.append(row)
        for ref, text in batch.texts.items():
            self.texts.setdefault(ref, text)
        self.info = replace(
            self.info,
            message_count=self.info.message_count + batch.messages,
            last_model=batch.last_model or self.info.last_model,
        )


class MemoryStore:
    """Sessions in a dict; each store object is its own separate database.

    Its methods are those of the ``Store`` protocol, documented there.
    """

    def __init__(self) -> None:
        """An empty store."""
        # Methods never await while holding state, but a lock keeps the store safe to share
        # with threads as the protocol promises.
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] | None = {}
        #: Synchronous reads: the data is in memory (see ``store.fast``).
        self.fast_paths = FastPaths(
            read_now=self._read_now, count_now=self._count_now, last_now=self._last_now
        )

    def __repr__(self) -> str:
        return "MemoryStore()"

    def _all(self) -> dict[str, _Session]:
        if self._sessions is None:
            raise StoreError("memory session store is closed")
        return self._sessions

    def _get(self, session_id: str) -> _Session:
        found = self._all().get(session_id)
        if found is None:
            raise SessionNotFoundError(session_id)
        return found

    def _info(self, session: _Session) -> SessionInfo:
        return replace(session.info, next_seq=len(session.rows))

    def _load(self, session_id: str, session: _Session, seqs: list[int]) -> list[Record]:
        texts = session.texts
        return [decode_row(session_id, seq, *session.rows[seq], texts) for seq in seqs]

    # -- sessions --------------------------------------------------------------------------

    async def create_session(self, info: SessionInfo, entries: Sequence[LogEntry] = ()) -> None:
        """Create a session holding ``entries`` (see ``Store``); its counters are derived."""
        check_info(info)
        batch = encode_batch(entries)
        with self._lock:
            sessions = self._all()
            if info.id in sessions:
                raise exists(info.id)
            session = _Session(replace(info, next_seq=0, message_count=0, last_model=None))
            session.add(batch)
            sessions[info.id] = session

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's row with its current ``next_seq``; ``SessionNotFoundError`` if none."""
        with self._lock:
            return self._info(self._get(session_id))

    async def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently updated first (ties: newest created, then by id)."""
        with self._lock:
            infos = [self._info(s) for s in self._all().values()]
        infos.sort(key=lambda i: i.id)
        infos.sort(key=lambda i: (i.updated_at, i.created_at), reverse=True)
        return infos

    async def set_title(self, session_id: str, title: str) -> None:
        """Store the session's title (``updated_at`` is left alone: it tracks the log)."""
        check_info(SessionInfo(session_id, "", "", title=title))
        with self._lock:
            session = self._get(session_id)
            session.info = replace(session.info, title=title)

    async def delete_session(self, session_id: str) -> None:
        """Delete the session, its log and its lease."""
        with self._lock:
            self._get(session_id)
            del self._all()[session_id]

    async def fork_session(self, source_id: str, info: SessionInfo, upto_seq: int) -> SessionInfo:
        """A copy of the source's log up to ``upto_seq`` as session ``info.id`` (see ``Store``)."""
        check_info(info)
        with self._lock:
            source = self._get(source_id)
            check_fork(source_id, len(source.rows), upto_seq)
            sessions = self._all()
            if info.id in sessions:
                raise exists(info.id)
            # Counted from the copied entries, decoded like any read, as a database store does.
            records = self._load(source_id, source, list(range(upto_seq + 1)))
            counted = encode_batch([r.entry for r in records])
            forked = _Session(
                replace(
                    info,
                    next_seq=0,
                    message_count=0,
                    last_model=None,
                    file_version=source.info.file_version,
                )
            )
            rows = source.rows[: upto_seq + 1]
            forked.add(Batch(rows, counted.messages, counted.last_model, dict(source.texts)))
            sessions[info.id] = forked
            return self._info(forked)

    # -- the log ---------------------------------------------------------------------------

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        """Append ``entries`` at ``expected_seq``, … all or nothing (see ``Store.append``)."""
        entries = list(entries)
        batch = encode_batch(entries)
        with self._lock:
            session = self._get(session_id)
            next_seq = len(session.rows)
            if next_seq != expected_seq:
                raise conflict(session_id, next_seq, expected_seq)
            if not batch.rows:
                return []
            session.add(batch)
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
        return self._read_now(session_id, start, end, kinds)

    def _read_now(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        """``read``, synchronously (see ``ReadsNow``)."""
        wanted = kinds_list(kinds)
        with self._lock:
            session = self._get(session_id)
            lo = max(start, 0)
            hi = len(session.rows) if end is None else max(min(end, len(session.rows)), 0)
            if wanted is None:
                seqs: list[int] = list(range(lo, hi))
            else:
                seqs = self._positions(session, wanted, lo, hi)
            return self._load(session_id, session, seqs)

    def _count_now(self, session_id: str, kinds: Sequence[str], end: int) -> int:
        """How many entries of ``kinds`` lie before ``end`` (see ``ReadsNow``)."""
        with self._lock:
            session = self._get(session_id)
            return len(self._positions(session, kinds_list(kinds) or [], 0, max(end, 0)))

    @staticmethod
    def _positions(session: _Session, wanted: list[str], lo: int, hi: int) -> list[int]:
        # Walk only the wanted kinds' seq lists, as the kind index does.
        seqs: list[int] = []
        for kind in wanted:
            positions = session.by_kind.get(kind, [])
            first = bisect.bisect_left(positions, lo)
            last = bisect.bisect_left(positions, hi)
            seqs.extend(positions[first:last])
        seqs.sort()
        return seqs

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """The newest entry of one of ``kinds``, or ``None``."""
        return self._last_now(session_id, kinds)

    def _last_now(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """``last``, synchronously (see ``FindsNow``)."""
        wanted = kinds_list(kinds) or []
        with self._lock:
            session = self._get(session_id)
            tails = [session.by_kind[k][-1] for k in wanted if k in session.by_kind]
            if not tails:
                return None
            return self._load(session_id, session, [max(tails)])[0]

    # -- leases ----------------------------------------------------------------------------

    async def acquire_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        """Take the lease when free, expired or already ``owner``'s (see ``Store``)."""
        check_lease(owner, ttl)
        with self._lock:
            session = self._get(session_id)
            moment = time.time()
            held = session.lease
            if held is not None and held.owner != owner and held.expires_at > moment:
                return False
            session.lease = Lease(session_id, owner, moment + ttl)
            return True

    async def renew_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        """Extend ``owner``'s lease; ``False`` if another owner took it or there is none."""
        check_lease(owner, ttl)
        with self._lock:
            session = self._all().get(session_id)
            if session is None or session.lease is None or session.lease.owner != owner:
                return False
            session.lease = Lease(session_id, owner, time.time() + ttl)
            return True

    async def release_lease(self, session_id: str, owner: str) -> bool:
        """Give ``owner``'s lease up; ``False`` if it was not theirs."""
        with self._lock:
            session = self._all().get(session_id)
            if session is None or session.lease is None or session.lease.owner != owner:
                return False
            session.lease = None
            return True

    async def lease_of(self, session_id: str) -> Lease | None:
        """The unexpired lease of the session, or ``None``."""
        with self._lock:
            lease = self._get(session_id).lease
            return lease if lease is not None and lease.expires_at > time.time() else None

    # -- lifetime --------------------------------------------------------------------------

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
