"""The guard around every operation on a session: one at a time, and settled however it ends.

An operation that writes holds the session exclusively: it is refused while a turn runs, while
refused writes are pending, or while a tool call waits for approval (``SessionBusyError`` with
what to do). It takes the session's lease first (``ConflictError`` while another process drives
it) and keeps it fresh while it runs. However the operation ends — finished, failed, cancelled by
a task cancel, a timeout, ``session.cancel()`` or a consumer leaving ``stream()`` early — the
guard settles it: on cancellation it catches the writer up with the store (a write that committed
while being cancelled is taken, not repeated) and has the abandoned step recorded as interrupted
by cancellation, so the same session object takes the next operation.

The package's own upkeep between turns (``Runtime.tend_idle``'s keep-warm or compaction call,
``prepare_compaction()``) holds the session too, marked as upkeep: an operation of the user's
that arrives meanwhile waits for that one call to end instead of being refused, and no upkeep
starts while such an operation waits. Only the user's own operations refuse each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

from ..errors import ConflictError, SessionBusyError
from .gate import PermissionGate
from .leases import LeaseKeeper
from .writer import LogWriter

__all__ = ["Guard"]


class Guard:
    """One session's exclusivity, lease and cancellation settling."""

    def __init__(
        self,
        session_id: str,
        writer: LogWriter,
        gate: PermissionGate,
        lease: LeaseKeeper,
        settle: Callable[[], Awaitable[None]],
    ) -> None:
        self._session_id = session_id
        self.writer = writer
        self.gate = gate
        self.lease = lease
        self._settle = settle
        self._running = False
        self._task: asyncio.Task[object] | None = None
        self._streams: list[tuple[weakref.ref[object], AsyncGenerator[object, None]]] = []
        self._free: list[asyncio.Future[None]] = []  # waiters for the end of the operation
        self._upkeep = False  # the operation running is the package's upkeep, not the user's
        self._wanted = 0  # the user's operations waiting for an upkeep call to end
        self._waiting: set[asyncio.Task[object]] = set()  # their tasks (``cancel`` stops them)
        self.closed = False
        """``Session.close()`` ran and no operation started since: the application let it go."""

    @property
    def busy(self) -> bool:
        """Whether an operation runs (a stream its consumer dropped does not count)."""
        return self._running and not self._dropped()

    def _dropped(self) -> list[AsyncGenerator[object, None]]:
        return [g for ref, g in self._streams if ref() is None and _unfinished(g)]

    def watch(self, stream: object, events: AsyncGenerator[object, None]) -> None:
        """A stream starts a turn; if its consumer drops it unfinished, ``events`` is closed."""
        self._streams = [(r, g) for r, g in self._streams if _unfinished(g)]
        self._streams.append((weakref.ref(stream), events))

    async def settle_dropped(self) -> None:
        """Close the turns of streams their consumers dropped half-way; wait until settled.

        Called by the session's next operation before anything else, not from a finaliser: the
        closing runs in a task of the program's own, and the operation sees an idle session.
        """
        dropped = self._dropped()
        self._streams = [(r, g) for r, g in self._streams if r() is not None]
        for events in dropped:
            await events.aclose()

    @property
    def upkeep(self) -> bool:
        """Whether the operation running is the package's upkeep (an idle call, a summary)."""
        return self.busy and self._upkeep

    async def after_upkeep(self) -> None:
        """Wait while the package's upkeep holds the session (at once when it does not).

        The caller is one of the user's operations: while it waits no new upkeep starts, so it
        waits for one call at most (a keep-warm call, or a summary the next prompt adopts).
        """
        task = asyncio.current_task()
        while self.upkeep:
            self._wanted += 1
            if task is not None:
                self._waiting.add(task)
            try:
                waiter = asyncio.get_running_loop().create_future()
                self._free.append(waiter)
                await waiter
            finally:
                self._wanted -= 1
                self._waiting.discard(task)

    async def settled_not_running(self) -> None:
        """``settle_dropped``, then ``SessionBusyError`` if an operation of the user still runs.

        What an operation that may run beside a paused or refused step (flush, refresh, an
        approval's answer) checks before it starts; it waits for the package's upkeep.
        """
        await self.settle_dropped()
        await self.after_upkeep()
        if self.busy:
            raise SessionBusyError(f"session {self._session_id} is running a turn")

    def check_idle(self, *, allow_waiting: bool = False) -> None:
        """``SessionBusyError`` unless an idle-only operation may run now.

        The package's upkeep does not count: it calls a model on the request as last admitted
        and adopts nothing recorded meanwhile (a preset change waits for the next admission).
        """
        sid = self._session_id
        if self.busy and not self._upkeep:
            raise SessionBusyError(f"session {sid} is running a turn")
        if self.writer.pending:
            raise SessionBusyError(
                f"session {sid} has {len(self.writer.pending)} entries the store refused;"
                " call session.flush() first"
            )
        paused = None if allow_waiting else self.gate.paused_reason()
        if paused:
            raise SessionBusyError(f"session {sid} {paused}")

    @contextlib.asynccontextmanager
    async def exclusive(
        self, *, allow_waiting: bool = False, upkeep: bool = False
    ) -> AsyncIterator[None]:
        """Hold the session for one operation; settle it however the operation ends.

        ``upkeep``: the package's own call between turns. It is refused while one of the
        user's operations runs or waits; one of the user's waits for it (``after_upkeep``).
        """
        await self.settle_dropped()
        sid = self._session_id
        if upkeep and self._wanted:
            raise SessionBusyError(f"session {sid} has an operation of the user's waiting")
        if not upkeep:
            await self.after_upkeep()
        if self.busy:  # check_idle lets the package's upkeep pass; nothing else runs beside it
            raise SessionBusyError(f"session {sid} is running a turn")
        self.check_idle(allow_waiting=allow_waiting)
        await self.lease.hold()
        self.closed = False
        self._running = True
        self._upkeep = upkeep
        self._task = asyncio.current_task()
        try:
            async with self.lease.renewing():
                yield
        except (asyncio.CancelledError, GeneratorExit):
            await self._settle_cancelled()
            raise
        except ConflictError as exc:
            raise ConflictError(
                f"{exc}; call session.refresh() (or reopen the session) to continue",
                session_id=exc.session_id,
                expected_seq=exc.expected_seq,
                found_seq=exc.found_seq,
                holder=exc.holder,
            ) from exc
        finally:
            self._running = False
            self._upkeep = False
            self._task = None
            waiters, self._free = self._free, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def until_free(self) -> None:
        """Wait until no operation runs (at once when none does)."""
        while self.busy:
            waiter = asyncio.get_running_loop().create_future()
            self._free.append(waiter)
            await waiter

    async def _settle_cancelled(self) -> None:
        """After a cancellation: catch up with the store and record the abandoned step."""
        with contextlib.suppress(Exception):
            await self.writer.resync()
            if not self.writer.pending:
                await self._settle()

    def cancel(self) -> bool:
        """Cancel the running operation; ``False`` when none runs or it is already cancelled.

        While the package's upkeep runs, the operations of the user's waiting for it are
        cancelled instead (the upkeep's one call ends as it would have).

        A cancelled operation is winding down: it records its abandoned step before it ends, and
        a second cancel would land inside that record's write instead of stopping anything.
        """
        if self.upkeep:
            # No turn runs: the package's call is left to end (cancelled, the provider would
            # bill a request the log never records); what the user started waits for it.
            waiting = [t for t in self._waiting if not t.done() and not t.cancelling()]
            for waiter in waiting:
                waiter.get_loop().call_soon_threadsafe(waiter.cancel)
            return bool(waiting)
        task = self._task
        if task is None or task.done() or task.cancelling():
            return False
        task.get_loop().call_soon_threadsafe(task.cancel)
        return True


def _unfinished(events: AsyncGenerator[object, None]) -> bool:
    """Whether an async generator can still run (its frame is gone once it finished)."""
    return getattr(events, "ag_frame", None) is not None
