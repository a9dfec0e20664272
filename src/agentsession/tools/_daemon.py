"""Daemon threads for calls that may hang: sync tools, run off the event loop.

A call runs on a daemon thread, never on the default executor, whose threads are joined at
interpreter exit: a hanging call can be abandoned at its timeout or on cancellation without
blocking the event loop or the process's exit. Threads are reused — starting one costs more than
a short tool call — and a thread belongs to one call at a time, so a hanging call keeps its own
and the next call gets another.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["run_on_daemon_thread"]


async def run_on_daemon_thread(
    fn: Callable[..., Any], kwargs: dict[str, Any], *, name: str = "agentsession-call"
) -> Any:
    """Run ``fn(**kwargs)`` on a daemon thread and await its result.

    Cancelling the awaiting task returns at once; the thread then finishes (or hangs) on its
    own without holding up the event loop or the interpreter's exit, and its result is dropped.
    Threads are reused: an idle one takes the call (starting a thread costs more than a short
    tool), and a new one starts only when every thread is busy — a hanging call keeps its own.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(ok: bool, payload: Any) -> None:
        if future.done():  # the caller gave up (cancelled or timed out)
            return
        if ok:
            future.set_result(payload)
        else:
            future.set_exception(payload)

    def work() -> tuple[bool, Any]:
        try:
            return (True, context.run(fn, **kwargs))
        except StopIteration as exc:  # a Future refuses StopIteration itself
            return (False, RuntimeError(f"StopIteration: {exc}"))
        except BaseException as exc:
            return (False, exc)

    def send(result: tuple[bool, Any]) -> None:
        # A closed loop raises RuntimeError: nobody waits for this result any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(deliver, *result)

    _WORKERS.submit(work, send, name)
    return await future


_Job = tuple[Callable[[], tuple[bool, Any]], Callable[[tuple[bool, Any]], None], str]


class _DaemonWorkers:
    """Daemon threads that run one call at a time and wait, idle, for the next one.

    At most ``keep`` idle threads wait; a thread finding that many idle after its call ends.
    """

    def __init__(self, keep: int = 4) -> None:
        self._keep = keep
        self._idle: list[queue.SimpleQueue[_Job]] = []
        self._lock = threading.Lock()

    def submit(
        self,
        work: Callable[[], tuple[bool, Any]],
        send: Callable[[tuple[bool, Any]], None],
        name: str,
    ) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True).start()
        inbox.put((work, send, name))

    def _serve(self, inbox: queue.SimpleQueue[_Job]) -> None:
        while True:
            work, send, name = inbox.get()
            threading.current_thread().name = name
            result = work()
            # Idle again before the result is sent, so the caller's next call finds this thread.
            with self._lock:
                stay = len(self._idle) < self._keep
                if stay:
                    self._idle.append(inbox)
            send(result)
            if not stay:
                return


_WORKERS = _DaemonWorkers()
