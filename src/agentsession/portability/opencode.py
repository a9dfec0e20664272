"""OpenCode sessions as a ``Draft``: the JSON-file storage and the SQLite database.

The JSON-file layout keeps ``session/<project>/<session>.json``, ``message/<session>/<msg>.json``
and ``part/<msg>/<part>.json``; newer versions keep the same JSON in ``opencode.db`` (tables
``session``, ``message``, ``part``, the JSON in a ``data`` column). Either way a session is
messages in time order, each a list of parts. A ``tool`` part is a call and its result at once
(``callID``, ``state.input``, ``state.output`` or ``state.error``): it becomes a tool call of
the reply and, once the reply's calls are made, its result; a call still pending has no
result (the draft answers it with a visible error). Text parts separated by tool parts are
separate replies, as the model wrote them in steps. An assistant message marked ``summary`` is
a compaction summary: a summary epoch. Reasoning parts carry no replay data another provider
accepts (skipped, counted); files become images when they hold one inline, else notes.

Files are read leniently (ids from the file name when the JSON has none, parts ordered by
time, then by the message's own list, then by id); nothing in them is trusted.
"""

from __future__ import annotations

import base64
import binascii
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SessionFileError
from ..request import ContentPart, ImagePart, TextPart, ToolCall
from .draft import Draft
from .lines import as_dict, as_int, as_list, as_str, read_json

__all__ = ["FORMAT", "is_storage", "read_opencode"]

FORMAT = "opencode"
_SQLITE = b"SQLite format 3\x00"
_MAX_PARTS = 100_000


@dataclass
class _Message:
    info: dict[str, Any]
    parts: list[dict[str, Any]] = field(default_factory=list)


def is_storage(path: Path) -> bool:
    """Whether ``path`` is OpenCode storage: its folder, a session file in it, or its database."""
    if path.is_dir():
        return (path / "session").is_dir() or (path / "storage" / "session").is_dir()
    if path.suffix == ".json" and path.parent.parent.name == "session":
        return True
    try:
        with path.open("rb") as handle:
            head = handle.read(len(_SQLITE))
    except OSError:
        return False
    return head == _SQLITE and _has_tables(path)


def _has_tables(path: Path) -> bool:
    try:
        with _open_db(path) as db:
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error:
        return False
    return {"session", "message", "part"} <= names


def _open_db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


# -- the JSON-file layout --------------------------------------------------------------------


def _session_file(path: Path) -> Path:
    """The session file ``path`` names: itself, or the one session of a storage folder."""
    if path.is_file():
        return path
    root = path / "storage" if (path / "storage" / "session").is_dir() else path
    found = sorted(p for p in (root / "session").glob("*/*.json") if p.parent.name != "message")
    if len(found) != 1:
        names = ", ".join(str(p.relative_to(root)) for p in found[:5]) or "none"
        raise SessionFileError(
            f"the OpenCode storage holds {len(found)} sessions ({names}); name the session file",
            path=str(path),
        )
    return found[0]


def _ordered(parts: list[tuple[str, dict[str, Any]]], listed: list[Any]) -> list[dict[str, Any]]:
    order = {as_str(p): i for i, p in enumerate(listed)}

    def key(item: tuple[str, dict[str, Any]]) -> tuple[int, int, str]:
        ident, part = item
        start = as_int(as_dict(part.get("time")).get("start"), -1)
        return (start, order.get(ident, len(order)), ident)

    return [part for _, part in sorted(parts, key=key)]


