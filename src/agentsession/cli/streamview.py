"""A streamed Markdown reply on a terminal that keeps the scrollback clean.

Only the unfinished tail of the reply is live (redrawn as text arrives, cut to the screen's
height); each finished block — text up to a blank line outside a code fence — is printed once,
above the live tail, and never redrawn. So a reply taller than the terminal appears exactly once
in the history, instead of once per redraw as a live region taller than the screen leaves it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

if TYPE_CHECKING:
    from rich.markdown import Markdown

__all__ = ["Elapsed", "LiveReply", "finished_upto", "markdown"]


def markdown(text: str) -> Markdown:
    """``text`` as rich Markdown.

    The renderer, with its Markdown parser and code highlighter, loads with the first reply
    shown, not with every command (about 30 ms that a report or a listing never uses).
    """
    from rich.markdown import Markdown

    return Markdown(text)


class Elapsed:
    """A spinner's label with the seconds since it started: ``thinking… 3s · Ctrl-C to cancel``."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = time.monotonic()

    def __rich__(self) -> Text:
        """The label as it reads now."""
        seconds = int(time.monotonic() - self.started)
        return Text(f"{self.label} {seconds}s · Ctrl-C to cancel", style="dim")


def finished_upto(text: str, start: int) -> int:
    """Where the finished blocks of ``text[start:]`` end; ``start`` when none has finished.

    A block is finished by a blank line outside a code fence (``start`` must be outside one).
    """
    position = cut = start
    fenced = False
    for line in text[start:].splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # the line is still being written
        position += len(line)
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.strip():
            cut = position
    return cut


class LiveReply:
    """One streamed reply: finished blocks printed once, the tail live until ``close``."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.text = ""
        self.printed = 0
        self._live = Live(
            markdown(""),
            console=console,
            refresh_per_second=8,
            transient=True,
            vertical_overflow="crop",
        )
        self._live.start()

    def add(self, piece: str) -> None:
        """More text of the reply."""
        self.text += piece
        cut = finished_upto(self.text, self.printed)
        if cut > self.printed:
            block = self.text[self.printed : cut]
            self.printed = cut
            # The tail first: printing redraws the live area, and must redraw the new tail.
            self._live.update(markdown(self.text[cut:]))
            self._live.console.print(Group(markdown(block), Text("")))
            return
        self._live.update(markdown(self.text[self.printed :]))

    def discard(self, count: int) -> None:
        """Take back the last ``count`` characters (a failed attempt the retry sends again)."""
        keep = max(0, len(self.text) - count)
        if keep < self.printed:
            # Printed blocks cannot be taken back from the history: say they were cut.
            self._live.console.print(
                Text("[the text above was cut off by a provider failure]", style="yellow")
            )
            self.printed = keep
        self.text = self.text[:keep]
        self._live.update(markdown(self.text[self.printed :]))

    def close(self) -> None:
        """Stop the live tail and print it once, as the rest of the reply was."""
        self._live.stop()
        tail = self.text[self.printed :]
        if tail.strip():
            self.console.print(markdown(tail))
