"""Session files: one session as JSON Lines, to move it between stores and machines.

Line 1 is the header ``{"kind": "session", "version": N, "id": …, …metadata}``; every further
line is one log entry ``{…, "kind": …}`` in ``seq`` order. Text is UTF-8; every line ends with
a line feed and lines are split on line feeds only (JSON text may hold U+2028).

- **Version 3** (current) writes what the store holds: each entry line is the entry's stored
  JSON exactly as ``log.dump_entry`` writes it (an epoch's baseline texts inline, where a store
  keeps them once per session), and the header's ``entry_versions`` names the stored version of
  every entry kind, so an older line is upgraded by ``log.load_entry`` like an old database row,
  and a new entry kind needs no new file version. Export → import into any store → export gives
  the same bytes.
- **Version 2** is the legacy form: ``{"kind": "user" | "assistant", "content": "…"}`` message
  lines (``timestamp`` optional) and ``{"kind": "runtime_context", "user_turn": 0, "content":
  "…", "timestamp": "…"}`` snapshot lines without ``placement`` or ``skills``. They import as
  ``UserEntry`` / ``AssistantEntry`` / ``RuntimeContextSnapshot(placement=None, skills=())`` and
  the session remembers it came from version 2 (``SessionInfo.file_version``): while its log
  still holds only what version 2 can say, it exports back as version 2, line for line;
  once it has grown past that, it exports as version 3 (its snapshots still without placement).

Importing reads and checks the whole file first and then creates the session in one
transaction: a corrupt line, an unknown kind, a newer version, a line longer than the limit
(``DEFAULT_MAX_LINE_BYTES`` unless told otherwise) or JSON nested deeper than
``MAX_JSON_DEPTH`` is a ``SessionFileError`` naming the line, and nothing is imported. What the
importing runtime makes of the file's authority (presets, approvals) is its ``admit`` step.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._files import write_private
from .._frozen import frozen
from ..errors import CorruptEntryError, SessionFileError, StoreError
from ..log import (
    VERSIONS,
    AssistantEntry,
    ContextEpoch,
    LogEntry,
    RuntimeContextSnapshot,
    UserEntry,
    dump_entry,
    load_entry,
)
from .base import SessionInfo, Store

__all__ = [
    "CURRENT_VERSION",
    "DEFAULT_MAX_LINE_BYTES",
    "LEGACY_VERSION",
    "MAX_JSON_DEPTH",
    "SessionFile",
    "export_session",
    "import_session",
    "parse_session_file",
    "render_session_file",
]

#: The version ``export_session`` writes.
CURRENT_VERSION = 3
#: The legacy version that still imports (and exports back unchanged).
LEGACY_VERSION = 2
#: Entries read from the store per page while exporting.
_PAGE = 1000
#: The longest line an import reads unless told otherwise (a file is data from anywhere).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
#: The deepest nesting of arrays and objects a line may have.
MAX_JSON_DEPTH = 100
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")

_V3_HEADER = {"kind", "version", "id", "title", "created_at", "updated_at", "project_dir"}
_V2_HEADER_OPTIONAL = ("title", "created_at", "updated_at", "project_dir")


@frozen
class SessionFile:
    """A parsed session file: the session's row, its log, and the version it was written in."""

    info: SessionInfo
    entries: tuple[LogEntry, ...]
    version: int


class _LineError(Exception):
    """A problem with one line; turned into ``SessionFileError`` with the line number."""


# -- writing ---------------------------------------------------------------------------------


def _line(value: dict[str, Any]) -> str:
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates travel as JSON escapes, like in the store
        text = json.dumps(value, ensure_ascii=True)
    return text + "\n"


def _v2_line(entry: LogEntry) -> str | None:
    """The version-2 line of ``entry``, or ``None`` when version 2 cannot say it."""
    match entry:
        case UserEntry(content=str(content), timestamp=stamp):
            line: dict[str, Any] = {"kind": "user", "content": content}
        case AssistantEntry(content=content, timestamp=stamp) if entry == AssistantEntry(
            content, timestamp=stamp
        ):
            line = {"kind": "assistant", "content": content}
        case RuntimeContextSnapshot(placement=None, skills=()):
            return _line(
                {
                    "kind": "runtime_context",
                    "user_turn": entry.user_turn,
                    "content": entry.content,
                    "timestamp": entry.timestamp,
                }
            )
        case _:
            return None
    if stamp:
        line["timestamp"] = stamp
    return _line(line)


