"""Running the command line in this process: ``main(argv)`` with its own folder, environment,
standard input and output — much faster than a new interpreter, for tests where a real process
does not matter.

Standard input and output are files under UTF-8 text layers, as they are in a process whose
streams are pipes: not terminals, with ``.buffer`` for the commands that copy bytes and a
descriptor for the children that inherit them.
Everything the command line changes in the process — the environment, the working folder, the
standard streams, the root logger's handlers and level — is put back when it returns.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from agentsession.cli import main

from .cli_helpers import VENDOR_KEYS, Outcome

_UNSET = ("AGENTSESSION_MODEL", "AGENTSESSION_DB", "AGENTSESSION_CONFIG")


@contextmanager
def _environment(cwd: Path, env: dict[str, str]) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = Path.cwd()
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    for name in (*_UNSET, *VENDOR_KEYS):
        os.environ.pop(name, None)
    # A pipe has no size: argparse and rich fall back to 80 columns in a process of its own,
    # but here they would measure the terminal pytest runs in (with ``-s``).
    os.environ.setdefault("COLUMNS", "80")
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)


def _stream(
    raw: BinaryIO, errors: str = "strict", line_buffering: bool = False
) -> io.TextIOWrapper:
    # As Python opens a pipe with PYTHONIOENCODING=utf-8: no newline translation on write.
    return io.TextIOWrapper(
        raw, encoding="utf-8", errors=errors, newline="\n", line_buffering=line_buffering
    )


def _read(stream: io.TextIOWrapper, raw: BinaryIO) -> str:
    stream.flush()
    raw.seek(0)
    return raw.read().decode("utf-8")


def _main(args: tuple[str, ...]) -> int:
    try:
        main(list(args))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def _main_off_the_loop(args: tuple[str, ...]) -> int:
    """``main`` runs its own event loop: from inside a running one (an async test) it runs in a
    thread of its own, while the test's loop waits. A chat turn sets a signal handler, which
    only the main thread may: a test that chats is not async."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _main(args)
    codes: list[int] = []
    failures: list[BaseException] = []

    def target() -> None:
        try:
            codes.append(_main(args))
        except BaseException as exc:  # handed to the test as it is
            failures.append(exc)

    worker = threading.Thread(target=target, name="agentsession-cli")
    worker.start()
    worker.join()
    if failures:
        raise failures[0]
    return codes[0]


def _invoke(
    cwd: Path, args: tuple[str, ...], stdin: str, env: dict[str, str]
) -> tuple[int, str, str]:
    # Files, not memory: a child the command line starts (an MCP server) inherits standard
    # error by its descriptor, as from a process whose streams are pipes.
    with (
        tempfile.TemporaryFile() as raw_out,
        tempfile.TemporaryFile() as raw_err,
        _stream(tempfile.TemporaryFile()) as given,
        _stream(raw_out) as out,
        _stream(raw_err, "backslashreplace", line_buffering=True) as err,
    ):
        given.write(stdin)
        given.flush()
        given.seek(0)
        saved = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = given, out, err
        try:
            with _environment(cwd, env):
                code = _main_off_the_loop(args)
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
        return code, _read(out, raw_out), _read(err, raw_err)


def run_cli(cwd: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> Outcome:
    """``agentsession ARGS`` in this process; stdin, stdout and stderr are pipes (no terminal).

    Keys of the vendors and the CLI's own variables are unset unless ``env`` sets them; the
    configuration and data folders are in ``cwd``.
    """
    own = {"XDG_CONFIG_HOME": str(cwd / ".config"), "XDG_DATA_HOME": str(cwd / ".data")}
    code, out, err = _invoke(cwd, args, stdin, own | (env or {}))
    return Outcome(code, out, err)


def _as_subprocess_reads(text: str) -> str:
    # ``subprocess.run(text=True)`` reads with universal newlines.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def cli_here(cwd: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> Outcome:
    """What ``cli_helpers.cli`` gives for the same call, without starting a process.

    The same environment (the data folder stays the one the suite set; the configuration folder
    is in ``cwd``) and the same reading of the output.
    """
    own = {"XDG_CONFIG_HOME": str(cwd / ".config")}
    code, out, err = _invoke(cwd, args, stdin, own | (env or {}))
    return Outcome(code, _as_subprocess_reads(out), _as_subprocess_reads(err))
