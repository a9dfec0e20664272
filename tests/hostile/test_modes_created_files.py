"""Files the package creates are 0600 in folders it creates 0700, whatever the umask.

Each check runs under a permissive umask (0o000: everything the OS would allow) and a strict
odd one (0o277), in a fresh process so the umask is the process's own.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..cli_helpers import SCRIPT
from ..cli_terminal import Terminal, needs_tmux

UMASKS = [0o000, 0o022, 0o277]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def under_umask(umask: int, code: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    script = f"import os\nos.umask({umask})\n" + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("umask", UMASKS)
def test_a_new_database_its_wal_and_its_folders_are_private(tmp_path: Path, umask: int) -> None:
    db = tmp_path / "new" / "deeper" / "sessions.db"
    under_umask(
        umask,
        f"""
        import asyncio, agentsession as ags
        async def main():
            async with ags.Runtime(store=ags.SQLiteStore({str(db)!r}),
                                   model=ags.ScriptedModel(["hi"])) as runtime:
                session = await runtime.create_session()
                await session.prompt("hello")
                await session.export({str(tmp_path / "export.jsonl")!r})
                import pathlib
                names = sorted(p.name for p in pathlib.Path({str(db.parent)!r}).iterdir())
                assert "sessions.db-wal" in names, names
                for p in pathlib.Path({str(db.parent)!r}).iterdir():
                    print(p.name, oct(p.stat().st_mode & 0o777))
                    assert p.stat().st_mode & 0o777 == 0o600, p
        asyncio.run(main())
        """,
        tmp_path,
    )
    assert mode(db) == 0o600
    assert mode(db.parent) == 0o700 and mode(db.parent.parent) == 0o700
    assert mode(tmp_path / "export.jsonl") == 0o600


@pytest.mark.parametrize("umask", UMASKS)
def test_reports_and_trust_records_are_private(tmp_path: Path, umask: int) -> None:
    assert SCRIPT is not None
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "true"}}}))
    db = tmp_path / "s.db"
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "AGENTSESSION_DB": str(db)}
    under_umask(
        umask,
        f"""
        import subprocess
        for args in (["run", "hello"], ["report", "--all", "-o", "reports"],
                     ["trust", "."]):
            done = subprocess.run([{SCRIPT!r}, *args], capture_output=True, text=True)
            assert done.returncode == 0, (args, done.stderr)
        """,
        project,
        env,
    )
    reports = project / "reports"  # the folder report --all makes (its parent must exist)
    assert mode(reports) == 0o700
    written = list(reports.iterdir())
    assert len(written) == 2 and all(mode(p) == 0o600 for p in written)
    record = tmp_path / "config" / "agentsession" / "trusted_projects.json"
    assert mode(record) == 0o600 and mode(record.parent) == 0o700
    assert mode(db) == 0o600


def test_an_existing_folder_keeps_its_mode(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o755)
    under_umask(
        0o022,
        f"""
        import asyncio, agentsession as ags
        asyncio.run(ags.SQLiteStore({str(folder / "s.db")!r}).close())
        """,
        tmp_path,
    )
    assert mode(folder) == 0o755  # the user's folder, not ours to change
    assert mode(folder / "s.db") == 0o600


@needs_tmux
def test_the_chat_history_is_private(tmp_path: Path) -> None:
    env = {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONIOENCODING": "utf-8",
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
    }
    db = tmp_path / "chat.db"
    command = [sys.executable, "-m", "agentsession", "--db", str(db), "chat"]
    term = Terminal(["sh", "-c", f"umask 000 && exec {shlex.join(command)}"], env, tmp_path)
    try:
        term.wait_for("you ›")
        term.paste("count the words in a private line")
        term.keys("Enter")
        term.wait_for("you ›", count=2)
        term.keys("C-d")
        term.wait_for("[exit 0]")
    finally:
        term.close()
    history = tmp_path / "data" / "agentsession" / "chat_history"
    assert "private line" in history.read_text()
    assert mode(history) == 0o600
    assert mode(history.parent) == 0o700 and mode(history.parent.parent) == 0o700
    assert mode(db) == 0o600


@pytest.mark.parametrize("umask", UMASKS)
def test_the_chat_report_command_writes_a_private_file(tmp_path: Path, umask: int) -> None:
    report = tmp_path / "r.html"  # the chat's /report makes no folder, as report -o
    under_umask(
        umask,
        f"""
        import asyncio, pathlib, agentsession as ags
        from agentsession.cli.inspectview import write_report  # what the chat's /report runs
        async def main():
            async with ags.Runtime(store=ags.SQLiteStore({str(tmp_path / "s.db")!r}),
                                   model=ags.ScriptedModel(["hi"])) as runtime:
                session = await runtime.create_session()
                await session.prompt("hello")
                await write_report(session, pathlib.Path({str(report)!r}))
        asyncio.run(main())
        """,
        tmp_path,
    )
    assert "hello" in report.read_text(encoding="utf-8")
    assert mode(report) == 0o600
