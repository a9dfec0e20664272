"""``python -m agentsession`` runs the command line — without importing from the current folder.

``python -m`` puts the current folder first on ``sys.path``, so a ``platformdirs.py`` (or any
other module the command line imports) that a model wrote into the project would run with the
user's keys. ``import agentsession`` loads only the standard library, so nothing has come from
the folder yet when this module starts; when the folder is on the path, it starts again with
``-P`` (Python's safe path: no such entry). Entries that still name it (``PYTHONPATH=.``) are
dropped before the command line is imported. The ``agentsession`` console script has no such
entry at all and is the recommended way to run it.
"""

import os  # no ``from __future__``: see ``agentsession/__init__.py``
import sys


def _names_cwd(entry: str, cwd: str) -> bool:
    try:
        return os.path.realpath(entry or os.curdir) == cwd
    except (OSError, ValueError):
        return False


def _start() -> None:
    cwd = os.path.realpath(os.getcwd())
    if any(_names_cwd(entry, cwd) for entry in sys.path):
        if not sys.flags.safe_path:
            os.execv(sys.executable, [sys.executable, "-P", *sys.orig_argv[1:]])
        sys.path[:] = [entry for entry in sys.path if not _names_cwd(entry, cwd)]
    from .cli import main

    main()


_start()
