"""Helpers shared by the session scenario tests: a project folder, log kinds, update messages."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import agentsession as ags


def make_project(tmp_path: Path, name: str = "project") -> Path:
    """A folder that is its own repository root (so no instruction file above it is found)."""
    project = tmp_path / name
    (project / ".git").mkdir(parents=True)
    return project


async def kinds(session: ags.Session) -> list[str]:
    """The kinds of every stored entry of ``session``, in seq order."""
    return [r.entry.kind for r in await session.log()]


def text_of(message: ags.Message) -> str:
    """The text of one neutral message (text parts joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, ags.TextPart))


def updates(request: ags.Request) -> list[str]:
    """The texts of the mid-conversation system messages ``request`` carries."""
    return [text_of(m) for m in request.messages if isinstance(m, ags.SystemMessage)]


def new_updates(model: ags.ScriptedModel, index: int) -> list[str]:
    """Update messages request ``index`` carries that request ``index - 1`` did not."""
    before = updates(model.requests[index - 1]) if index > 0 else []
    return updates(model.requests[index])[len(before) :]


def tool_results(request: ags.Request) -> list[ags.ToolResultMessage]:
    """The tool results ``request`` carries, in order."""
    return [m for m in request.messages if isinstance(m, ags.ToolResultMessage)]


def wire(request: ags.Request) -> dict[str, Any]:
    """The Anthropic Messages body of ``request``, every part as canonical JSON text."""
    body = ags.lower(request, "anthropic-messages")
    return {
        "system": json.dumps(body.get("system"), sort_keys=True),
        "tools": json.dumps(body.get("tools"), sort_keys=True),
        "messages": [json.dumps(_unmarked(m), sort_keys=True) for m in body["messages"]],
    }


def _unmarked(message: Any) -> Any:
    """``message`` without prompt-cache markers (they move to the newest message by design)."""
    if isinstance(message, dict):
        return {k: _unmarked(v) for k, v in message.items() if k != "cache_control"}
    if isinstance(message, list):
        return [_unmarked(v) for v in message]
    return message


def assert_prefix_stable(model: ags.ScriptedModel) -> None:
    """Every request's system, tools and messages are the next request's prefix, byte for byte.

    Compared on the Anthropic Messages body, whose profile wraps updates into the neighbouring
    user turn; only the prompt-cache markers are left out (they move to the newest message).
    """
    bodies = [wire(r) for r in model.requests]
    for earlier, later in itertools.pairwise(bodies):
        assert later["system"] == earlier["system"]
        assert later["tools"] == earlier["tools"]
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry below ``folder`` (symlinks not followed): file bytes, link targets, folders."""
    found: dict[str, bytes | str] = {}
    for directory, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(directory) / name
            key = str(path.relative_to(folder))
            if path.is_symlink():
                found[key] = "link -> " + os.readlink(path)
            elif path.is_dir():
                found[key] = "folder"
            else:
                found[key] = path.read_bytes()
    return found