def _json_messages(
    session_path: Path, limit: int, draft: Draft
) -> tuple[dict[str, Any], list[_Message]]:
    session = read_json(session_path, limit)
    if session is None:
        raise SessionFileError("not an OpenCode session file (JSON object)", path=str(session_path))
    root = session_path.parent.parent.parent
    session_id = as_str(session.get("id")) or session_path.stem
    # The older layout keeps both under ``session/``: ``session/message/<session>/<msg>.json``
    # and ``session/part/<session>/<msg>/<part>.json`` (its sessions in ``session/info/``).
    older = not (root / "message" / session_id).is_dir()
    folder = root / "session" / "message" if older else root / "message"
    messages: list[_Message] = []
    for file in sorted((folder / session_id).glob("*.json"))[:_MAX_PARTS]:
        info = read_json(file, limit)
        if info is None:
            draft.skip("unreadable message file")
            continue
        info.setdefault("id", file.stem)
        message_id = as_str(info.get("id"))
        where = root / "session" / "part" / session_id if older else root / "part"
        parts: list[tuple[str, dict[str, Any]]] = []
        for part_file in sorted((where / message_id).glob("*.json"))[:_MAX_PARTS]:
            part = read_json(part_file, limit)
            if part is None:
                draft.skip("unreadable part file")
            else:
                parts.append((as_str(part.get("id")) or part_file.stem, part))
        messages.append(_Message(info, _ordered(parts, as_list(info.get("parts")))))
    return session, messages


# -- the SQLite layout -----------------------------------------------------------------------


def _db_messages(
    path: Path, draft: Draft, session: str | None
) -> tuple[dict[str, Any], list[_Message]]:
    try:
        with _open_db(path) as db:
            return _db_read(db, path, draft, session)
    except sqlite3.Error as exc:
        raise SessionFileError(f"cannot read the OpenCode database: {exc}", path=str(path)) from exc


def _db_read(
    db: sqlite3.Connection, path: Path, draft: Draft, session: str | None
) -> tuple[dict[str, Any], list[_Message]]:
    db.row_factory = sqlite3.Row
    if session is not None:
        rows = db.execute("SELECT * FROM session WHERE id = ?", (session,)).fetchall()
    else:
        rows = db.execute("SELECT * FROM session LIMIT 2").fetchall()
    if len(rows) != 1:
        said = f"no session {session!r}" if session is not None else "not one session"
        raise SessionFileError(
            f"the OpenCode database holds {said}; name one (--latest finds this folder's)",
            path=str(path),
        )
    found = {k: rows[0][k] for k in rows[0].keys()}  # noqa: SIM118 (a Row iterates values)
    session_id = as_str(found.get("id"))
    messages: list[_Message] = []
    for row in db.execute(
        "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (session_id,)
    ):
        info = _loads(row["data"], draft) or {}
        info["id"] = row["id"]
        parts = [
            (as_str(r["id"]), {**(_loads(r["data"], draft) or {}), "id": r["id"]})
            for r in db.execute(
                "SELECT id, data FROM part WHERE message_id = ? ORDER BY time_created, id",
                (row["id"],),
            )
        ]
        messages.append(_Message(info, _ordered(parts, [])))
    return found, messages


def _loads(data: Any, draft: Draft) -> dict[str, Any] | None:
    try:
        value = json.loads(data) if isinstance(data, str | bytes) else None
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        draft.skip("unreadable row")
        return None
    return value


# -- parts into the draft --------------------------------------------------------------------


def _file_part(part: dict[str, Any]) -> ContentPart:
    mime, url = as_str(part.get("mime")), as_str(part.get("url"))
    if mime.startswith("image/") and url.startswith("data:") and "," in url:
        data = url.split(",", 1)[1]
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            pass
        else:
            return ImagePart(mime, data=data)
    return TextPart(f"[file {as_str(part.get('filename')) or url or 'without a name'}]")


