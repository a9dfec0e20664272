"""``serve --inspect-workers N``: the processes that inspect long sessions beside the server.

The option parses with its default of one, reaches the app (a long session's export is read
by a child of the server process with it, by none with 0), and a negative number is refused
before anything is created.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.cli.app import build_parser
from agentsession.log import AssistantEntry, LogEntry, UserEntry, now
from agentsession.server.inspect_pool import DEFAULT_SMALLEST
from agentsession.store import SessionInfo

from .harness import serve_cli


def test_the_option_is_one_unless_given_and_takes_zero() -> None:
    parser = build_parser()
    assert parser.parse_args(["serve"]).inspect_workers == 1
    assert parser.parse_args(["serve", "--inspect-workers", "0"]).inspect_workers == 0
    assert parser.parse_args(["serve", "--inspect-workers", "3"]).inspect_workers == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--inspect-workers", "two"])


def test_serve_refuses_a_negative_number_of_inspect_workers(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "agentsession", "--db", str(tmp_path / "x.db")]
    done = subprocess.run(
        [*command, "--model", "scripted:demo", "serve", "--port", "1", "--inspect-workers", "-1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0 and not (tmp_path / "x.db").exists()
    assert "--inspect-workers must be 0 or more" in done.stderr


async def _long_session(db: Path, tmp_path: Path) -> str:
    """A session of ``DEFAULT_SMALLEST`` entries, stored as a run of questions and answers."""
    store = ags.SQLiteStore(db)
    stamp = now()
    await store.create_session(SessionInfo("long", stamp, stamp, project_dir=str(tmp_path)))
    log: list[LogEntry] = []
    for n in range(DEFAULT_SMALLEST // 2):
        log += [UserEntry(f"question {n}", timestamp=stamp), AssistantEntry(f"answer {n}")]
    await store.append("long", 0, log)
    await store.close()
    return "long"


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started that still run (Linux's own list)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="lists processes via /proc")
@pytest.mark.parametrize("workers", ["1", "0"])
def test_the_option_decides_whether_a_child_reads_a_long_session(
    tmp_path: Path, workers: str
) -> None:
    db = tmp_path / "s.db"
    session_id = asyncio.run(_long_session(db, tmp_path))
    argv = ("--db", str(db), "--model", "scripted:demo", "serve", "--inspect-workers", workers)
    with serve_cli(tmp_path, *argv) as served:
        assert _children(served.pid) == []
        export = served.client.get(f"/sessions/{session_id}/export")
        assert export.status_code == 200, export.text
        assert export.text.count("question") == DEFAULT_SMALLEST // 2
        started = _children(served.pid)
    assert (started != []) == (workers == "1")
