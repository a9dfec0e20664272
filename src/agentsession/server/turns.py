"""Turns the server runs: each in its own task, its events kept for every listener.

A turn does not belong to the HTTP request that started it: the request's stream only listens.
A client that reads slowly or leaves never holds the turn up — the turn runs to its end, its
frames are kept until it is over, and a client that comes back reads the log (``/events``).
When the turn ends the session is closed, releasing its lease, so any process takes the next
prompt. Entries reach the stream as they are committed, each under its log seq, read back from
the store: the same JSON any process's ``/events`` sends for that seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from ..engine.recovery import step_state
from ..errors import ConflictError, SessionBusyError, StoreError
from ..events import Event, PromptResult, StepCommitted, TextDelta, TurnFinished, TurnStream
from ..log import AssistantEntry, ContextEpoch, Record
from ..runtime import Runtime
from ..session import Session
from ..store.base import Store
from .cancels import Cancels
from .lease_wait import released
from .notify import Notifier, Wakeup
from .wire import entry_json, error_body, event_json, sse_frame

__all__ = ["TurnObserver", "TurnRun", "Turns"]


class TurnObserver(Protocol):
    """Sees one turn as it runs (telemetry)."""

    def on_event(self, event: Event, records: list[Record]) -> None:
        """A turn event, with the entries its step committed (for ``StepCommitted``)."""

    def on_end(self, error: BaseException | None) -> None:
        """The turn ended: finished (``None``), cancelled or failed."""


class TurnRun:
    """The frames of one running turn, kept for its listeners until it is over.

    Listeners wait on a ``Wakeup`` (no lock): a listener whose client leaves is cancelled at
    any point and must never leave anything held that the turn needs to add its next frame.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.frames: list[bytes] = []
        self.done = False
        self.early_error: BaseException | None = None
        self._changed = Wakeup()
        self._started = asyncio.Event()

    async def add(self, frame: bytes) -> None:
        """Keep a frame and wake the listeners."""
        self.frames.append(frame)
        self._changed.fire()
        self._started.set()

    async def finish(self) -> None:
        """The turn is over: listeners end after the last frame."""
        self.done = True
        self._changed.fire()
        self._started.set()

    async def started(self) -> None:
        """Wait for the first frame (or an error before any)."""
        await self._started.wait()

    async def listen(self) -> AsyncIterator[bytes]:
        """Every frame from the first, then each as it comes, until the turn is over."""
        index = 0
        while True:
            over = self.done
            fresh = self.frames[index:]
            index += len(fresh)
            for frame in fresh:
                yield frame
            if over and index >= len(self.frames):
                return
            if not fresh and not self.done:
                await self._changed.wait()


StreamOf = Callable[[Session], TurnStream]
Opener = Callable[[str], Awaitable[Session]]
"""Opens a session where its tools work (its workspace)."""
Prepare = Callable[[Session], Awaitable[None]]
ObserverOf = Callable[[Session, int | None], TurnObserver]
"""Makes the observer of one turn: given its session and the context epoch it starts in."""


