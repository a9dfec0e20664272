"""The ``Store`` protocol: durable, append-only session logs, and what every store shares.

Every table is keyed by ``session_id`` first. ``append`` writes a batch of entries in **one
transaction** and carries the ``seq`` the caller expects the first entry to get; when another
writer got there first the store raises ``ConflictError`` and writes nothing, so a log is never
interleaved. Reads are range queries on ``(session_id, seq)`` or ``(session_id, kind, seq)``, so
what the next request needs is read in time proportional to the window, not the history.

A session row also carries what a listing shows without reading the log: the number of
user-transcript messages and the last model that answered, both maintained by ``append``.

A **lease** marks the process driving a session: ``acquire_lease`` succeeds when nobody holds
it or the holder let it expire; the holder renews it while a turn runs. Expiry is judged by the
database's clock, so workers on several machines agree.

The helpers below are the one place that turns entries into rows and rows back into values, so
all stores encode, count, refuse and report alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import ConflictError, CorruptEntryError, StoreError, UsageError
from ..log import (
    TRANSCRIPT_KINDS,
    AssistantEntry,
    LogEntry,
    Record,
    dump_row,
    load_entry,
    text_refs,
)
from ..log.stored import new_record, quick_entry

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Lease",
    "SessionInfo",
    "Store",
    "ViewRows",
]

#: Seconds a lease lasts after it was taken or last renewed, unless the caller says otherwise.
DEFAULT_LEASE_TTL: float = 30.0

#: What ``read_view`` answers: the newest epoch, its view's records up to the end, the newest
#: dispatch (each store's ``read_view`` and the writer that asks for it share this shape).
ViewRows = tuple[Record | None, list[Record], Record | None]


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


# -- shared by every store -----------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """A batch of entries in stored form, with what it adds to the session row's counters.

    ``texts`` are the baseline texts its epochs refer to, by reference: kept once per session
    beside the log (a store writes each one it does not hold yet).
    """

    rows: list[tuple[str, int, str]]
    messages: int
    last_model: str | None
    texts: dict[str, str] = field(default_factory=dict)


def encode_batch(entries: Sequence[LogEntry]) -> Batch:
    """The stored rows of ``entries``; ``StoreError`` naming the first one that is not JSON."""
    rows: list[tuple[str, int, str]] = []
    texts: dict[str, str] = {}
    messages = 0
    model = ""
    for index, entry in enumerate(entries):
        try:
            kind, version, data, kept = dump_row(entry)
        except (TypeError, ValueError) as exc:
            raise StoreError(
                f"entry {index} of the batch ({getattr(entry, 'kind', '?')}) cannot be"
                f" stored as JSON: {exc}"
            ) from exc
        rows.append((kind, version, data))
        if kept:
            texts.update(kept)
        messages += kind in _MESSAGE_KINDS  # one pass (five batches a turn): counted, model noted
        if isinstance(entry, AssistantEntry) and entry.model:
            model = entry.model
    return Batch(rows, messages, _shown(model) if model else None, texts)


_MESSAGE_KINDS = frozenset(TRANSCRIPT_KINDS)


def refs_of(rows: Iterable[Sequence[Any]]) -> list[str]:
    """The kept texts stored ``(seq, kind, version, data)`` rows refer to, each once."""
    refs: dict[str, None] = {}
    for _, kind, version, data in rows:
        if kind == "epoch" and isinstance(version, int) and isinstance(data, str):
            refs.update(dict.fromkeys(text_refs(kind, version, data)))
    return list(refs)


def _shown(text: str) -> str:
    """``text`` as a plain column can hold it everywhere: NUL and lone surrogates replaced.

    Only for what a listing shows (the last model); the log itself keeps every character.
    """
    if text.isascii() and "\x00" not in text:  # no surrogate is ASCII: nothing to replace
        return text
    return "".join("\ufffd" if c == "\x00" or "\ud800" <= c <= "\udfff" else c for c in text)


def conflict(session_id: str, next_seq: int, expected_seq: int) -> ConflictError:
    """The error of an append whose ``expected_seq`` is not the log's next seq."""
    return ConflictError(
        f"conflicting write to session {session_id!r}: its next seq is {next_seq},"
        f" this write expected {expected_seq} (another writer appended first, or the"
        " caller's view is stale); nothing of this write was stored",
        session_id=session_id,
        expected_seq=expected_seq,
        found_seq=next_seq,
    )


def exists(session_id: str) -> ConflictError:
    """The error of creating a session whose id is taken."""
    return ConflictError(f"a session with id {session_id!r} already exists", session_id=session_id)


