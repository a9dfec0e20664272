"""The ``agentsession`` command line: everything only the command line uses.

Its display needs ``rich`` and ``prompt_toolkit``, the ``cli`` extra
(``pip install 'agentsession[cli]'``); the library itself runs without them. ``main`` is the
console script: without the extra it says what to install instead of failing on an import.
``agentsession --version`` is answered here, before the parser (``app``) and the package's
modules load: it prints what the parser's ``--version`` prints, from the standard library and
``import agentsession`` alone.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys

# Not ``typing.TYPE_CHECKING``: importing ``typing`` would cost ``--version`` more than the rest.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

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
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        _print_version()
    from .app import main as run  # the display modules load only when they can

    run(argv)


def _print_version() -> NoReturn:
    """``--version`` as the parser answers it: one line on stdout, exit code 0."""
    from .. import __version__  # the package's ``__init__`` loads nothing outside the stdlib

    with contextlib.suppress(AttributeError, OSError):  # a closed stdout: as argparse has it
        sys.stdout.write(f"agentsession {__version__}\n")
    raise SystemExit(0)
