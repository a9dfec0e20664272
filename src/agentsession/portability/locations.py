"""Where each tool keeps its sessions, and the newest one it keeps for a folder (``--latest``).

- Claude Code: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, then ``projects/<folder>/<id>.jsonl``,
  the folder being the working directory with every character but ASCII letters and digits
  made ``-`` (side files of sub-agents, ``agent-*.jsonl``, are not sessions of their own);
- Codex: ``$CODEX_HOME`` or ``~/.codex``, then ``sessions/YYYY/MM/DD/rollout-*.jsonl``, the
  folder named by the ``cwd`` of each file's ``session_meta`` line;
- OpenCode: ``$XDG_DATA_HOME/opencode`` (``~/.local/share/opencode``): ``opencode.db``, else
  ``storage/session/*/*.json``, the folder named by each session's ``directory``;
- pi: ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``, then ``sessions/--<folder>--/*.jsonl``, the
  folder being the working directory without its leading separator, separators made ``-``.

Newest is by the file's modification time (for OpenCode: the session's own update time).
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .lines import as_dict, as_int, as_str, read_json, read_lines

__all__ = ["TOOLS", "Located", "latest_session"]

TOOLS = ("claude-code", "codex", "opencode", "pi")
_PROBE = 64 * 1024 * 1024  # a first line longer than this names no folder


@dataclass(frozen=True)
class Located:
    """A tool's session: the path to import, and the session to take from a database."""

    path: Path
    session: str | None = None


def _home(variable: str, *default: str) -> Path:
    told = os.environ.get(variable)
    return Path(told) if told else Path.home().joinpath(*default)


def _newest(paths: list[Path]) -> list[Path]:
    return sorted(paths, key=lambda p: p.stat().st_mtime, reverse=True)


def _claude_code(folder: Path) -> Located | None:
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(folder))
    root = _home("CLAUDE_CONFIG_DIR", ".claude") / "projects" / slug
    files = [p for p in root.glob("*.jsonl") if not p.name.startswith("agent-")]
    return Located(_newest(files)[0]) if files else None


def _codex(folder: Path) -> Located | None:
    root = _home("CODEX_HOME", ".codex") / "sessions"
    for path in _newest(list(root.glob("**/rollout-*.jsonl"))):
        for line in read_lines(path, _PROBE):
            meta = as_dict((line.value or {}).get("payload"))
            if as_str(meta.get("cwd")) == str(folder):
                return Located(path)
            break  # the first line is the session's meta
    return None


def _opencode(folder: Path) -> Located | None:
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "opencode"
    database = data / "opencode.db"
    if database.is_file():
        try:
            with sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True) as db:
                row = db.execute(
                    "SELECT id FROM session WHERE directory = ? ORDER BY time_updated DESC LIMIT 1",
                    (str(folder),),
                ).fetchone()
        except sqlite3.Error:
            row = None
        if row is not None:
            return Located(database, str(row[0]))
    found: list[tuple[int, Path]] = []
    for path in (data / "storage" / "session").glob("*/*.json"):
        session = read_json(path, _PROBE) or {}
        if as_str(session.get("directory")) == str(folder):
            found.append((as_int(as_dict(session.get("time")).get("updated")), path))
    return Located(max(found)[1]) if found else None


def _pi(folder: Path) -> Located | None:
    slug = "--" + re.sub(r"[/\\:]", "-", str(folder).lstrip("/\\")) + "--"
    root = _home("PI_CODING_AGENT_DIR", ".pi", "agent") / "sessions" / slug
    files = list(root.glob("*.jsonl"))
    return Located(_newest(files)[0]) if files else None


def latest_session(tool: str, folder: Path) -> Located:
    """The newest session ``tool`` keeps for ``folder``; ``UsageError`` when it keeps none."""
    finders = {"claude-code": _claude_code, "codex": _codex, "opencode": _opencode, "pi": _pi}
    finder = finders.get(tool)
    if finder is None:
        raise UsageError(f"unknown tool {tool!r}; known: {', '.join(TOOLS)}")
    found = finder(folder)
    if found is None:
        raise UsageError(f"{tool} keeps no session for {folder} in its default location")
    return found