class _Reply:
    """One assistant message's parts, handed to the draft step by step."""

    def __init__(self, draft: Draft, model: str, stamp: str) -> None:
        self.draft, self.model, self.stamp = draft, model, stamp
        self.text: list[str] = []
        self.tools: list[dict[str, Any]] = []

    def part(self, part: dict[str, Any]) -> None:
        kind = part.get("type")
        if kind == "text":
            if self.tools:
                self.flush()
            self.text.append(as_str(part.get("text")))
        elif kind == "tool":
            self.tools.append(part)
        elif kind == "step-start":
            self.flush()
        elif kind == "reasoning":
            self.draft.skip("reasoning (no replay data another provider accepts)")
        elif kind in ("step-finish", "snapshot", "patch"):
            self.draft.skip(f"{kind} part")
        else:
            self.draft.note(f"a {kind or 'typeless'} part of a reply")

    def flush(self) -> None:
        if not (self.text or self.tools):
            return
        calls = [
            ToolCall(
                as_str(t.get("tool"), "tool"),
                as_dict(as_dict(t.get("state")).get("input")),
                id=as_str(t.get("callID")) or as_str(t.get("id")),
            )
            for t in self.tools
        ]
        self.draft.assistant("".join(self.text), calls, model=self.model, timestamp=self.stamp)
        for tool, call in zip(self.tools, calls, strict=True):
            state = as_dict(tool.get("state"))
            status = state.get("status")
            if status == "completed":
                output = state.get("output")
                text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
                if as_dict(state.get("time")).get("compacted"):
                    text = "[output pruned by OpenCode's compaction]"
                self.draft.result(call.id, call.name, text, timestamp=self.stamp)
            elif status == "error":
                error = state.get("error")
                text = error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)
                self.draft.result(call.id, call.name, text, is_error=True, timestamp=self.stamp)
        self.text, self.tools = [], []


def _stamp(info: dict[str, Any]) -> str:
    from datetime import UTC, datetime

    millis = as_int(as_dict(info.get("time")).get("created"), -1)
    if millis < 0:
        return ""
    try:
        return datetime.fromtimestamp(millis / 1000, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return ""


def _fill(draft: Draft, messages: Iterable[_Message]) -> None:
    for message in messages:
        info = message.info
        stamp = _stamp(info)
        draft.stamp(stamp)
        role = info.get("role")
        if role == "user":
            _user(draft, message.parts, stamp)
        elif role == "assistant" and info.get("summary") is True:
            text = "".join(as_str(p.get("text")) for p in message.parts if p.get("type") == "text")
            draft.summary(text, stamp)
        elif role == "assistant":
            model = as_str(info.get("modelID")) or as_str(as_dict(info.get("model")).get("modelID"))
            reply = _Reply(draft, model, stamp)
            for part in message.parts:
                reply.part(part)
            reply.flush()
            error = as_dict(info.get("error"))
            if error:
                said = as_str(as_dict(error.get("data")).get("message"))
                draft.note(f"the reply failed ({as_str(error.get('name'))}): {said}", stamp)
        else:
            draft.skip("message without a known role")


def _user(draft: Draft, parts: list[dict[str, Any]], stamp: str) -> None:
    content: list[ContentPart] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            content.append(TextPart(as_str(part.get("text"))))
        elif kind == "file":
            content.append(_file_part(part))
        elif kind == "compaction":
            draft.skip("compaction marker (its summary follows)")
        else:
            draft.note(f"a {kind or 'typeless'} part of a user message", stamp)
    if all(isinstance(p, TextPart) for p in content):
        draft.user("\n".join(p.text for p in content if isinstance(p, TextPart)), stamp)
    else:
        draft.user(tuple(content), stamp)


def read_opencode(path: Path, draft: Draft, max_bytes: int, session: str | None = None) -> None:
    """Fill ``draft`` with the OpenCode session at ``path`` (see the module doc).

    ``session``: which session of a database holding several.
    """
    if path.is_file() and path.suffix != ".json":
        info, messages = _db_messages(path, draft, session)
    else:
        info, messages = _json_messages(_session_file(path), max_bytes, draft)
    draft.source_id = as_str(info.get("id"))
    draft.title = as_str(info.get("title")) or None
    draft.project_dir = as_str(info.get("directory")) or None
    _fill(draft, sorted(messages, key=lambda m: (_stamp(m.info), as_str(m.info.get("id")))))
