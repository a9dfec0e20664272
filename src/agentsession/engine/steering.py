"""Input while a turn runs: ``steer()``, ``queue()``, ``pending_input()``, ``cancel_input()``.

``SessionInbox`` is a part of ``Session`` (mixed in, like ``SessionApprovals``). Accepting an input
is one durable ``InputQueued`` entry, written beside a running turn's writes (the writer serialises
them), never refused because a turn runs. The running turn delivers steers at its next step
boundary (``engine/turn``); when ``prompt()`` or ``retry()`` ends with inputs left, or an input
arrives while the session is idle, a delivery task runs them as turns of their own, one queued
input per turn (a ``stream()`` consumer runs them with ``stream_pending()``, showing their events).
The task waits for whatever operation runs, stops at the first turn that does not finish (a
failure, a pause for approval: the inputs wait for the next operation), and its error is raised by
the next ``deliver_pending()``. A reopened session (after a crash) finds its pending inputs in the
log; ``deliver_pending()`` delivers them. Where another process (or session object) drives the
session, the input is appended at the log's end beside its writes; the driver's writer takes it at
its next commit (``engine/writer``) and delivers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import TYPE_CHECKING

from ..errors import ConflictError, SessionBusyError, UsageError
from ..events import Event, PromptResult, TurnFinished, TurnStream
from ..hygiene import prompt_content
from ..log import InputCancelled, InputMode, InputQueued, LogEntry, now
from ..request import ToolCall
from ..store.base import Store
from ..sync import run_sync
from .deps import SessionDeps
from .guard import Guard
from .inbox import PendingInput
from .leases import LeaseKeeper
from .parts import SessionParts
from .turn import Start
from .writer import LogWriter

__all__ = ["SessionInbox"]


#: How often an input written beside another process's writes is tried again when that
#: process wrote first (each try reads the log's end anew; a turn writes a few times a step).
_BESIDE_TRIES = 100


async def _append_beside(store: Store, session_id: str, entry: InputQueued) -> None:
    """Append ``entry`` at the log's end, which another writer is moving."""
    for _ in range(_BESIDE_TRIES):
        info = await store.get_session(session_id)
        try:
            await store.append(session_id, info.next_seq, [entry])
        except ConflictError:
            continue
        return
    raise ConflictError(
        f"session {session_id} kept changing while input was added beside its driver;"
        " nothing was accepted",
        session_id=session_id,
    )