def decode_row(
    session_id: str,
    seq: Any,
    kind: Any,
    version: Any,
    data: Any,
    texts: Mapping[str, str] | None = None,
) -> Record:
    """One stored row as a ``Record``; ``CorruptEntryError`` naming the seq when it is damaged.

    ``texts`` holds the kept texts the row refers to (see ``refs_of``).
    """
    entry = quick_entry(kind, version, data) if type(seq) is int and type(kind) is str else None
    if entry is not None:  # the row as this package writes it today: no checks beyond these
        return new_record(seq, entry)
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise CorruptEntryError(f"entry position {seq!r} is not a number", session_id=session_id)
    if not isinstance(kind, str) or not isinstance(data, str):
        raise CorruptEntryError("entry kind or data is not text", session_id=session_id, seq=seq)
    if not isinstance(version, int) or isinstance(version, bool):
        raise CorruptEntryError(
            f"entry version {version!r} is not a number", session_id=session_id, seq=seq
        )
    entry = load_entry(kind, version, data, session_id=session_id, seq=seq, texts=texts)
    return new_record(seq, entry)


def info_from_row(row: Sequence[Any]) -> SessionInfo:
    """A session row as ``SessionInfo`` (columns in ``SESSION_COLUMNS`` order).

    A damaged row (a value of the wrong type) is a ``StoreError`` naming the session.
    """
    session_id, created, updated, title, project_dir, next_seq, messages, model, version = row
    texts = (session_id, created, updated)
    optional = (title, project_dir, model)
    numbers = (next_seq, messages) + (() if version is None else (version,))
    if (
        not all(isinstance(t, str) for t in texts)
        or not all(t is None or isinstance(t, str) for t in optional)
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers)
    ):
        raise StoreError(f"the stored row of session {session_id!r} is damaged: {tuple(row)!r}")
    return SessionInfo(
        id=session_id,
        created_at=created,
        updated_at=updated,
        title=title,
        project_dir=project_dir,
        next_seq=next_seq,
        message_count=messages,
        last_model=model,
        file_version=version,
    )


#: The session columns ``info_from_row`` expects, in its order.
SESSION_COLUMNS = (
    "session_id, created_at, updated_at, title, project_dir, next_seq, message_count,"
    " last_model, file_version"
)


def check_text(what: str, value: str | None) -> None:
    """Refuse text no store can keep alike: NUL characters and lone surrogates."""
    if value is None:
        return
    if "\x00" in value:
        raise UsageError(f"{what} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"{what} is not valid Unicode: {exc}") from exc


def storable(key: str) -> bool:
    """Whether ``key`` could name a stored row; no store keeps a key ``check_text`` refuses."""
    try:
        check_text("a key", key)
    except UsageError:
        return False
    return True


def check_info(info: SessionInfo) -> None:
    """Refuse a session row no store can keep alike (see ``check_text``)."""
    for what, value in (
        ("a session id", info.id),
        ("a session title", info.title),
        ("a project directory", info.project_dir),
        ("a creation time", info.created_at),
        ("an update time", info.updated_at),
    ):
        check_text(what, value)
    if not info.id:
        raise UsageError("a session id must not be empty")


def check_lease(owner: str, ttl: float) -> None:
    """Refuse a lease with no owner or a duration that is not a positive number of seconds."""
    check_text("a lease owner", owner)
    if not owner:
        raise UsageError("a lease owner must not be empty")
    if not (isinstance(ttl, int | float) and math.isfinite(ttl) and ttl > 0):
        raise UsageError(f"a lease lasts a positive number of seconds, not {ttl!r}")


def kinds_list(kinds: Sequence[str] | str | None) -> list[str] | None:
    """Kinds as a list without repeats; one kind given bare means that kind, not its letters."""
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    # A kind no store can hold matches nothing (and never reaches a driver that chokes on it).
    return [k for k in dict.fromkeys(kinds) if storable(k)]


def check_fork(source_id: str, next_seq: int, upto_seq: int) -> None:
    """Refuse a fork point that is not an entry of the source log."""
    if not 0 <= upto_seq < next_seq:
        raise UsageError(
            f"cannot fork session {source_id!r} at seq {upto_seq}: its log holds seq 0"
            f" to {next_seq - 1}"
            if next_seq
            else f"cannot fork session {source_id!r}: its log is empty"
        )


def newest_model(session_id: str, rows: Iterable[Sequence[Any]]) -> str | None:
    """The model of the first assistant row (newest first) that names one, decoded strictly."""
    for seq, kind, version, data in rows:
        entry = decode_row(session_id, seq, kind, version, data).entry
        if isinstance(entry, AssistantEntry) and entry.model:
            return _shown(entry.model)
    return None