class Turns:
    """The turns this process runs, one per session at a time."""

    def __init__(
        self,
        runtime: Runtime,
        notifier: Notifier,
        observer: ObserverOf | None = None,
        opener: Opener | None = None,
        cancels: Cancels | None = None,
    ) -> None:
        self._runtime = runtime
        self._open: Opener = opener or runtime.open_session
        self._notifier = notifier
        self._observer = observer
        self.cancels = cancels
        self.running: dict[str, TurnRun] = {}
        self.tending: dict[str, asyncio.Event] = {}  # sessions the idle pass holds, till set
        self._sessions: dict[str, Session] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._starts: dict[str, int] = {}  # each running turn's first seq
        self._watch: asyncio.Task[None] | None = None

    async def start(
        self,
        session_id: str,
        stream_of: StreamOf,
        prepare: Prepare | None = None,
        opener: Opener | None = None,
    ) -> TurnRun:
        """Open the session (``opener``: how, if not as usual) and start a turn.

        Errors before the turn's first event are raised here. A lease another process holds
        while it runs no turn (its idle pass) is waited for, for a lease's life at most
        (``lease_wait``); one held for a turn is a ``ConflictError`` at once.
        """
        longest = self._runtime.config.lease_ttl
        until = time.monotonic() + longest
        while True:
            try:
                return await self._start(session_id, stream_of, prepare, opener)
            except ConflictError as exc:
                left = until - time.monotonic()
                if exc.holder is None or left <= 0:
                    raise
                if not await released(self._runtime.store, session_id, exc.holder, left):
                    raise

    async def after_idle_pass(self, session_id: str) -> None:
        """Wait while this process's idle pass holds the session (one short call at most)."""
        while (tended := self.tending.get(session_id)) is not None:
            await tended.wait()

    async def _start(
        self,
        session_id: str,
        stream_of: StreamOf,
        prepare: Prepare | None,
        opener: Opener | None,
    ) -> TurnRun:
        await self.after_idle_pass(session_id)  # the pass lets go after one short call at most
        if session_id in self.running:
            raise SessionBusyError(f"session {session_id} is running a turn")
        session = await (opener or self._open)(session_id)
        try:
            if prepare is not None:
                await prepare(session)
            # The log's end as the session knows it (read when it opened, one snapshot on a
            # busy PostgreSQL store): not one more read. Its writes are checked against it.
            start_seq = session.next_seq
        except BaseException:
            await session.close()
            raise
        run = TurnRun(session_id)
        self.running[session_id] = run
        self._sessions[session_id] = session
        await self._watch_cancels(session_id, start_seq)
        task = asyncio.create_task(self._drive(session, stream_of, run, start_seq))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await run.started()
        self._clear_cancels(session_id, start_seq)
        if run.early_error is not None:
            raise run.early_error
        return run

    def live(self, session_id: str) -> Session | None:
        """The session object of the turn this process runs for the session, if any."""
        return self._sessions.get(session_id)

    def claim(self, session_id: str) -> asyncio.Event | None:
        """Hold the session for the idle pass; ``None`` when a turn runs or it is held.

        Set the event returned (and drop the entry) to let go.
        """
        if session_id in self.running or session_id in self.tending:
            return None
        released = self.tending[session_id] = asyncio.Event()
        return released

    def cancel(self, session_id: str) -> bool:
        """Cancel the turn this process runs for the session; ``False`` when it runs none."""
        session = self._sessions.get(session_id)
        return session.cancel() if session is not None else False

    async def _watch_cancels(self, session_id: str, start_seq: int) -> None:
        """Honour cancel requests other processes record for this turn (``cancels``)."""
        if self.cancels is None:
            return
        self._starts[session_id] = start_seq
        if self._watch is None or self._watch.done():
            self._watch = asyncio.create_task(self._watching(self.cancels))

    def _clear_cancels(self, session_id: str, start_seq: int) -> None:
        """Drop cancel requests for the session's earlier turns, after this turn's first event.

        Requests for an earlier turn are never due (``due`` compares seqs): dropping them is
        housekeeping, so it waits until the turn has answered rather than take a pooled
        connection while the turn's start needs one.
        """
        if self.cancels is None:
            return
        clearing = asyncio.create_task(_quietly(self.cancels.clear(session_id, before=start_seq)))
        self._tasks.add(clearing)
        clearing.add_done_callback(self._tasks.discard)

    async def _watching(self, cancels: Cancels) -> None:
        while self._starts:
            await self._notifier.cancel_news.wait(cancels.poll)
            try:
                due = await cancels.due(dict(self._starts))
            except Exception:  # the store is away: look again at the next interval
                continue
            for session_id in due:
                if self.cancel(session_id):
                    with contextlib.suppress(Exception):
                        await cancels.clear(session_id)

    async def close(self, grace: float) -> None:
        """Let running turns finish for ``grace`` seconds, then cancel the rest (recorded)."""
        tasks = set(self._tasks)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for session_id in list(self._sessions):
            self.cancel(session_id)
        if pending:
            await asyncio.wait(pending, timeout=max(grace, 5.0))

    async def _entries(self, run: TurnRun, start: int, end: int | None) -> list[Record]:
        records = await self._runtime.store.read(run.session_id, start, end)
        for record in records:
            await run.add(sse_frame("entry", entry_json(record), record.seq))
        return records

    async def _drive(
        self, session: Session, stream_of: StreamOf, run: TurnRun, start_seq: int
    ) -> None:
        observer = None
        if self._observer is not None:
            epoch = await self._runtime.store.last(run.session_id, ["epoch"])
            number = epoch.entry.epoch if epoch and isinstance(epoch.entry, ContextEpoch) else None
            observer = self._observer(session, number)
        pump = _Pump(self, run, observer, start_seq)
        error: BaseException | None = None
        try:
            stream = stream_of(session)
            while not await pump.drain(stream):
                # The store refused a write and it is written now (the store is back): run the
                # turn on, as a client could not — unless that write was the turn's end. When
                # nothing of this turn was stored (its admission was refused) it starts again:
                # the log's last finished step is an earlier turn's, never this one's answer.
                store = self._runtime.store
                if (await store.get_session(session.id)).next_seq <= start_seq:
                    stream = stream_of(session)
                    continue
                pump.finished = await _ended(store, session.id, start_seq)
                if pump.finished is not None:
                    break
                stream = session.stream_retry()
            # Inputs queued (or steered too late) during the turn run next, in this stream.
            while _goes_on(pump.finished) and session.pending_input():
                before = pump.finished
                if not await pump.drain(session.stream_pending()) or pump.finished is before:
                    break
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            error = exc
        except Exception as exc:
            error = exc
        finally:
            await self._settle(session, run, pump.emitted, pump.finished, error)
            if observer is not None:
                observer.on_end(error)

    async def _settle(
        self,
        session: Session,
        run: TurnRun,
        emitted: int,
        finished: TurnFinished | None,
        error: BaseException | None,
    ) -> None:
        """Send what the log holds beyond the last frame; release the lease; the outcome.

        The lease goes before the outcome's frame, so a client that sends its next prompt the
        moment it reads ``turn_finished`` finds the session free, on any process.
        """
        outcome: bytes | None = None
        try:
            if error is not None and not run.frames:
                run.early_error = error
            else:
                with contextlib.suppress(Exception):
                    if await self._entries(run, emitted, None):
                        await self._notifier.published(run.session_id)
                if finished is not None:
                    outcome = sse_frame("turn_finished", event_json(finished))
                elif isinstance(error, asyncio.CancelledError):
                    outcome = sse_frame("turn_cancelled", {"kind": "turn_cancelled"})
                    self._notifier.live(run.session_id, outcome)
                elif error is not None:
                    outcome = sse_frame("error", error_body(error))
        finally:
            with contextlib.suppress(Exception):
                await session.close()
            self.running.pop(run.session_id, None)
            self._sessions.pop(run.session_id, None)
            self._starts.pop(run.session_id, None)
            self._notifier.relay.step_over(run.session_id)
            if outcome is not None:
                await run.add(outcome)
            await run.finish()