def _v2_header(info: SessionInfo) -> str:
    header: dict[str, Any] = {"kind": "session", "version": LEGACY_VERSION, "id": info.id}
    for name in _V2_HEADER_OPTIONAL:
        value = getattr(info, name)
        if value:
            header[name] = value
    return _line(header)


def _v3_header(info: SessionInfo) -> str:
    return _line(
        {
            "kind": "session",
            "version": CURRENT_VERSION,
            "id": info.id,
            "title": info.title,
            "created_at": info.created_at,
            "updated_at": info.updated_at,
            "project_dir": info.project_dir,
            "entry_versions": dict(sorted(VERSIONS.items())),
        }
    )


def render_session_file(info: SessionInfo, entries: Sequence[LogEntry]) -> str:
    """The text of the session file of ``info`` holding ``entries`` (see the module doc)."""
    if info.file_version == LEGACY_VERSION:
        legacy = [_v2_line(entry) for entry in entries]
        if all(line is not None for line in legacy):
            return _v2_header(info) + "".join(line for line in legacy if line is not None)
    return _v3_header(info) + "".join(dump_entry(entry)[2] + "\n" for entry in entries)


async def export_session(store: Store, session_id: str, path: str | os.PathLike[str]) -> int:
    """Write the session to ``path`` (replaced whole, never half-written); returns its entries.

    The file holds the log as it was when the export began: entries appended meanwhile are
    left for the next export.
    """
    info = await store.get_session(session_id)
    entries: list[LogEntry] = []
    for start in range(0, info.next_seq, _PAGE):
        page = await store.read(session_id, start, min(start + _PAGE, info.next_seq))
        entries.extend(record.entry for record in page)
    if len(entries) != info.next_seq:
        raise StoreError(
            f"session {session_id!r} changed shape while it was exported: expected"
            f" {info.next_seq} entries, read {len(entries)}"
        )
    entries = _without_unused_import_epoch(entries)
    await asyncio.to_thread(_write_atomically, Path(path), render_session_file(info, entries))
    return len(entries)


def _without_unused_import_epoch(entries: list[LogEntry]) -> list[LogEntry]:
    """The log less a trailing ``import`` epoch that no request has used yet.

    An import appends an empty epoch so the importing runtime renders its own System Context
    (``engine/imports``); until a request uses it, it is that runtime's note to itself, not part
    of the conversation. Every importer appends its own, so leaving it out of the file loses
    nothing and keeps export → import → export byte-identical.
    """
    if entries:
        last = entries[-1]
        if isinstance(last, ContextEpoch) and last.reason == "import":
            return entries[:-1]
    return entries


def _write_atomically(path: Path, text: str) -> None:
    try:
        # A transcript: for its owner's eyes only.
        write_private(path, text.encode("utf-8"), make_folder=False)
    except OSError as exc:
        raise StoreError(f"cannot write session file {path}: {exc}") from exc


# -- reading ---------------------------------------------------------------------------------


