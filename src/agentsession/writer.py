"""The session's writer: the one place that knows what is durable, pending, and which seq is next.

Every entry of a session goes through one ``LogWriter``. ``append`` is for writes that must succeed
before anything else happens (an admission before the provider call): it raises and keeps nothing.
``commit`` is for writes after a model or tool call: if the store refuses, the entries stay
pending in memory (nothing a model or tool produced is dropped) and ``flush`` writes them later,
without calling the model or the tools again. A conflicting writer is not a refusal and raises.

The writer also keeps the derived views the session serves without reading the store: the user
transcript and the ``SystemPromptCheckpoint`` records, appended as entries become durable; and it
reads what the next request needs (``epoch_view``: the current epoch and the log from where its
model view starts) in time proportional to the window, through the store's kind index. After a
cancelled or failed write it cannot know whether the store committed, so ``resync`` reads the
log's real end and picks up whatever did commit, so the next append neither repeats nor conflicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from .errors import ConflictError, StoreError
from .log import (
    TRANSCRIPT_KINDS,
    ContextEpoch,
    Dispatch,
    LogEntry,
    Record,
    SystemPromptCheckpoint,
)
from .projection import to_message
from .request import Message
from .store.base import Store

__all__ = ["EpochView", "LogWriter"]


@dataclass(frozen=True)
class EpochView:
    """The current epoch (``None`` before the first request) and the log its model view reads.

    ``records`` run from the first seq the view needs to the end of the log; ``dispatched`` says
    whether a request of this epoch was sent already.
    """

    epoch: ContextEpoch | None
    records: list[Record]
    dispatched: bool


class LogWriter:
    """Appends one session's entries at the right seq and keeps refused ones pending."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        next_seq: int,
        transcript: list[Message],
        checkpoints: list[SystemPromptCheckpoint],
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._next_seq = next_seq
        self._transcript = transcript
        self._checkpoints = checkpoints
        self._pending: list[LogEntry] = []
        self._pending_error: StoreError | None = None

    @property
    def next_seq(self) -> int:
        """The seq the next durable entry gets (pending entries not counted)."""
        return self._next_seq

    @property
    def pending(self) -> tuple[LogEntry, ...]:
        """Entries the store refused, in order; ``flush()`` writes them."""
        return tuple(self._pending)

    @property
    def transcript(self) -> list[Message]:
        """The user transcript of everything durable (the writer's own list; copy to hand out)."""
        return self._transcript

    @property
    def checkpoints(self) -> list[SystemPromptCheckpoint]:
        """Every durable ``SystemPromptCheckpoint`` in order."""
        return self._checkpoints

    async def append(self, entries: Sequence[LogEntry]) -> list[Record]:
        """Write ``entries`` in one transaction now, or raise (keeping nothing)."""
        records: list[Record] = await self._store.append(self._session_id, self._next_seq, entries)
        self._take(records)
        return records

    async def commit(self, entries: Sequence[LogEntry]) -> list[Record] | None:
        """Write ``entries`` after a model or tool call; keep them pending if the store refuses.

        Returns the records, or ``None`` when they were kept pending (also when earlier entries
        are still pending: order is kept, so nothing overtakes them).
        """
        if not self._pending:
            try:
                return await self.append(entries)
            except ConflictError:
                raise
            except StoreError as exc:
                self._pending_error = exc
        self._pending.extend(entries)
        return None

    async def flush(self) -> int:
        """Write the pending entries in one transaction; return how many were written."""
        if not self._pending:
            return 0
        records = await self.append(self._pending)
        self._pending = []
        self._pending_error = None
        return len(records)

    def raise_pending(self) -> NoReturn:
        """Stop the turn: the store refused entries that are now kept in memory."""
        assert self._pending_error is not None
        raise StoreError(
            f"the store refused to write ({self._pending_error}); {len(self._pending)} entries"
            " are kept in memory: call session.flush() to write them (they are lost if the"
            " process ends first)"
        ) from self._pending_error

    async def resync(self) -> list[Record]:
        """Catch up with the store's end of the log; return the records picked up.

        Used after a write whose outcome is unknown (cancelled while the store committed). The
        records found become part of the derived views, exactly as if ``append`` had returned.
        """
        info = await self._store.get_session(self._session_id)
        if info.next_seq <= self._next_seq:
            return []
        records: list[Record] = await self._store.read(
            self._session_id, self._next_seq, info.next_seq
        )
        self._take(records)
        return records

    async def epoch_view(self) -> EpochView:
        """Read the current epoch and its log, O(window): the epoch is found by its kind index."""
        found = await self._store.last(self._session_id, ["epoch"])
        if found is None:
            return EpochView(None, await self._store.read(self._session_id, 0), False)
        epoch = found.entry
        assert isinstance(epoch, ContextEpoch)
        start = min(epoch.history_start, found.seq)
        if epoch.summary_seq is not None:
            start = min(start, epoch.summary_seq)
        records = await self._store.read(self._session_id, start)
        dispatched = any(isinstance(r.entry, Dispatch) and r.seq > found.seq for r in records)
        return EpochView(epoch, records, dispatched)

    async def tail_since_dispatch(self) -> list[Record] | None:
        """The records from the last ``dispatch`` on, or ``None`` when nothing was dispatched."""
        last = await self._store.last(self._session_id, ["dispatch"])
        if last is None:
            return None
        records: list[Record] = await self._store.read(self._session_id, last.seq)
        return records

    def _take(self, records: Sequence[Record]) -> None:
        if records:
            self._next_seq = records[-1].seq + 1
        for record in records:
            if record.entry.kind in TRANSCRIPT_KINDS:
                message = to_message(record)
                assert message is not None
                self._transcript.append(message)
            elif isinstance(record.entry, SystemPromptCheckpoint):
                self._checkpoints.append(record.entry)
