"""The session's writer: the one place that knows what is durable, pending, and which seq is next.

Every entry of a session goes through one ``LogWriter``. ``append`` is for writes that must succeed
before anything else happens (an admission before the provider call): it raises and keeps nothing.
``commit`` is for writes after a model or tool call: if the store refuses, the entries stay
pending in memory (nothing a model or tool produced is dropped) and ``flush`` writes them later,
without calling the model or the tools again. A conflicting writer is not a refusal and raises.

The writer also keeps the derived views the session serves without reading the store: the user
transcript and the ``SystemPromptCheckpoint`` records, appended as entries become durable; and it
reads what the next request needs (``epoch_view``: the current epoch and the entries its model
view reads, from where that view starts; the view itself lives in ``engine/epoch_view``) in time
proportional to the window, through the store's kind index — once, and on a local store in one
worker-thread call: afterwards the view is kept in memory and extended with every record this
writer commits, so a step reads nothing back and each entry is decoded once.

After a cancelled or failed write it cannot know whether the store committed (a connection lost
during ``COMMIT``): the writer marks itself unsure, and before it next writes or reads its views it
reads the log's real end and takes whatever did commit, so the next append neither repeats nor
conflicts. Pending entries found there, the same kinds and the same stored JSON at the seq they
were meant for, were committed by the attempt whose answer was lost: they are taken as written, not
written twice. Anything else there is another writer's: ``ConflictError``, unless it is inbox
input another process accepted (``log.commits.only_inputs``): that is taken, and written after.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import NoReturn

from ..errors import AgentSessionError, ConflictError, StoreError
from ..ledger import Ledger
from ..log import (
    TRANSCRIPT_KINDS,
    Dispatch,
    LogEntry,
    Record,
    SystemPromptCheckpoint,
)
from ..log.commits import common_prefix, only_inputs, read_commit_end
from ..projection import VIEW_KINDS, to_message
from ..request import Message
from ..store.base import Store
from ..store.fast import fast_paths
from ..transcript import Transcript
from .epoch_view import (
    CachedView,
    EpochView,
    dispatch_of,
    epoch_of,
    record_view_start,
    view_rows_now,
    view_start,
)
from .kept_tail import KeptTail

__all__ = ["LogWriter"]

#: How many entries ``commit_end`` reads at a time (an admission is a handful).
_PAGE = 64


class LogWriter:
    """Appends one session's entries at the right seq and keeps refused ones pending."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        next_seq: int,
        transcript: Transcript | Sequence[Message],
        checkpoints: Callable[[], list[SystemPromptCheckpoint]] | list[SystemPromptCheckpoint],
    ) -> None:
        """``checkpoints``: the stored ones, or how to read them when they are first asked for."""
        self._store = store
        self._soon = fast_paths(store).append_soon
        self._session_id = session_id
        self._next_seq = next_seq
        self._transcript = (
            transcript if isinstance(transcript, Transcript) else Transcript.of(transcript)
        )
        self._checkpoints: list[SystemPromptCheckpoint] | None = None
        self._read_checkpoints: Callable[[], list[SystemPromptCheckpoint]] | None = None
        self._new_checkpoints: list[SystemPromptCheckpoint] = []
        if callable(checkpoints):
            self._read_checkpoints = checkpoints
        else:
            self._checkpoints = checkpoints
        self._pending: list[LogEntry] = []
        self._pending_error: StoreError | None = None
        self._view: CachedView | None = None
        self._last_dispatch: int | None = None
        self._dispatch: Dispatch | None = None
        self._dispatch_known = False
        self.tail = KeptTail()  # the log since the last dispatch, as this writer knows it
        self._inflight: asyncio.Future[list[Record]] | None = None
        self._unsure = False  # a write failed without an answer: it may have committed
        # Writes of one session are serialised: a steer accepted from another task while a
        # turn writes must take the seq after the turn's, never the same one.
        self._lock = asyncio.Lock()
        self._observers: list[Callable[[Sequence[Record]], None]] = []
        self.ledger = Ledger(next_seq)  # what each dispatched request cost (session.cost())

    @property
    def session_id(self) -> str:
        """The id of the session this writer appends to."""
        return self._session_id

    @property
    def next_seq(self) -> int:
        """The seq the next durable entry gets (pending entries not counted)."""
        return self._next_seq

    @property
    def pending(self) -> tuple[LogEntry, ...]:
        """Entries the store refused, in order; ``flush()`` writes them."""
        return tuple(self._pending)

    @property
    def transcript(self) -> Transcript:
        """The user transcript of everything durable, plus what an unfinished step will show.

        Stored messages are read in pages when asked for (see ``Transcript``). Provisional
        messages (set at open for a step a dead process left unfinished) stand in for the
        entries the next write records, and vanish when anything is committed.
        """
        return self._transcript

    async def user_turns(self) -> int:
        """How many user messages are durable (counted by the store's index once, then kept)."""
        known = self._transcript.known_user_turns()
        if known is not None:
            return known
        return await asyncio.to_thread(self._transcript.user_turns)

    def show_provisional(self, messages: Sequence[Message]) -> None:
        """Show ``messages`` after the transcript until the next commit."""
        self._transcript.show_provisional(messages)

    @property
    def checkpoints(self) -> list[SystemPromptCheckpoint]:
        """Every durable ``SystemPromptCheckpoint`` in order (the stored ones read at first use)."""
        if self._checkpoints is None:
            assert self._read_checkpoints is not None
            self._checkpoints = self._read_checkpoints()
        return [*self._checkpoints, *self._new_checkpoints]

    def observe(self, observer: Callable[[Sequence[Record]], None]) -> None:
        """Have ``observer`` see every record this writer takes as durable, in order."""
        self._observers.append(observer)

    async def append(self, entries: Sequence[LogEntry]) -> list[Record]:
        """Write ``entries`` in one transaction now, or raise (keeping nothing).

        Cancelling the caller does not cancel the write: it finishes in the background and the
        next ``resync`` takes its outcome, so a write that committed is never lost or repeated.
        Writes from several tasks (a steer beside a running turn) run one after the other.
        """
        async with self._lock:
            while True:
                try:
                    return await self._append(entries)
                except ConflictError:
                    if not await self._take_inputs_beside():
                        raise

    async def _take_inputs_beside(self) -> bool:
        """Take inputs other writers appended past ``next_seq``; ``False`` for anything else."""
        info = await self._store.get_session(self._session_id)
        if info.next_seq <= self._next_seq:
            return False
        records = await self._store.read(self._session_id, self._next_seq, info.next_seq)
        if not only_inputs(records):
            return False
        self._take(records)
        return True

    async def _append(self, entries: Sequence[LogEntry]) -> list[Record]:
        if self._inflight is not None or self._unsure:
            await self.settle()
        try:
            write = self._write(list(entries))
        except StoreError:
            self._unsure = True  # as when the write's own task fails: re-read before writing
            raise
        if self._soon is not None:
            # Awaited directly (five commits a turn): no shield (an event-loop round a write),
            # no coroutine of its own. Cancelling the caller cancels only this future: the
            # write runs to its end on the store's thread, and the writer, marked unsure, reads
            # the log's end (``_catch_up``, run after that write) before it next writes or
            # reads, so what a cancelled write committed is taken then, never written twice.
            try:
                records = await write
            except (asyncio.CancelledError, StoreError):
                self._unsure = True  # the write goes on, or its answer was lost: re-read first
                raise
            self._take(records)
            return records
        self._inflight = write
        try:
            records = await asyncio.shield(write)
        except asyncio.CancelledError:
            raise  # the write goes on: the next settle takes its outcome
        except StoreError:
            self._inflight = None
            self._unsure = True  # the answer was lost, not necessarily the write
            raise
        except BaseException:
            self._inflight = None
            raise
        self._inflight = None
        self._take(records)
        return records

    def _write(self, entries: list[LogEntry]) -> asyncio.Future[list[Record]]:
        """The write of ``entries`` at ``next_seq``, going on whether or not it is awaited."""
        if self._soon is not None:  # handed over at once: no task to run the coroutine
            return self._soon(self._session_id, self._next_seq, entries)
        return asyncio.ensure_future(self._store.append(self._session_id, self._next_seq, entries))

    async def settle_inflight(self) -> None:
        """Wait for a write whose caller was cancelled and take what it committed."""
        write, self._inflight = self._inflight, None
        if write is None:
            return
        try:
            records = await write
        except StoreError:
            self._unsure = True
            return
        except Exception:
            return  # a conflict, or refused before writing: nothing of it was stored
        if records and records[0].seq == self._next_seq:
            self._take(records)

    async def settle(self) -> None:
        """Take the outcome of writes whose answer never came (cancelled, or failed unsure).

        ``StoreError`` while the store cannot be read (the writer stays unsure);
        ``ConflictError`` when pending entries were overtaken by another writer's.
        """
        await self.settle_inflight()
        if self._unsure:
            await self._catch_up()

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
        """Write the pending entries in one transaction; return how many were written.

        Entries an earlier attempt committed without an answer are found at the end of the log
        and taken as written (counted too), never written twice; the rest are written.
        """
        count = len(self._pending)
        if not count:
            return 0
        await self.settle()
        if self._pending:
            try:
                await self.append(self._pending)
            except ConflictError:
                # Lost answers can come late: an attempt may have committed after settle read.
                await self._catch_up()
                if self._pending:
                    raise
        self._pending = []
        self._pending_error = None
        return count

    async def write_before_close(self) -> int:
        """Try once more to write the pending entries; return how many still could not be."""
        if self._pending:
            with contextlib.suppress(AgentSessionError):
                await self.flush()
        return len(self._pending)

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

        Used after a write whose outcome is unknown (cancelled while the store committed) or a
        conflict. The records found become part of the derived views, exactly as if ``append``
        had returned.
        """
        await self.settle_inflight()
        return await self._catch_up()

    async def _catch_up(self) -> list[Record]:
        """Take what the store holds past ``next_seq``; pending entries found there were written.

        ``ConflictError`` when entries are pending and the log holds something else there.
        """
        info = await self._store.get_session(self._session_id)
        records: list[Record] = []
        if info.next_seq > self._next_seq:
            records = await self._store.read(self._session_id, self._next_seq, info.next_seq)
        if self._pending and records:
            # A lost answer's write holds the first pending entries (the commit that failed
            # first) or all of them (a flush): what was written is a common prefix.
            written = common_prefix(records, self._pending)
            if written < min(len(records), len(self._pending)):
                raise ConflictError(
                    f"session {self._session_id} was written by another writer while"
                    f" {len(self._pending)} entries were pending here; they were not stored",
                    session_id=self._session_id,
                    expected_seq=self._next_seq,
                    found_seq=info.next_seq,
                )
            self._pending = self._pending[written:]
            if not self._pending:
                self._pending_error = None
        self._unsure = False
        self._take(records)
        return records

    async def epoch_view(self) -> EpochView:
        """The current epoch and its log; read once (O(window), by the kind index), then kept."""
        if self._unsure:
            await self.settle()
        if self._view is None:
            self._view = await self._load_view()
        view = self._view
        return EpochView(view.epoch, list(view.records), view.dispatched)

    async def _load_view(self) -> CachedView:
        """Read the newest epoch, the view's kinds from its start, and the last dispatch's seq.

        A store that reads it in one call (``read_view``) does; one that reads synchronously
        does it in one worker-thread call; dispatch records,
        checkpoints and state entries are neither read nor decoded.
        """
        store, session_id = self._store, self._session_id
        known = self._last_dispatch if self._dispatch_known else None
        fast = fast_paths(store)
        finder = fast.finds()
        if fast.read_view is not None:
            found, records, dispatch = await fast.read_view(
                session_id, self._next_seq, VIEW_KINDS, record_view_start, not self._dispatch_known
            )
        elif finder is not None:
            found, records, dispatch = await asyncio.to_thread(
                view_rows_now, finder, session_id, self._next_seq, self._dispatch_known
            )
        else:
            found = await store.last(session_id, ["epoch"])
            start = 0 if found is None else view_start(epoch_of(found), found.seq)
            records = await store.read(session_id, start, self._next_seq, kinds=VIEW_KINDS)
            dispatch = None
            if found is not None and not self._dispatch_known:
                dispatch = await store.last(session_id, ["dispatch"])
        if dispatch is not None:
            known = dispatch.seq
            self._last_dispatch, self._dispatch = dispatch.seq, dispatch_of(dispatch)
            self._dispatch_known = True
        if found is None:
            return CachedView(None, -1, records, False, self._next_seq)
        dispatched = known is not None and known > found.seq
        return CachedView(epoch_of(found), found.seq, records, dispatched, self._next_seq)

    async def last_dispatch(self) -> Dispatch | None:
        """The session's last dispatch record (read once, then kept as records are committed)."""
        if self._unsure:
            await self.settle()
        if not self._dispatch_known:
            found = await self._store.last(self._session_id, ["dispatch"])
            self._last_dispatch = found.seq if found is not None else None
            self._dispatch = dispatch_of(found) if found is not None else None
            self._dispatch_known = True
        return self._dispatch

    async def tail_since_dispatch(self) -> list[Record] | None:
        """The records from the last ``dispatch`` on (``None``: none); kept (``KeptTail``)."""
        if self._unsure:
            await self.settle()
        held, kept = self.tail.at(self._next_seq)
        if held:
            return kept
        view, last_seq = self._view, self._last_dispatch
        if view is not None and last_seq is not None and last_seq >= view.complete_from:
            return [r for r in view.records if r.seq >= last_seq]
        last = await self._store.last(self._session_id, ["dispatch"])
        if last is None:
            self.tail.keep(None, 0, self._next_seq)
            return None
        self._last_dispatch = last.seq
        if isinstance(last.entry, Dispatch):
            self._dispatch, self._dispatch_known = last.entry, True
        records: list[Record] = await self._store.read(self._session_id, last.seq)
        self.tail.keep(records, records[-1].seq + 1 if records else last.seq, self._next_seq)
        return records

    async def commit_end(self, seq: int | None) -> int:
        """The last seq of the commit holding entry ``seq`` (``None``: the log's last entry).

        A ``seq`` that is no entry comes back as it is, for the store to refuse.
        """
        if self._unsure:
            await self.settle()
        if seq is None:
            return self._next_seq - 1
        if not isinstance(seq, int) or not 0 <= seq < self._next_seq:
            return seq  # not an entry: the store says so
        return await read_commit_end(
            lambda start, end: self._store.read(self._session_id, start, end), seq, _PAGE
        )

    def _take(self, records: Sequence[Record]) -> None:
        self.tail.extend(records)
        if records:
            self._next_seq = records[-1].seq + 1
            self._transcript.committed()
            for observer in self._observers:
                observer(records)
        for record in records:
            self.ledger.take(record)
            if isinstance(record.entry, Dispatch):
                self._last_dispatch = record.seq
                self._dispatch, self._dispatch_known = record.entry, True
            if self._view is not None:
                self._view = self._view.extended(record)
            if record.entry.kind in TRANSCRIPT_KINDS:
                message = to_message(record)
                assert message is not None
                self._transcript.append(message)
            elif isinstance(record.entry, SystemPromptCheckpoint):
                self._new_checkpoints.append(record.entry)
