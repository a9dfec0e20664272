"""The command line's warnings on standard error: one line each, in full with ``--debug``.

They come from the package and from the libraries it drives (the MCP SDK logs a server's broken
answer with a traceback); a record's control characters are shown as escapes (``hygiene``), so
a server's words cannot move the terminal's cursor.
"""

from __future__ import annotations

import logging
import sys

from ..hygiene import visible, visible_line

__all__ = ["log_to_stderr"]


class _OneLine(logging.Formatter):
    """A log record as one ``warning: …`` line: a library's traceback is for ``--debug``."""

    def format(self, record: logging.LogRecord) -> str:
        said = visible_line(" ".join(record.getMessage().split()))
        return f"{record.levelname.lower()}: {said}"


class _Full(logging.Formatter):
    """A log record in full (``--debug``), its control characters made visible all the same."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


def log_to_stderr(debug: bool) -> None:
    """Send warnings to standard error, one line each (in full with ``--debug``).

    They come from the package and from the libraries it drives (the MCP SDK logs a server's
    broken answer with a traceback).
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Full() if debug else _OneLine())
    root = logging.getLogger()
    # One handler of ours, however often ``main`` runs in one process (tests call it).
    for old in [h for h in root.handlers if getattr(h, "agentsession_cli", False)]:
        root.removeHandler(old)
    handler.agentsession_cli = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
