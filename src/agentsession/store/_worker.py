"""A store connection's own worker thread: blocking calls leave the event loop one at a time.

``asyncio.to_thread`` pays for a general-purpose pool on every call: a copied context, a
``concurrent.futures.Future`` with its condition variable, the pool's bookkeeping, and a
future chained back to the loop. A store with one connection needs none of that: its calls
run one at a time anyway. So each connection gets one thread fed by a ``SimpleQueue``; the
thread runs each call and settles the caller's asyncio future with one
``call_soon_threadsafe`` (one wake-up of the loop).

Calls run in the order they were handed over. A call handed over always runs to its end, even
when its caller was cancelled meanwhile (a write commits or fails as a whole; the caller
re-reads the log's end before writing again), and a call handed over before ``finish`` runs
before the finishing call. The thread holds no reference to the store between calls, so a
store dropped without ``close()`` is still collected, and its finaliser ends the thread.

The caller's future (``Handed``) resumes the one task awaiting it in the very event-loop round
that settles it: a plain future's ``set_result`` schedules its callbacks for the next round,
which cost every hand-over (five commits a turn) a round of its own — a poll of the selector
and the loop's bookkeeping — for nothing. Anything else (several callbacks, a cancellation)
is scheduled as asyncio does.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Handed", "Worker"]

T = TypeVar("T")

_Item = tuple[asyncio.AbstractEventLoop, "Handed[Any]", Callable[..., Any], tuple[Any, ...]]


_Waiter = tuple[Callable[..., object], contextvars.Context]


class Handed(asyncio.Future[T]):
    """A hand-over's future: settled by a callback of its own, it runs its waiter right there.

    Its done-callbacks are kept here rather than in the base future while it is pending, so
    settling runs a lone waiter (the awaiting task's wake-up) at once, in the callback that the
    worker scheduled; several run as asyncio runs them, one event-loop callback each, and so do
    all of them after a cancellation (which may come from inside another task's step).
    """

    __slots__ = ("_waiters",)

    def __init__(self, *, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self._waiters: list[_Waiter] = []

    def add_done_callback(
        self, fn: Callable[[Handed[T]], object], /, *, context: contextvars.Context | None = None
    ) -> None:
        """As ``asyncio.Future.add_done_callback``."""
        if self.done():
            super().add_done_callback(fn, context=context)  # scheduled at once, as asyncio does
        else:
            self._waiters.append((fn, contextvars.copy_context() if context is None else context))

    def remove_done_callback(self, fn: Callable[[Handed[T]], object], /) -> int:
        """As ``asyncio.Future.remove_done_callback``: how many were removed."""
        kept = [w for w in self._waiters if w[0] != fn]
        removed = len(self._waiters) - len(kept)
        self._waiters = kept
        return removed + super().remove_done_callback(fn)

    def cancel(self, msg: Any | None = None) -> bool:
        """As ``asyncio.Future.cancel``; its callbacks are scheduled, not run here."""
        if not super().cancel(msg=msg):
            return False
        self._wake(inline=False)
        return True

    def _wake(self, inline: bool) -> None:
        waiters, self._waiters = self._waiters, []
        if inline and len(waiters) == 1:
            fn, context = waiters[0]
            context.run(fn, self)
            return
        loop = self.get_loop()
        for fn, context in waiters:
            loop.call_soon(fn, self, context=context)


def _settle(future: Handed[Any], result: Any) -> None:
    if not future.done():  # a cancelled caller: the call ran, nobody waits for its answer
        future.set_result(result)
        future._wake(inline=True)  # a callback of its own: no task is running here


def _fail(future: Handed[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
        future._wake(inline=True)


def _serve(calls: queue.SimpleQueue[_Item | None]) -> None:
    while (item := calls.get()) is not None:
        loop, future, fn, args = item
        del item  # hold nothing of a finished call (and so of its store) while waiting
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to the caller, as the executor would
            with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits
                loop.call_soon_threadsafe(_fail, future, exc)
            del exc
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future, result)
            del result
        del loop, future, fn, args


#: How many times this process is a forked child of one that had threads (none survive).
_FORKS = [0]


def _forked() -> None:
    _FORKS[0] += 1


os.register_at_fork(after_in_child=_forked)


class Worker:
    """One daemon thread that runs an owner's blocking calls in order (started on first use)."""

    def __init__(self, owner: object, name: str, finished: Callable[[], Exception]) -> None:
        self._name = name
        self._finished_error = finished
        self._calls: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._forks = 0  # ``_FORKS`` when the thread started
        self._finished = False
        self._guard = threading.Lock()  # hand-over vs finish, from any thread or loop
        # The owner collected without finish(): the thread ends instead of waiting forever.
        weakref.finalize(owner, self._calls.put, None)

    def _hand_over(self, item: _Item, last: bool) -> bool:
        with self._guard:
            if self._finished:
                return False
            # A thread ends only when finished, or in a forked child (which has no threads):
            # the fork count says so without ``is_alive``'s three Python calls per hand-over.
            if self._thread is None or self._forks != _FORKS[0]:
                thread = threading.Thread(
                    target=_serve, args=(self._calls,), name=self._name, daemon=True
                )
                thread.start()
                self._thread, self._forks = thread, _FORKS[0]
            self._calls.put(item)
            if last:
                self._finished = True
                self._calls.put(None)
            return True

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the thread; after ``finish``, the ``finished()`` error instead."""
        return await self.submit(fn, *args)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Hand ``fn(*args)`` over now; the future settles with its outcome (from a running loop).

        The call runs even if nobody awaits the future; a caller that must learn the outcome
        after being cancelled awaits it through ``asyncio.shield`` (a cancelled future drops it)
        or, as the session's writer does, asks with a later call, which runs after this one.
        """
        loop = asyncio.get_running_loop()
        future: Handed[T] = Handed(loop=loop)
        if not self._hand_over((loop, future, fn, args), last=False):
            raise self._finished_error()
        return future

    async def finish(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` as the last call, then end the thread (idempotent: later calls do nothing)."""
        loop = asyncio.get_running_loop()
        future: Handed[None] = Handed(loop=loop)
        if not self._hand_over((loop, future, fn, ()), last=True):
            return
        try:
            await future
        finally:
            thread = self._thread
            if thread is not None and future.done() and not future.cancelled():
                # The thread's last step after settling ``future`` is to take the end marker.
                thread.join()
