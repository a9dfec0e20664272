"""Claude Code session files (``~/.claude/projects/<folder>/<session>.jsonl``) as a ``Draft``.

Records form a tree through ``parentUuid``; a rewind leaves siblings, and the live conversation
is the chain from the newest record back to the root, crossing a compaction boundary through its
``logicalParentUuid``; every record with a ``uuid`` is a node of that tree (an ``attachment``
between a prompt and its answer links them), though only messages become turns. Records off
that chain are skipped (counted). One model response is
written as several ``assistant`` lines sharing ``message.id``: they are merged back into one
reply. ``tool_use`` blocks become tool calls; the ``tool_result`` blocks of later user lines are
their results, linked by the source's ids. Signed ``thinking`` blocks travel as Anthropic replay
data (sent back only to the Anthropic Messages format); unsigned thinking is counted as skipped.
A ``compact_boundary`` followed by the ``isCompactSummary`` user line becomes a summary epoch.
``summary`` records (titles), file-history snapshots, system records and ``isMeta`` user lines
(the tool's own context) are no turns: skipped. Sub-agent records in the session's own file
(``isSidechain``) are off the main line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..request import ContentPart, ImagePart, TextPart, ToolCall
from .draft import Draft
from .lines import as_dict, as_list, as_str, read_lines

__all__ = ["FORMAT", "looks_like", "read_claude_code"]

FORMAT = "claude-code"
_MESSAGE_TYPES = {"user", "assistant", "system"}
_KNOWN = {"user", "assistant", "system", "summary", "file-history-snapshot"}
_ANTHROPIC = "anthropic-messages"


def looks_like(first: dict[str, Any]) -> bool:
    """Whether a file's first record is Claude Code's."""
    kind = first.get("type")
    markers = ("uuid", "sessionId", "leafUuid", "snapshot", "messageId")
    return kind in _KNOWN and any(name in first for name in markers)


def _chain(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records on the path from the newest record back to the root, oldest first."""
    by_id = {as_str(r.get("uuid")): r for r in records if as_str(r.get("uuid"))}
    if not records:
        return []
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    # A sub-agent's records may sit in the session's own file: the live leaf is the main line's
    # newest message (a record of another kind after it is no turn of the conversation).
    messages = [r for r in records if r.get("type") in _MESSAGE_TYPES] or records
    main = [r for r in messages if r.get("isSidechain") is not True]
    current: dict[str, Any] | None = (main or messages)[-1]
    while current is not None:
        uid = as_str(current.get("uuid"))
        if uid in seen:  # a cycle in a forged file: stop, keep what was walked
            break
        seen.add(uid)
        chain.append(current)
        parent = as_str(current.get("parentUuid")) or as_str(current.get("logicalParentUuid"))
        current = by_id.get(parent)
    chain.reverse()
    return chain


def _label(kind: Any) -> str:
    """How a record that is no turn is counted among the skipped."""
    return f"{kind} record" if isinstance(kind, str) else "record without a type"


def _content(blocks: Any) -> str | tuple[ContentPart, ...]:
    """A user or result content (a string or blocks) as stored content; images as parts."""
    if isinstance(blocks, str):
        return blocks
    parts: list[ContentPart] = []
    for block in as_list(blocks):
        block = as_dict(block)
        kind = block.get("type")
        if kind == "text":
            parts.append(TextPart(as_str(block.get("text"))))
        elif kind == "image":
            parts.append(_image(as_dict(block.get("source"))))
        elif kind:
            parts.append(TextPart(f"[{kind} block]"))
    if all(isinstance(p, TextPart) for p in parts):
        return "\n".join(p.text for p in parts if isinstance(p, TextPart))
    return tuple(parts)


def _image(source: dict[str, Any]) -> ContentPart:
    media = as_str(source.get("media_type"), "image/png")
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        return ImagePart(media, data=source["data"])
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return ImagePart(media, url=source["url"])
    return TextPart("[an image the session file does not hold]")


