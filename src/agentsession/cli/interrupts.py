"""Ctrl-C and the keyboard while ``chat`` waits for a reply.

``interruptible`` runs a turn (or a compaction) so that Ctrl-C cancels it and the chat goes on:
the first press cancels, later ones only say the turn is still stopping, since a cancelled turn
records its abandoned step and a second cancel would land inside that write. ``no_echo`` keeps
the keys typed meanwhile off the screen.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable

from ..errors import AgentSessionError
from ..session import Session
from .console import Output

__all__ = ["interruptible", "no_echo"]


async def interruptible(
    session: Session,
    work: Awaitable[object],
    output: Output,
    explain: Callable[[BaseException], str] = str,
) -> bool:
    """Run ``work`` (a turn, a compaction) so that Ctrl-C cancels it without ending the chat.

    Only the first press cancels. A cancelled turn winds down — it records its abandoned step —
    and a second cancel then would land inside that write (``session.cancel()`` refuses it, and
    cancelling ``work`` instead would cut the write short); so later presses only say that the
    turn is still stopping. ``False`` when it failed (the error is shown, and the chat goes on).
    """
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    stopping = False

    def interrupt() -> None:
        nonlocal stopping
        if stopping:
            output.note("still stopping: the cancelled turn is being recorded")
            return
        stopping = True
        if not session.cancel():
            task.cancel()

    loop.add_signal_handler(signal.SIGINT, interrupt)
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        output.note("cancelled: the turn is recorded as cancelled; the session goes on")
    except AgentSessionError as exc:
        output.error(explain(exc), exc)
        return False
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    return True


def no_echo() -> Callable[[], None]:
    """Keep keys typed during a reply (``^C`` too) off the screen; returns the undo."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return lambda: None
    import termios

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    changed = list(saved)
    changed[3] &= ~(termios.ECHO | termios.ECHOCTL)
    termios.tcsetattr(fd, termios.TCSANOW, changed)
    return lambda: termios.tcsetattr(fd, termios.TCSANOW, saved)
