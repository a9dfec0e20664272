"""pi session files (``~/.pi/agent/sessions/--<folder>--/<time>_<id>.jsonl``) as a ``Draft``.

Line 1 is the header ``{"type": "session", "version", "id", "cwd", …}``. From version 2 on,
entries form a tree through ``id``/``parentId`` and the live conversation is the path from the
last entry back to the root (entries off it are skipped, counted); version 1 files are linear.
``message`` entries carry the message by ``role``: ``user``, ``assistant`` (text, thinking and
``toolCall`` blocks), ``toolResult`` (linked to its call by ``toolCallId``); ``bashExecution``,
``custom`` and the summary roles are kept as visible notes. A ``compaction`` entry becomes a
summary epoch (the entries it keeps after its summary stay in the log before it: they are kept
in the transcript, and the model sees the summary and what follows); ``branch_summary`` and
``custom_message`` entries are kept as notes. Thinking has no replay data another provider
accepts: skipped, counted. An assistant reply that failed keeps its error as a note.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..request import ContentPart, ImagePart, TextPart, ToolCall
from .draft import Draft
from .lines import as_dict, as_list, as_str, read_lines

__all__ = ["FORMAT", "looks_like", "read_pi"]

FORMAT = "pi"
_SILENT = {"model_change", "thinking_level_change", "label", "session_info", "custom"}


def looks_like(first: dict[str, Any]) -> bool:
    """Whether a file's first record is a pi session header."""
    return first.get("type") == "session" and "version" in first and "kind" not in first


def _content(raw: Any) -> str | tuple[ContentPart, ...]:
    if isinstance(raw, str):
        return raw
    parts: list[ContentPart] = []
    for block in as_list(raw):
        block = as_dict(block)
        kind = block.get("type")
        if kind == "text":
            parts.append(TextPart(as_str(block.get("text"))))
        elif kind == "image" and isinstance(block.get("data"), str):
            parts.append(ImagePart(as_str(block.get("mimeType"), "image/png"), data=block["data"]))
        elif kind:
            parts.append(TextPart(f"[{kind} block]"))
    if all(isinstance(p, TextPart) for p in parts):
        return "\n".join(p.text for p in parts if isinstance(p, TextPart))
    return tuple(parts)


def _live(entries: list[dict[str, Any]], version: int) -> list[dict[str, Any]]:
    """The path from the last entry back to the root, oldest first (all of a version-1 file)."""
    if version < 2 or not entries:
        return entries
    by_id = {as_str(e.get("id")): e for e in entries if as_str(e.get("id"))}
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: dict[str, Any] | None = entries[-1]
    while current is not None and as_str(current.get("id")) not in seen:
        seen.add(as_str(current.get("id")))
        path.append(current)
        current = by_id.get(as_str(current.get("parentId")))
    path.reverse()
    return path


class _Reader:
    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.names: dict[str, str] = {}

    def entry(self, entry: dict[str, Any]) -> None:
        kind = entry.get("type")
        stamp = as_str(entry.get("timestamp"))
        self.draft.stamp(stamp)
        if kind == "message":
            self.message(as_dict(entry.get("message")), stamp)
        elif kind == "compaction":
            self.draft.summary(as_str(entry.get("summary")), stamp)
        elif kind == "branch_summary":
            self.draft.note(f"summary of another branch: {as_str(entry.get('summary'))}", stamp)
        elif kind == "custom_message":
            self.draft.note(_flat(_content(entry.get("content"))), stamp)
        elif kind == "session_info" and as_str(entry.get("name")):
            self.draft.title = as_str(entry.get("name"))
            self.draft.skip("session_info entry")
        elif kind in _SILENT:
            self.draft.skip(f"{kind} entry")
        else:
            self.draft.skip(
                f"unknown entry type {kind!r}" if isinstance(kind, str) else "entry without a type"
            )

    def message(self, message: dict[str, Any], stamp: str) -> None:
        role = message.get("role")
        if role == "user":
            self.draft.user(_content(message.get("content")), stamp)
        elif role == "assistant":
            self.assistant(message, stamp)
        elif role == "toolResult":
            call_id = as_str(message.get("toolCallId"))
            name = as_str(message.get("toolName")) or self.names.get(call_id, "")
            self.draft.result(
                call_id,
                name,
                _content(message.get("content")),
                is_error=message.get("isError") is True,
                timestamp=stamp,
            )
        elif role == "bashExecution":
            command, output = as_str(message.get("command")), as_str(message.get("output"))
            self.draft.note(f"the user ran `{command}`:\n{output}", stamp)
        elif isinstance(role, str) and role:
            self.draft.note(f"a {role} message: {_flat(_content(message.get('content')))}", stamp)
        else:
            self.draft.skip("message without a role")

    def assistant(self, message: dict[str, Any], stamp: str) -> None:
        text: list[str] = []
        calls: list[ToolCall] = []
        for block in as_list(message.get("content")):
            block = as_dict(block)
            kind = block.get("type")
            if kind == "text":
                text.append(as_str(block.get("text")))
            elif kind == "toolCall":
                call = ToolCall(
                    as_str(block.get("name"), "tool"),
                    as_dict(block.get("arguments")),
                    id=as_str(block.get("id")),
                )
                self.names[call.id] = call.name
                calls.append(call)
            elif kind == "thinking":
                self.draft.skip("thinking (no replay data another provider accepts)")
            else:
                self.draft.note(f"a {kind or 'typeless'} block of a reply")
        error = as_str(message.get("errorMessage"))
        stop = as_str(message.get("stopReason"))
        note = f"the reply ended with {stop or 'an error'}: {error}" if error else ""
        if stop in ("error", "aborted") and not note:
            note = f"the reply ended with {stop}"
        model = as_str(message.get("model"))
        self.draft.assistant("".join(text), calls, model=model, timestamp=stamp, note=note)


def _flat(content: str | tuple[ContentPart, ...]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.text if isinstance(p, TextPart) else "[image]" for p in content)


def read_pi(path: Path, draft: Draft, max_line_bytes: int) -> None:
    """Fill ``draft`` with the live conversation of the pi session file at ``path``."""
    header: dict[str, Any] | None = None
    entries: list[dict[str, Any]] = []
    for line in read_lines(path, max_line_bytes):
        if line.value is None:
            draft.skip(f"unreadable line ({line.problem})")
        elif header is None:
            header = line.value
        else:
            entries.append(line.value)
    header = header or {}
    version = header.get("version")
    live = _live(entries, version if isinstance(version, int) else 1)
    draft.skip("entry off the live branch", len(entries) - len(live))
    draft.source_id = as_str(header.get("id"))
    draft.project_dir = as_str(header.get("cwd")) or None
    draft.stamp(as_str(header.get("timestamp")))
    reader = _Reader(draft)
    for entry in live:
        reader.entry(entry)
