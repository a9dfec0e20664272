"""``--latest``: where each tool keeps a folder's sessions, as the tools themselves name them.

The expected names were taken from the tools' own code (Claude Code's folder hash, OpenCode's
channel databases and sub-agent sessions, pi's folder name), not from this package's.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from agentsession.errors import UsageError
from agentsession.portability.locations import claude_code_slug, latest_session


def test_claude_code_names_a_long_folder_by_its_cut_name_and_a_hash() -> None:
    short = "/home/user/my project.v2"
    assert claude_code_slug(short) == "-home-user-my-project-v2"
    long = "/home/user/" + "x" * 250
    slug = claude_code_slug(long)
    # Claude Code's own function gives this name for this path
    assert slug == ("-home-user-" + "x" * 189) + "-uvapx9"
    assert claude_code_slug("/tmp/é😀" + "y" * 300).endswith("-b9ozi3")


def test_claude_code_latest_finds_a_long_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / ("deep" * 60)
    home = tmp_path / "claude"
    sessions = home / "projects" / claude_code_slug(str(folder))
    sessions.mkdir(parents=True)
    (sessions / "agent-1.jsonl").write_text("{}\n")
    (sessions / "abc.jsonl").write_text("{}\n")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    assert latest_session("claude-code", folder).path.name == "abc.jsonl"


def _opencode_db(path: Path, rows: list[tuple[str, str, str | None, int]]) -> None:
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE session (id TEXT, directory TEXT, parent_id TEXT, time_updated INT)"
        )
        db.executemany("INSERT INTO session VALUES (?, ?, ?, ?)", rows)


def test_opencode_latest_skips_sub_agent_tasks_and_reads_every_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    (data / "opencode").mkdir(parents=True)
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    _opencode_db(
        data / "opencode" / "opencode.db",
        [("ses_a", "/p", None, 5), ("ses_task", "/p", "ses_a", 9), ("ses_other", "/q", None, 99)],
    )
    found = latest_session("opencode", Path("/p"))
    assert (found.path.name, found.session) == ("opencode.db", "ses_a")
    _opencode_db(data / "opencode" / "opencode-dev.db", [("ses_dev", "/p", None, 7)])
    assert latest_session("opencode", Path("/p")).session == "ses_dev"
    # OPENCODE_DB names the one database to read, as OpenCode itself does
    monkeypatch.setenv("OPENCODE_DB", "opencode.db")
    assert latest_session("opencode", Path("/p")).session == "ses_a"


def test_opencode_json_layout_skips_sub_agent_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "opencode" / "storage" / "session" / "prj"
    store.mkdir(parents=True)
    for name, parent, updated in (("ses_a", None, 1), ("ses_b", "ses_a", 2)):
        body = {"id": name, "directory": "/p", "time": {"updated": updated}}
        if parent:
            body["parentID"] = parent
        (store / f"{name}.json").write_text(json.dumps(body))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    assert latest_session("opencode", Path("/p")).path.name == "ses_a.json"


def test_pi_drops_only_the_first_separator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "pi"
    folder = "//srv/x:y"  # pi strips one leading separator, then maps / \\ : to -
    (home / "sessions" / "---srv-x-y--").mkdir(parents=True)
    (home / "sessions" / "---srv-x-y--" / "s.jsonl").write_text("{}\n")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home))
    assert latest_session("pi", Path(folder)).path.name == "s.jsonl"
    with pytest.raises(UsageError, match="keeps no session"):
        latest_session("pi", Path(os.sep + "elsewhere"))
