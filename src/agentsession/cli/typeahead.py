"""Lines typed while a reply runs in ``chat``: a steer for the running turn, or a queued prompt.

While a turn runs the terminal stays in line mode with echo off (``chat``), so a line arrives
whole when Enter is pressed. Each one is accepted at once through the session's inbox: a plain
line (or ``/steer TEXT``) steers the running turn — delivered at its next step, after the tool
results — and ``/queue TEXT`` runs as its own prompt after the turn. A dim line says which it
became and how to get the other. Reading uses the event loop's reader on standard input, removed
when the turn ends, so nothing is left reading when the prompt line takes the terminal back; what
is typed without Enter stays in the terminal for the next prompt.
"""

from __future__ import annotations

import asyncio
import os
import sys
from types import TracebackType

from ..errors import AgentSessionError
from ..hygiene import visible_line
from ..session import Session
from .console import Output

__all__ = ["TypedInput"]


class TypedInput:
    """Accepts the lines typed during one turn (a context manager around the turn)."""

    def __init__(self, session: Session, output: Output) -> None:
        self._session = session
        self._output = output
        self._fd: int | None = None
        self._buffer = b""
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> TypedInput:
        if sys.stdin.isatty() and sys.stdout.isatty():
            self._fd = sys.stdin.fileno()
            asyncio.get_running_loop().add_reader(self._fd, self._readable)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop()
        if self._tasks:  # a line being accepted is durable before the turn is over
            await asyncio.wait(set(self._tasks))

    def _stop(self) -> None:
        if self._fd is not None:
            asyncio.get_running_loop().remove_reader(self._fd)
            self._fd = None

    def _readable(self) -> None:
        assert self._fd is not None
        try:
            data = os.read(self._fd, 4096)
        except OSError:
            data = b""
        if not data:  # end of input: the prompt line sees it next
            self._stop()
            return
        self._buffer += data
        while b"\n" in self._buffer:
            line, _, self._buffer = self._buffer.partition(b"\n")
            text = line.decode("utf-8", "replace").strip()
            if text:
                task = asyncio.get_running_loop().create_task(self._accept(text))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _accept(self, text: str) -> None:
        mode = "queue" if text.startswith("/queue") else "steer"
        if text.startswith(("/queue", "/steer")):
            text = text[6:].strip()
        session = self._session
        try:
            accepted = await (session.steer(text) if mode == "steer" else session.queue(text))
        except AgentSessionError as exc:
            self._output.note(f"not accepted: {exc}")
            return
        shown = visible_line(text)
        if mode == "steer":
            self._output.note(
                f"steer {accepted.id[:8]}: {shown} (joins this turn at its next step;"
                " start a line with /queue to run it after this turn instead)"
            )
        else:
            self._output.note(f"queued {accepted.id[:8]}: {shown} (runs after this turn)")
