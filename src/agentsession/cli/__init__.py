"""The ``agentsession`` command line: everything only the command line uses.

Its display needs ``rich`` and ``prompt_toolkit``, the ``cli`` extra
(``pip install 'agentsession[cli]'``); the library itself runs without them. ``main`` is the
console script: without the extra it says what to install instead of failing on an import.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

__all__ = ["CLI_MODULES", "main", "missing_cli_modules"]

#: What the command line imports beyond the library's own dependencies (the ``cli`` extra).
CLI_MODULES = ("rich", "prompt_toolkit")


def missing_cli_modules() -> list[str]:
    """The modules of the ``cli`` extra that are not installed."""
    return [name for name in CLI_MODULES if importlib.util.find_spec(name) is None]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line; without the ``cli`` extra, one line saying what to install."""
    missing = missing_cli_modules()
    if missing:
        sys.stderr.write(
            f"error: the agentsession command line needs {' and '.join(missing)}, which are not"
            " installed: pip install 'agentsession[cli]'\n"
        )
        raise SystemExit(1)
    from .app import main as run  # the display modules load only when they can

    run(argv)