#: Seconds between the server's own attempts to write entries the store refused.
_FLUSH_WAITS = (0.5, 1.0, 2.0, 4.0)


class _Pump:
    """Moves one turn's events to its frames; writes refused entries itself, then says so."""

    def __init__(
        self, turns: Turns, run: TurnRun, observer: TurnObserver | None, start_seq: int
    ) -> None:
        self._turns = turns
        self._run = run
        self._observer = observer
        self.emitted = start_seq
        self.finished: TurnFinished | None = None

    async def drain(self, stream: TurnStream) -> bool:
        """Send the stream's events on; ``False`` when refused entries were written since.

        A ``StoreError`` with nothing waiting in memory, or whose entries stay refused through
        every attempt, is raised.
        """
        session = self._turns._sessions[self._run.session_id]
        try:
            async for event in stream:
                await self._one(event)
        except StoreError:
            if await _flushed(session):
                return False
            raise
        return True

    async def _one(self, event: Event) -> None:
        run, turns = self._run, self._turns
        records: list[Record] = []
        if isinstance(event, StepCommitted):
            records = await turns._entries(run, self.emitted, event.last_seq + 1)
            self.emitted = max(self.emitted, event.last_seq + 1)
            turns._notifier.relay.step_over(run.session_id)
            await turns._notifier.published(run.session_id)
        if self._observer is not None:
            self._observer.on_event(event, records)
        if isinstance(event, TurnFinished):
            self.finished = event
        elif not isinstance(event, StepCommitted):
            frame = sse_frame(event.kind, event_json(event))
            await run.add(frame)
            # To the /events readers: here, and for text on other processes too (PostgreSQL).
            # Every entry before ``emitted`` is committed: the step's own start there or later.
            if isinstance(event, TextDelta):
                turns._notifier.text(run.session_id, self.emitted, event.text, frame)
            else:
                turns._notifier.live(run.session_id, frame)


async def _quietly(work: Awaitable[None]) -> None:
    with contextlib.suppress(Exception):
        await work


def _goes_on(finished: TurnFinished | None) -> bool:
    """Whether a turn ended so that the inputs waiting for its end may run now."""
    return finished is not None and finished.result.stop_reason != "approval_required"


async def _flushed(session: Session) -> bool:
    """Write what the store refused, trying a few times; whether the store takes writes again.

    With nothing kept in memory (a refused admission stores nothing) the step can simply be
    tried again once the store answers.
    """
    for wait in _FLUSH_WAITS:
        await asyncio.sleep(wait)
        try:
            if session.unflushed_entries:
                await session.flush()
            else:
                await session.refresh()
        except StoreError:
            continue
        return True
    return False


async def _ended(store: Store, session_id: str, start_seq: int) -> TurnFinished | None:
    """The turn's end when its last step finished it (its answer was the refused write).

    Only a step of this turn counts (from ``start_seq`` on): an earlier turn's end is not this
    one's answer.
    """
    last = await store.last(session_id, ["dispatch"])
    if last is None or last.seq < start_seq:
        return None
    tail = await store.read(session_id, last.seq)
    if not tail or not step_state(tail).finished:
        return None
    answers = [r.entry for r in tail if isinstance(r.entry, AssistantEntry)]
    text = answers[-1].content if answers else ""
    return TurnFinished(PromptResult(text=text, steps=1, session_id=session_id))
