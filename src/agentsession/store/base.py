"""What every store shares: the one place that turns entries into rows and rows into values.

The ``Store`` protocol and its values live in ``protocol`` (named here too, where the stores and
the rest of the package have always imported them). The helpers below encode a batch, decode a
row, check what no store can keep alike and word the errors, so all stores encode, count,
refuse and report alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from typing import Any

from .._frozen import frozen
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
from .protocol import DEFAULT_LEASE_TTL, Lease, SessionInfo, Store

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Lease",
    "SessionInfo",
    "Store",
    "ViewRows",
]

#: What ``read_view`` answers: the newest epoch, its view's records up to the end, the newest
#: dispatch (each store's ``read_view`` and the writer that asks for it share this shape).
ViewRows = tuple[Record | None, list[Record], Record | None]


@frozen
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
