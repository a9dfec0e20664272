"""A tool call in its own form, for people: ``$ command``, a unified diff, a path, else JSON.

``run_command`` is shown as the shell line it runs, ``write_file`` as a unified diff of what it
writes (against the file as it is now when the folder is known, else against nothing: a stored
call cannot know the file it replaced), ``read_file`` and ``list_files`` as the path they read,
and every other call as its arguments in JSON — never a Python repr. A ``call_tool`` call (a
loaded deferred tool called through the stable proxy) is shown as the inner tool's call. The
chat, ``show``, piped output and the report all use this one rendering.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..providers._lowering import CALL_TOOL_NAME

__all__ = ["call_line", "call_text", "command_prefix"]

_DIFF_LINES = 400


def _arguments_json(arguments: Mapping[str, Any]) -> str:
    return json.dumps(dict(arguments), ensure_ascii=False, sort_keys=False)


def _string(arguments: Mapping[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    return value if isinstance(value, str) else None


def call_line(name: str, arguments: Mapping[str, Any]) -> str:
    """The call on one line: ``$ ls -la``, ``write_file notes.md (+12 lines)``, ``name {json}``."""
    inner = _inner(name, arguments)
    if inner is not None:
        return call_line(*inner)
    command = _string(arguments, "command")
    path = _string(arguments, "path")
    if name == "run_command" and command is not None and set(arguments) <= {"command", "timeout"}:
        return "$ " + " ".join(command.split("\n"))
    if name in ("read_file", "list_files") and path is not None:
        extra = {k: v for k, v in arguments.items() if k != "path"}
        return f"{name} {path}" + (f" {_arguments_json(extra)}" if extra else "")
    content = _string(arguments, "content")
    if name == "write_file" and path is not None and content is not None:
        count = len(content.splitlines())
        return f"write_file {path} ({count} line{'s' if count != 1 else ''})"
    return f"{name} {_arguments_json(arguments)}"


def _inner(name: str, arguments: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The tool and arguments a well-formed ``call_tool`` call runs, else ``None``."""
    inner, given = arguments.get("name"), arguments.get("arguments")
    if name != CALL_TOOL_NAME or not isinstance(inner, str) or not isinstance(given, dict):
        return None
    return inner, given


def call_text(name: str, arguments: Mapping[str, Any], project: Path | None = None) -> str:
    """The call in full: the line, and for ``write_file`` the unified diff it makes."""
    inner = _inner(name, arguments)
    if inner is not None:
        return call_text(*inner, project)
    path = _string(arguments, "path")
    content = _string(arguments, "content")
    if name != "write_file" or path is None or content is None:
        return call_line(name, arguments)
    before = ""
    label = "/dev/null"
    if project is not None:
        target = Path(path) if Path(path).is_absolute() else project / path
        try:
            before = target.read_text(encoding="utf-8")
            label = f"a/{path}"
        except (OSError, UnicodeDecodeError):
            before = ""
    diff = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            content.splitlines(keepends=True),
            fromfile=label,
            tofile=f"b/{path}",
        )
    )
    lines = [line if line.endswith("\n") else line + "\n" for line in diff]
    if len(lines) > _DIFF_LINES:
        more = len(lines) - _DIFF_LINES
        lines = [*lines[:_DIFF_LINES], f"… {more} more diff lines\n"]
    body = "".join(lines).rstrip("\n") or "(no change)"
    return f"{call_line(name, arguments)}\n{body}"


def command_prefix(command: str) -> str:
    """The prefix "always" approves for ``command``: its program and first word.

    ``git status`` for ``git status --short``; the program alone when the next word is an
    option or a path.
    """
    words = command.strip().split()
    if not words:
        return ""
    if len(words) > 1 and words[1].replace("-", "").isalnum() and not words[1].startswith("-"):
        return f"{words[0]} {words[1]}"
    return words[0]
