"""The in-process command line leaves the test process as it found it, and reads like a pipe."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from .cli_helpers import session_id_of
from .cli_inprocess import cli_here, run_cli


def snapshot() -> tuple[object, ...]:
    root = logging.getLogger()
    return (
        dict(os.environ),
        Path.cwd(),
        list(root.handlers),
        root.level,
        (sys.stdin, sys.stdout, sys.stderr),
    )


def test_nothing_the_command_line_changes_outlives_it(tmp_path: Path) -> None:
    before = snapshot()
    db = tmp_path / "s.db"
    made = cli_here(tmp_path, "run", "one two", env={"AGENTSESSION_DB": str(db)})
    assert made.code == 0, made.err
    assert db.is_file()  # the variable reached the command line...
    assert snapshot() == before  # ...and is gone, with the folder, handlers and streams
    refused = run_cli(tmp_path, "--db", str(db), "no-such-command")
    assert refused.code == 2 and refused.out == ""
    assert snapshot() == before


async def test_from_an_async_test_it_runs_beside_the_loop(tmp_path: Path) -> None:
    before = snapshot()
    listed = cli_here(tmp_path, "--db", str(tmp_path / "none.db"), "sessions")
    assert listed.code == 0 and "no sessions yet" in listed.err
    assert snapshot() == before


def test_export_writes_bytes_to_standard_output_as_to_a_pipe(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    made = cli_here(tmp_path, "--db", str(db), "run", "caf\u00e9 \u2603")
    assert made.code == 0, made.err
    exported = cli_here(tmp_path, "--db", str(db), "export", session_id_of(made))
    assert exported.code == 0, exported.err
    assert "caf\u00e9 \u2603" in exported.out  # bytes through .buffer, read back as UTF-8