def _object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _LineError(f"not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise _LineError("not a JSON object")
    return value


def _text(value: dict[str, Any], name: str, *, optional: bool = False) -> Any:
    found = value.get(name)
    if (found is None and not optional) or not (found is None or isinstance(found, str)):
        raise _LineError(f"{name!r} must be {'text or null' if optional else 'text'}")
    return found


def _header(text: str) -> tuple[SessionInfo, int, dict[str, int]]:
    head = _object(text)
    if head.get("kind") != "session":
        raise _LineError('the first line must be the session header {"kind": "session", …}')
    version = head.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _LineError("the header has no version number")
    if version > CURRENT_VERSION:
        raise _LineError(
            f"the file has version {version}, newer than this agentsession reads"
            f" ({CURRENT_VERSION}); upgrade agentsession"
        )
    if version not in (LEGACY_VERSION, CURRENT_VERSION):
        raise _LineError(f"unknown session file version {version}")
    allowed = (
        _V3_HEADER | {"entry_versions"}
        if version == CURRENT_VERSION
        else {"kind", "version", "id", *_V2_HEADER_OPTIONAL}
    )
    if unknown := sorted(set(head) - allowed):
        raise _LineError(f"the header has unknown fields {unknown}")
    legacy = version == LEGACY_VERSION
    session_id = _text(head, "id")
    if not session_id:
        raise _LineError("the header's id is empty")
    info = SessionInfo(
        id=session_id,
        created_at=_text(head, "created_at", optional=legacy) or "",
        updated_at=_text(head, "updated_at", optional=legacy) or "",
        title=_text(head, "title", optional=True),
        project_dir=_text(head, "project_dir", optional=True),
        file_version=version,
    )
    entry_versions = head.get("entry_versions", {})
    if not isinstance(entry_versions, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in entry_versions.items()
    ):
        raise _LineError("'entry_versions' must map entry kinds to version numbers")
    return info, version, entry_versions


def _v3_entry(text: str, entry_versions: dict[str, int], seq: int) -> LogEntry:
    kind = _object(text).get("kind")
    if not isinstance(kind, str):
        raise _LineError("the entry has no kind")
    version = entry_versions.get(kind)
    if version is None:
        raise _LineError(f"entry kind {kind!r} is not listed in the header's entry_versions")
    try:
        return load_entry(kind, version, text, seq=seq)
    except CorruptEntryError as exc:
        raise _LineError(str(exc)) from exc


def _v2_entry(text: str) -> LogEntry:
    value = _object(text)
    kind = value.get("kind")
    fields = {
        "user": ({"kind", "content"}, {"timestamp"}),
        "assistant": ({"kind", "content"}, {"timestamp"}),
        "runtime_context": ({"kind", "user_turn", "content", "timestamp"}, set()),
    }.get(kind if isinstance(kind, str) else "")
    if fields is None:
        raise _LineError(f"version 2 has no entry kind {kind!r}")
    required, optional = fields
    if missing := sorted(required - set(value)):
        raise _LineError(f"the {kind!r} line is missing {missing}")
    if unknown := sorted(set(value) - required - optional):
        raise _LineError(f"the {kind!r} line has unknown fields {unknown}")
    content = _text(value, "content")
    stamp = _text(value, "timestamp", optional=True) or ""
    if kind == "user":
        return UserEntry(content, timestamp=stamp)
    if kind == "assistant":
        return AssistantEntry(content, timestamp=stamp)
    turn = value["user_turn"]
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 0:
        raise _LineError("'user_turn' must be a number from 0")
    return RuntimeContextSnapshot(turn, content, stamp, skills=(), placement=None)


def _bounded(raw: bytes, max_line_bytes: int) -> bytes:
    """``raw`` when it is within the size and nesting limits; ``_LineError`` otherwise."""
    if len(raw) > max_line_bytes:
        raise _LineError(f"the line is {len(raw)} bytes long, over the limit of {max_line_bytes}")
    depth = deepest = 0
    for bracket in _BRACKET.findall(_STRING.sub(b"", raw)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    if deepest > MAX_JSON_DEPTH:
        raise _LineError(f"the line nests {deepest} levels deep, over the limit {MAX_JSON_DEPTH}")
    return raw


def parse_session_file(
    data: bytes, *, path: str = "", max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> SessionFile:
    """Parse a whole session file; ``SessionFileError`` naming the first bad line."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise SessionFileError("the file is empty: no session header", path=path, line=1)
    number = 1
    try:
        info, version, entry_versions = _header(_decode(_bounded(lines[0], max_line_bytes)))
        entries: list[LogEntry] = []
        for number, raw in enumerate(lines[1:], start=2):
            text = _decode(_bounded(raw, max_line_bytes))
            if version == LEGACY_VERSION:
                entries.append(_v2_entry(text))
            else:
                entries.append(_v3_entry(text, entry_versions, number - 2))
    except _LineError as exc:
        raise SessionFileError(str(exc), path=path, line=number) from exc.__cause__
    return SessionFile(info, tuple(entries), version)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _LineError(f"not UTF-8 text: {exc}") from exc


async def import_session(
    store: Store,
    path: str | os.PathLike[str],
    *,
    new_id: str | None = None,
    admit: Callable[[SessionFile], SessionFile] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> str:
    """Create the session of the file at ``path`` in ``store`` (all or nothing); its id.

    ``new_id`` imports it under another id (e.g. a second copy). ``admit`` turns the parsed file
    into what is stored (the importer's policy; it raises to refuse). ``ConflictError`` when the
    id exists; ``SessionFileError`` for a file that cannot be imported.
    """
    try:
        data = await asyncio.to_thread(Path(path).read_bytes)
    except OSError as exc:
        raise SessionFileError(f"cannot read session file: {exc}", path=str(path)) from exc
    parsed = parse_session_file(data, path=str(path), max_line_bytes=max_line_bytes)
    info = parsed.info
    if new_id is not None:
        info = SessionInfo(
            id=new_id,
            created_at=info.created_at,
            updated_at=info.updated_at,
            title=info.title,
            project_dir=info.project_dir,
            file_version=info.file_version,
        )
        parsed = SessionFile(info, parsed.entries, parsed.version)
    if admit is not None:
        parsed = admit(parsed)
    await store.create_session(parsed.info, parsed.entries)
    return parsed.info.id
