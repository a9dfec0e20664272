"""``import_session``: another tool's session (or our own session file) stored as a new session.

The format is told, or found by content: a folder, a session file under ``session/`` or a SQLite
database is OpenCode's storage; a JSON Lines file is recognised by its first readable record
(our session header ``{"kind": "session"}``, pi's ``{"type": "session"}``, Codex's
``{"type", "payload"}`` lines or its legacy flat header, Claude Code's ``uuid``/``sessionId``
records). The whole source is read and mapped first (``Draft``), then stored in one
``create_session`` transaction: a source that cannot be read creates nothing.

An import is data, never authority (``engine.imports``): the session gets a fresh id, starts at
the importer's default preset with no remembered approvals, and its title is cleaned; tool
results are bounded and every line is read within ``max_line_bytes``.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from ..config import Config
from ..engine.imports import admit_import
from ..errors import SessionFileError, UsageError
from ..log import AssistantEntry, ToolResultEntry, UserEntry, now
from ..store.base import SessionInfo, Store
from ..store.session_file import CURRENT_VERSION, SessionFile, parse_session_file
from .claude_code import looks_like as looks_like_claude_code
from .claude_code import read_claude_code
from .codex import looks_like as looks_like_codex
from .codex import read_codex
from .draft import Draft, ImportReport
from .lines import read_lines
from .opencode import is_storage, read_opencode
from .pi import looks_like as looks_like_pi
from .pi import read_pi

__all__ = ["FORMATS", "ImportFormat", "detect_format", "import_session"]

ImportFormat = Literal["auto", "agentsession", "claude-code", "codex", "opencode", "pi"]
#: The formats ``import_session`` reads, besides ``"auto"``.
FORMATS: tuple[str, ...] = ("agentsession", "claude-code", "codex", "opencode", "pi")
_Reader = Callable[[Path, Draft, int], None]
_READERS: dict[str, _Reader] = {
    "claude-code": read_claude_code,
    "codex": read_codex,
    "pi": read_pi,
}
_PROBE_LINES = 20


def detect_format(path: Path, max_line_bytes: int = 16 * 1024 * 1024) -> str:
    """The format of the session at ``path``, from its content; ``SessionFileError`` if none."""
    if not path.exists():
        raise SessionFileError("no such file or folder", path=str(path))
    if is_storage(path):
        return "opencode"
    if path.is_dir():
        raise SessionFileError("a folder, but not OpenCode storage", path=str(path))
    for number, line in enumerate(read_lines(path, max_line_bytes)):
        if number >= _PROBE_LINES:
            break
        if line.value is None:
            continue
        found = _format_of(line.value)
        if found:
            return found
    raise SessionFileError(
        "not a session this package can import (agentsession, claude-code, codex, opencode, pi)",
        path=str(path),
    )


def _format_of(first: dict[str, object]) -> str:
    if first.get("kind") == "session":
        return "agentsession"
    if looks_like_pi(first):
        return "pi"
    if looks_like_codex(first):
        return "codex"
    if looks_like_claude_code(first):
        return "claude-code"
    return ""


async def import_session(
    store: Store,
    path: str | os.PathLike[str],
    *,
    format: ImportFormat | str = "auto",
    config: Config | None = None,
    session: str | None = None,
) -> ImportReport:
    """Store the session at ``path`` as a new session of ``store``; what it mapped and skipped.

    Args:
        store: The store the new session goes to.
        path: The source: a session file, or an OpenCode storage folder or database.
        format: ``"auto"`` (found by content), ``"agentsession"``, ``"claude-code"``,
            ``"codex"``, ``"opencode"`` or ``"pi"``.
        config: The default preset, the line limit and the tool-result bound (``Config()``'s
            when not given).
        session: Which session of an OpenCode database holding several.

    Raises:
        UsageError: ``format`` is not one of the above.
        SessionFileError: The source cannot be imported; nothing is stored then.
    """
    config = config or Config()
    source = Path(path)
    if format != "auto" and format not in FORMATS:
        raise UsageError(f"unknown import format {format!r}; known: {', '.join(FORMATS)}")
    found = (
        format
        if format != "auto"
        else await asyncio.to_thread(detect_format, source, config.max_import_line_bytes)
    )
    if found == "agentsession":
        parsed, report = await asyncio.to_thread(_own, source, config)
    else:
        parsed, report = await asyncio.to_thread(_foreign, source, found, config, session)
    await store.create_session(parsed.info, parsed.entries)
    return report


def _own(path: Path, config: Config) -> tuple[SessionFile, ImportReport]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionFileError(f"cannot read session file: {exc}", path=str(path)) from exc
    parsed = parse_session_file(data, path=str(path), max_line_bytes=config.max_import_line_bytes)
    parsed = admit_import(parsed, config.permission_preset, path=str(path))
    entries = parsed.entries
    report = ImportReport(
        session_id=parsed.info.id,
        format="agentsession",
        messages=sum(isinstance(e, UserEntry | AssistantEntry) for e in entries),
        tool_calls=sum(len(e.tool_calls) for e in entries if isinstance(e, AssistantEntry)),
        tool_results=sum(isinstance(e, ToolResultEntry) for e in entries),
        title=parsed.info.title,
        source_id=parsed.info.id,
    )
    return parsed, report


def _foreign(
    path: Path, found: str, config: Config, session: str | None
) -> tuple[SessionFile, ImportReport]:
    draft = Draft(found, result_limit=config.max_tool_result_chars)
    if found == "opencode":
        read_opencode(path, draft, config.max_import_line_bytes, session)
    else:
        _READERS[found](path, draft, config.max_import_line_bytes)
    entries = draft.entries()
    if not any(isinstance(e, UserEntry | AssistantEntry) for e in entries):
        raise SessionFileError(f"no conversation found in this {found} session", path=str(path))
    stamp = now()
    info = SessionInfo(
        id=uuid.uuid4().hex,
        created_at=draft.created_at or stamp,
        updated_at=draft.updated_at or draft.created_at or stamp,
        title=draft.title,
        project_dir=draft.project_dir,
    )
    parsed = admit_import(
        SessionFile(info, tuple(entries), CURRENT_VERSION), config.permission_preset, path=str(path)
    )
    report = draft.report(parsed.info.id)
    return parsed, report
