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
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from ..errors import SessionBusyError
from ..events import Event, StepCommitted, TurnFinished, TurnStream
from ..log import ContextEpoch, Record
from ..runtime import Runtime
from ..session import Session
from .cancels import Cancels
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
        self._sessions: dict[str, Session] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._starts: dict[str, int] = {}  # each running turn's first seq
        self._watch: asyncio.Task[None] | None = None

    async def start(
        self, session_id: str, stream_of: StreamOf, prepare: Prepare | None = None
    ) -> TurnRun:
        """Open the session and start a turn; errors before its first event are raised here."""
        if session_id in self.running:
            raise SessionBusyError(f"session {session_id} is running a turn")
        session = await self._open(session_id)
        try:
            if prepare is not None:
                await prepare(session)
            start_seq = (await self._runtime.store.get_session(session_id)).next_seq
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
        if run.early_error is not None:
            raise run.early_error
        return run

    def cancel(self, session_id: str) -> bool:
        """Cancel the turn this process runs for the session; ``False`` when it runs none."""
        session = self._sessions.get(session_id)
        return session.cancel() if session is not None else False

    async def _watch_cancels(self, session_id: str, start_seq: int) -> None:
        """Honour cancel requests other processes record for this turn (``cancels``)."""
        if self.cancels is None:
            return
        self._starts[session_id] = start_seq
        with contextlib.suppress(Exception):
            await self.cancels.clear(session_id, before=start_seq)  # for an earlier turn
        if self._watch is None or self._watch.done():
            self._watch = asyncio.create_task(self._watching(self.cancels))

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
        emitted = start_seq
        finished: TurnFinished | None = None
        error: BaseException | None = None
        try:
            async for event in stream_of(session):
                records: list[Record] = []
                if isinstance(event, StepCommitted):
                    records = await self._entries(run, emitted, event.last_seq + 1)
                    emitted = max(emitted, event.last_seq + 1)
                    await self._notifier.published(run.session_id)
                if observer is not None:
                    observer.on_event(event, records)
                if isinstance(event, TurnFinished):
                    finished = event
                elif not isinstance(event, StepCommitted):
                    await run.add(sse_frame(event.kind, event_json(event)))
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            error = exc
        except Exception as exc:
            error = exc
        finally:
            await self._settle(session, run, emitted, finished, error)
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
        """Send what the log holds beyond the last frame, the outcome; release the lease."""
        try:
            if error is not None and not run.frames:
                run.early_error = error
            else:
                with contextlib.suppress(Exception):
                    if await self._entries(run, emitted, None):
                        await self._notifier.published(run.session_id)
                if finished is not None:
                    await run.add(sse_frame("turn_finished", event_json(finished)))
                elif isinstance(error, asyncio.CancelledError):
                    await run.add(sse_frame("turn_cancelled", {"kind": "turn_cancelled"}))
                elif error is not None:
                    await run.add(sse_frame("error", error_body(error)))
        finally:
            with contextlib.suppress(Exception):
                await session.close()
            self.running.pop(run.session_id, None)
            self._sessions.pop(run.session_id, None)
            self._starts.pop(run.session_id, None)
            await run.finish()
