"""Running the command line in this process: ``main(argv)`` with its own folder, environment,
standard input and output — much faster than a new interpreter, for tests where a real process
does not matter.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentsession.cli import main

from .cli_helpers import Outcome

_UNSET = ("AGENTSESSION_MODEL", "AGENTSESSION_DB", "AGENTSESSION_CONFIG")
_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


@contextmanager
def _environment(cwd: Path, env: dict[str, str]) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = Path.cwd()
    for name in (*_UNSET, *_KEYS):
        os.environ.pop(name, None)
    os.environ["XDG_CONFIG_HOME"] = str(cwd / ".config")
    os.environ["XDG_DATA_HOME"] = str(cwd / ".data")
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_cli(cwd: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> Outcome:
    """``agentsession ARGS`` in this process; stdin, stdout and stderr are pipes (no terminal).

    Keys of the vendors and the CLI's own variables are unset unless ``env`` sets them.
    """
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), out, err
    code = 0
    try:
        with _environment(cwd, env or {}):
            main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return Outcome(code, out.getvalue(), err.getvalue())