class SessionInbox:
    """The inbox operations of a ``Session``."""

    _guard: Guard
    _lease: LeaseKeeper
    _parts: SessionParts
    _writer: LogWriter
    _deps: SessionDeps
    _delivery: asyncio.Task[None] | None = None
    _delivery_error: BaseException | None = None

    if TYPE_CHECKING:

        @property
        def id(self) -> str:
            """The session id (``Session.id``)."""

        async def _ready(self) -> None: ...

        async def _recover(self) -> None: ...

        def _metadata(self) -> list[LogEntry]: ...

        def _run(
            self, promoted: list[LogEntry], start: Start, calls: Sequence[ToolCall] = ()
        ) -> AsyncIterator[Event]: ...

    async def steer(self, text: str, *, start_turn: bool = True) -> PendingInput:
        """Add ``text`` to the running turn: a user message at its next step boundary.

        It arrives after the pending tool results (never between a call and its result). When
        no turn runs, it starts one (in the background) unless ``start_turn`` is false. Durable
        when this returns; never refused because a turn runs.

        Args:
            text: The message.
            start_turn: Start a turn when the session is idle (``False``: only record it; the
                next operation or ``deliver_pending()`` delivers it).

        Raises:
            UsageError: The text is empty or not valid Unicode.
            SessionBusyError: Entries the store refused wait for ``flush()``.
            ConflictError: The log kept changing under many tries (nothing was accepted).
            StoreError: The store refused the write (nothing was accepted).
        """
        return await self._accept("steer", text, start_turn)

    async def queue(self, text: str, *, start_turn: bool = True) -> PendingInput:
        """Run ``text`` as a prompt of its own when the running turn ends (in order).

        When no turn runs, it starts one (in the background) unless ``start_turn`` is false.
        Durable when this returns; never refused because a turn runs.

        Args:
            text: The prompt.
            start_turn: Start a turn when the session is idle (``False``: only record it).

        Raises:
            UsageError: The text is empty or not valid Unicode.
            SessionBusyError: Entries the store refused wait for ``flush()``.
            ConflictError: The log kept changing under many tries (nothing was accepted).
            StoreError: The store refused the write (nothing was accepted).
        """
        return await self._accept("queue", text, start_turn)

    def steer_sync(self, text: str) -> PendingInput:
        """``steer()`` for plain code (another thread may run ``prompt_sync()`` meanwhile).

        Args:
            text: The message.
        """
        return run_sync(self.steer(text))

    def queue_sync(self, text: str) -> PendingInput:
        """``queue()`` for plain code (another thread may run ``prompt_sync()`` meanwhile).

        Args:
            text: The prompt.
        """
        return run_sync(self.queue(text))

    def pending_input(self) -> list[PendingInput]:
        """The inputs accepted and not yet delivered nor cancelled, in the order accepted."""
        return self._parts.inbox.pending()

    async def cancel_input(self, input_id: str) -> bool:
        """Withdraw a pending input; ``False`` when it is delivered, being delivered, or unknown.

        Input this object added beside another process's writes is that process's to cancel.

        Args:
            input_id: The ``PendingInput.id`` that ``steer()`` or ``queue()`` returned.

        Raises:
            ConflictError: Another process drives the session (it holds the lease).
            StoreError: The store refused the write (the input stays pending).
        """
        if not self._parts.inbox.cancellable(input_id):
            return False
        if not self._guard.busy:
            await self._lease.hold()
        await self._writer.append([InputCancelled(input_id, now())])
        return True

    async def deliver_pending(self) -> list[PromptResult]:
        """Deliver every pending input now, as turns; return their results in order.

        Waits for a running operation (and a delivery running in the background) first. Stops
        at a turn paused for approval; a failure is raised with the inputs still pending.

        Raises:
            AgentSessionError: What ``prompt()`` raises, from a turn of this call or of the
                delivery that ran in the background before it (the inputs stay pending).
        """
        task = self._delivery
        if task is not None and task is not asyncio.current_task():
            with contextlib.suppress(BaseException):
                await asyncio.shield(task)
        failed, self._delivery_error = self._delivery_error, None
        if failed is not None:
            raise failed
        results: list[PromptResult] = []
        while self._parts.inbox.has_deliverable():
            await self._guard.after_upkeep()  # no new upkeep call starts while this waits
            await self._guard.until_free()
            try:
                async with self.stream_pending() as events:
                    result = None
                    async for event in events:
                        if isinstance(event, TurnFinished):
                            result = event.result
            except SessionBusyError:
                if self._guard.busy:
                    continue  # another operation started first: wait for it too
                raise
            if result is None:
                break
            results.append(result)
            if result.stop_reason == "approval_required":
                break
        return results

    def stream_pending(self) -> TurnStream:
        """One turn of the oldest pending input(s), as ``stream()`` runs a prompt.

        A ``stream()`` consumer calls it after the turn while ``pending_input()`` holds inputs
        (``prompt()`` runs them in the background instead). Ends without events when none wait.
        """
        return TurnStream(self._deliver(), self._guard.watch)

    async def _deliver(self) -> AsyncGenerator[Event, None]:
        async with self._guard.exclusive():
            await self._ready()
            await self._recover()
            await self._writer.settle()
            opening = self._parts.inbox.reserve_next()
            if not opening:
                return
            try:
                promoted = [*opening, *self._metadata()]
            except BaseException:
                self._parts.inbox.release(opening)
                raise
            async for event in self._run(promoted, "new"):
                yield event

    async def _accept(self, mode: InputMode, text: str, start_turn: bool) -> PendingInput:
        if not isinstance(text, str):
            raise UsageError(f"{mode}() takes text, got {type(text).__name__}")
        content = prompt_content(text)
        assert isinstance(content, str)
        if self._writer.pending:
            raise SessionBusyError(
                f"session {self.id} has {len(self._writer.pending)} entries the store refused;"
                " call session.flush() first"
            )
        entry = InputQueued(uuid.uuid4().hex, mode, content, now())
        accepted = PendingInput(entry.input_id, mode, content, entry.timestamp)
        if self._guard.busy:
            # Beside the operation running (the writer serialises the writes). A turn delivers
            # it; the package's upkeep does not, so a delivery waits for that call to end.
            upkeep = self._guard.upkeep
            await self._writer.append([entry])
            if upkeep and start_turn and not self._parts.gate.paused_reason():
                self._start_delivery()
            return accepted
        try:
            await self._lease.hold()
            await self._writer.append([entry])
        except ConflictError:
            # Another process (or session object) drives the session: add the input beside
            # its writes; its writer takes it at its next commit and delivers it.
            await _append_beside(self._deps.store, self.id, entry)
            return accepted
        if start_turn and not self._parts.gate.paused_reason():
            self._start_delivery()
        return accepted

    def _after_turn(self, result: PromptResult) -> None:
        """``prompt()``/``retry()`` ended: inputs left run next unless it paused for approval.

        A ``stream()`` consumer runs them itself (``stream_pending()``), to show their events.
        """
        if result.stop_reason != "approval_required" and self._parts.inbox.has_deliverable():
            self._start_delivery()

    def _start_delivery(self) -> None:
        task = self._delivery
        if task is not None and not task.done():
            return  # it delivers what arrived too, or is the task ending this turn
        self._delivery = asyncio.get_running_loop().create_task(self._deliver_in_background())

    async def _deliver_in_background(self) -> None:
        try:
            await self.deliver_pending()
        except Exception as exc:  # kept for the next deliver_pending()
            self._delivery_error = exc

    async def _stop_delivery(self) -> None:
        """Let a background delivery finish its turns (``close()``)."""
        task = self._delivery
        if task is not None and task is not asyncio.current_task():
            with contextlib.suppress(BaseException):
                await task
