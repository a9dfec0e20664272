"""Where each tool keeps its sessions, and the newest one it keeps for a folder (``--latest``).

- Claude Code: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, then ``projects/<folder>/<id>.jsonl``,
  the folder being the working directory with every character but ASCII letters and digits
  made ``-``, cut at 200 characters and followed by ``-`` and a hash of the whole path when
  longer (side files of sub-agents, ``agent-*.jsonl``, are not sessions of their own);
- Codex: ``$CODEX_HOME`` or ``~/.codex``, then ``sessions/YYYY/MM/DD/rollout-*.jsonl``, the
  folder named by the ``cwd`` of each file's ``session_meta`` line;
- OpenCode: ``$XDG_DATA_HOME/opencode`` (``~/.local/share/opencode``): the database
  ``$OPENCODE_DB`` names (a path, or a name in that folder), else ``opencode.db`` (the stable
  channels' file; other channels write ``opencode-<channel>.db``, looked in too), else
  ``storage/session/*/*.json``, the folder named by each session's ``directory``; a session
  with a parent is a sub-agent's task, not one the user continues;
- pi: ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``, then ``sessions/--<folder>--/*.jsonl``, the
  folder being the working directory without its first separator, separators made ``-``.

Newest is by the file's modification time (for OpenCode: the session's own update time).
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

from .._frozen import frozen
from ..errors import UsageError
from .lines import as_dict, as_int, as_str, read_json, read_lines

__all__ = ["TOOLS", "Located", "claude_code_slug", "latest_session"]

TOOLS = ("claude-code", "codex", "opencode", "pi")
_PROBE = 64 * 1024 * 1024  # a first line longer than this names no folder


@frozen
class Located:
    """A tool's session: the path to import, and the session to take from a database."""

    path: Path
    session: str | None = None


def _home(variable: str, *default: str) -> Path:
    told = os.environ.get(variable)
    return Path(told) if told else Path.home().joinpath(*default)


def _newest(paths: list[Path]) -> list[Path]:
    return sorted(paths, key=lambda p: p.stat().st_mtime, reverse=True)


_CLAUDE_SLUG = 200  # Claude Code cuts a longer folder name here and adds a hash


def _claude_hash(text: str) -> str:
    """The hash Claude Code appends to a cut folder name.

    A 32-bit string hash over UTF-16 code units (``h * 31 + unit``, wrapping), its absolute
    value in base 36.
    """
    units = text.encode("utf-16-le")
    value = 0
    for index in range(0, len(units), 2):
        value = (value * 31 + int.from_bytes(units[index : index + 2], "little")) & 0xFFFFFFFF
    value = abs(value - (1 << 32) if value >= 1 << 31 else value)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            return out


def claude_code_slug(folder: str) -> str:
    """The name Claude Code gives ``folder``'s session directory under ``projects``."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", folder)
    if len(slug) <= _CLAUDE_SLUG:
        return slug
    return f"{slug[:_CLAUDE_SLUG]}-{_claude_hash(folder)}"


def _claude_code(folder: Path) -> Located | None:
    root = _home("CLAUDE_CONFIG_DIR", ".claude") / "projects" / claude_code_slug(str(folder))
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


def _opencode_databases(data: Path) -> list[Path]:
    told = os.environ.get("OPENCODE_DB")
    if told:
        return [Path(told) if Path(told).is_absolute() else data / told]
    channels = [p for p in data.glob("opencode-*.db") if p.is_file()]
    return [data / "opencode.db", *_newest(channels)]


def _opencode_in(database: Path, folder: Path) -> tuple[int, str] | None:
    """The newest top-level session of ``folder`` in one database: (updated, id)."""
    try:
        with sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True) as db:
            columns = {str(c[1]) for c in db.execute("PRAGMA table_info(session)")}
            # Versions before sub-agent tasks had no parent column.
            top = " AND parent_id IS NULL" if "parent_id" in columns else ""
            row = db.execute(
                f"SELECT time_updated, id FROM session WHERE directory = ?{top}"
                " ORDER BY time_updated DESC LIMIT 1",
                (str(folder),),
            ).fetchone()
    except sqlite3.Error:
        return None
    return (as_int(row[0]), str(row[1])) if row is not None else None


def _opencode(folder: Path) -> Located | None:
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "opencode"
    newest: tuple[int, str, Path] | None = None
    for database in _opencode_databases(data):
        found = _opencode_in(database, folder) if database.is_file() else None
        if found is not None and (newest is None or found[0] > newest[0]):
            newest = (*found, database)
    if newest is not None:
        return Located(newest[2], newest[1])
    files: list[tuple[int, Path]] = []
    for path in (data / "storage" / "session").glob("*/*.json"):
        session = read_json(path, _PROBE) or {}
        if as_str(session.get("directory")) == str(folder) and not session.get("parentID"):
            files.append((as_int(as_dict(session.get("time")).get("updated")), path))
    return Located(max(files)[1]) if files else None


def _pi(folder: Path) -> Located | None:
    slug = "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", str(folder))) + "--"
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
