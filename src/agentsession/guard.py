"""The guard around every operation on a session: one at a time, and settled however it ends.

An operation that writes holds the session exclusively: it is refused while a turn runs, while
refused writes are pending, or while a tool call waits for approval (``SessionBusyError`` with
what to do). It takes the session's lease first (``ConflictError`` while another process drives
it) and keeps it fresh while it runs. However the operation ends — finished, failed, cancelled by
a task cancel, a timeout, ``session.cancel()`` or a consumer leaving ``stream()`` early — the
guard settles it: on cancellation it catches the writer up with the store (a write that committed
while being cancelled is taken, not repeated) and has the abandoned step recorded as interrupted
by cancellation, so the same session object takes the next operation.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from .errors import ConflictError, SessionBusyError
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
        self.busy = False
        self._task: asyncio.Task[object] | None = None
        self._abandoned: asyncio.Task[None] | None = None

    def check_idle(self, *, allow_waiting: bool = False) -> None:
        """``SessionBusyError`` unless an idle-only operation may run now."""
        sid = self._session_id
        if self.busy:
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
    async def exclusive(self, *, allow_waiting: bool = False) -> AsyncIterator[None]:
        """Hold the session for one operation; settle it however the operation ends."""
        abandoned, self._abandoned = self._abandoned, None
        if abandoned is not None:
            # A stream left early is being closed: let it record its cancellation first.
            await asyncio.shield(abandoned)
        self.check_idle(allow_waiting=allow_waiting)
        await self.lease.hold()
        self.busy = True
        self._task = asyncio.current_task()
        try:
            async with self.lease.renewing():
                yield
        except (asyncio.CancelledError, GeneratorExit):
            await self._settle_cancelled()
            raise
        except ConflictError as exc:
            raise ConflictError(
                f"{exc}; call session.refresh() (or reopen the session) to continue"
            ) from exc
        finally:
            self.busy = False
            self._task = None

    async def _settle_cancelled(self) -> None:
        """After a cancellation: catch up with the store and record the abandoned step."""
        with contextlib.suppress(Exception):
            await self.writer.resync()
            if not self.writer.pending:
                await self._settle()

    @property
    def running(self) -> bool:
        """Whether an operation runs for its caller: a stream left early is only being closed."""
        return self.busy and (self._abandoned is None or self._abandoned.done())

    async def settled(self) -> None:
        """Wait until a stream left early has recorded how its turn ended."""
        if self._abandoned is not None:
            await asyncio.shield(self._abandoned)

    def abandon(self, closing: asyncio.Task[None]) -> None:
        """A stream was left early; ``closing`` settles its turn (awaited by the next operation)."""
        self._abandoned = closing

    def cancel(self) -> bool:
        """Cancel the running operation; ``False`` when none runs."""
        task = self._task
        if task is None or task.done():
            return False
        task.get_loop().call_soon_threadsafe(task.cancel)
        return True
