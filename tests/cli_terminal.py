"""A real terminal for command-line tests: a tmux server of the test's own, typed into and read.

Tests that use it skip, loudly, where tmux is not installed.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .cli_helpers import VENDOR_KEYS

TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(
    TMUX is None, reason="!!! TMUX IS NOT INSTALLED: chat was NOT tested in a real terminal !!!"
)
WAIT = 120.0  # seconds: a bound on a busy machine, never a measure


class Terminal:
    """One tmux server of our own (its own socket), running one command in an 120x50 pane."""

    def __init__(
        self,
        command: list[str],
        env: dict[str, str],
        cwd: Path,
        *,
        width: int = 120,
        height: int = 50,
    ) -> None:
        # A socket of our own in the test's folder: nothing is left behind, nothing shared.
        self.socket = str(cwd / f"tmux-{uuid.uuid4().hex[:8]}.sock")
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        # No vendor key reaches the command: tests never talk to a real provider.
        unset = " ".join(f"-u {name}" for name in VENDOR_KEYS)
        line = f"cd {shlex.quote(str(cwd))} && env {unset} {exports} {shlex.join(command)}"
        shell = f'{line}; echo "[exit $?]"; sleep 600'
        self._tmux("new-session", "-d", "-s", "chat", "-x", str(width), "-y", str(height), shell)

    def _tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-S", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "chat")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "chat", *keys)

    def paste(self, text: str) -> None:
        self._tmux("set-buffer", "-b", "p", text)
        self._tmux("paste-buffer", "-p", "-b", "p", "-t", "chat")

    def wait_for(self, text: str, count: int = 1) -> str:
        return self._until(lambda screen: screen.count(text) >= count, f"{text!r} ×{count}")

    def wait_for_prompt(self, prompt: str = "you ›") -> str:
        """Wait until the command waits at an empty ``prompt``: the last line drawn is the prompt.

        Only then may a test send Ctrl-D or Ctrl-C: the prompt is drawn once its line editor has
        the terminal in raw mode, and a key sent before reaches a terminal in line mode, where
        Ctrl-D is swallowed as end-of-file and Ctrl-C is a signal. A line of the same text
        printed earlier (a resumed session's recap: ``you › …``) does not count.
        """
        return self._until(lambda screen: _last_line(screen) == prompt, f"an empty {prompt!r}")

    def _until(self, seen: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            screen = self.screen()
            if seen(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{what} never appeared:\n{self.screen()}")

    def close(self) -> None:
        assert TMUX is not None
        subprocess.run([TMUX, "-S", self.socket, "kill-server"], capture_output=True, timeout=30)


def _last_line(screen: str) -> str:
    lines = [line.rstrip() for line in screen.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def terminals() -> Iterator[list[Terminal]]:
    """For a fixture: the terminals a test opens, closed when it ends."""
    opened: list[Terminal] = []
    yield opened
    for term in opened:
        term.close()