class _Reader:
    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.reply: list[dict[str, Any]] = []  # the blocks of the reply being merged
        self.reply_id = ""
        self.reply_model = ""
        self.reply_stamp = ""
        self.summary_next = False

    def record(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        stamp = as_str(record.get("timestamp"))
        self.draft.stamp(stamp)
        message = as_dict(record.get("message"))
        if kind == "assistant":
            self.assistant(message, stamp)
            return
        self.finish()
        if kind == "user":
            self.user(record, message, stamp)
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            self.summary_next = True
        else:
            self.draft.skip(f"{kind} record" if kind else "record without a type")

    def assistant(self, message: dict[str, Any], stamp: str) -> None:
        ident = as_str(message.get("id"))
        if not (ident and ident == self.reply_id):
            self.finish()
            self.reply_id, self.reply_stamp = ident, stamp
        self.reply_model = as_str(message.get("model")) or self.reply_model
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        self.reply.extend(as_dict(b) for b in as_list(content))

    def finish(self) -> None:
        """The merged reply, handed to the draft."""
        if not self.reply and not self.reply_id:
            return
        blocks, self.reply, self.reply_id = self.reply, [], ""
        text: list[str] = []
        calls: list[ToolCall] = []
        replayed: list[dict[str, Any]] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                text.append(as_str(block.get("text")))
                replayed.append({"type": "text", "text": as_str(block.get("text"))})
            elif kind == "tool_use":
                call = ToolCall(
                    as_str(block.get("name"), "tool"),
                    as_dict(block.get("input")),
                    id=as_str(block.get("id")),
                )
                calls.append(call)
                replayed.append(
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                )
            elif kind in ("thinking", "redacted_thinking") and (
                block.get("signature") or block.get("data")
            ):
                replayed.append(block)
            elif kind == "thinking":
                self.draft.skip("unsigned thinking")
            else:
                self.draft.note(f"a {kind or 'typeless'} block of the reply")
        signed = any(b.get("type") in ("thinking", "redacted_thinking") for b in replayed)
        replay = {_ANTHROPIC: {"content": replayed}} if signed else None
        self.draft.assistant(
            "".join(text), calls, model=self.reply_model, timestamp=self.reply_stamp, replay=replay
        )

    def user(self, record: dict[str, Any], message: dict[str, Any], stamp: str) -> None:
        content = message.get("content")
        if record.get("isMeta") is True:  # the tool's own context (caveats, command output)
            self.draft.skip("meta user line (the tool's own context)")
            return
        if self.summary_next or record.get("isCompactSummary"):
            self.summary_next = False
            summary = _content(content)
            self.draft.summary(summary if isinstance(summary, str) else "", stamp)
            return
        if isinstance(content, list):
            rest: list[Any] = []
            for block in content:
                block = as_dict(block)
                if block.get("type") == "tool_result":
                    self.draft.result(
                        as_str(block.get("tool_use_id")),
                        "",
                        _content(block.get("content")),
                        is_error=block.get("is_error") is True,
                        timestamp=stamp,
                    )
                else:
                    rest.append(block)
            content = rest if rest else ""
        if content:
            self.draft.user(_content(content), stamp)


def read_claude_code(path: Path, draft: Draft, max_line_bytes: int) -> None:
    """Fill ``draft`` with the live conversation of the Claude Code session file at ``path``."""
    records: list[dict[str, Any]] = []
    title = ""
    for line in read_lines(path, max_line_bytes):
        if line.value is None:
            draft.skip(f"unreadable line ({line.problem})")
            continue
        kind = line.value.get("type")
        if as_str(line.value.get("uuid")):
            # Every record with an id is a node of the tree (attachments and progress records
            # sit between a prompt and its answer), whether or not it becomes a turn.
            records.append(line.value)
        elif kind == "summary":
            title = as_str(line.value.get("summary")) or title
            draft.skip("summary record (a title)")
        else:
            draft.skip(_label(kind))
    chain = _chain(records)
    walked = {id(r) for r in chain}
    for record in records:
        if id(record) not in walked:
            kind = record.get("type")
            draft.skip("record off the live branch" if kind in _MESSAGE_TYPES else f"{kind} record")
    first = next((r for r in chain if r.get("type") in _MESSAGE_TYPES), {})
    draft.source_id = as_str(first.get("sessionId"))
    draft.project_dir = as_str(first.get("cwd")) or None
    draft.title = title or None
    reader = _Reader(draft)
    for record in chain:
        if record.get("type") in _MESSAGE_TYPES:
            reader.record(record)
        else:
            draft.skip(_label(record.get("type")))
    reader.finish()
