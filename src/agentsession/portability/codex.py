"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl``) as a ``Draft``.

The conversation is read from the ``response_item`` lines (Responses API items); ``event_msg``
lines are the UI's copy and telemetry, so they only serve to tell a typed prompt from injected
context: when the file has ``user_message`` events, a user item is a prompt only if an event
carries the same text, else (older files) the ``<environment_context>`` and AGENTS.md blocks are
recognised by their opening. Injected context and ``developer`` items are Codex's own
instructions: skipped (counted). Consecutive assistant-side items (reasoning, message, calls)
are one reply; ``function_call``/``custom_tool_call`` are its calls and the ``…_output`` items
their results, linked by ``call_id``. Reasoning with ``encrypted_content`` travels as OpenAI
Responses replay data. A ``compacted`` line becomes a summary epoch. The legacy flat format (a
header without ``type``, then bare items) reads the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..request import ToolCall
from .draft import Draft
from .lines import as_dict, as_list, as_str, read_lines

__all__ = ["FORMAT", "looks_like", "read_codex"]

FORMAT = "codex"
_LINE_TYPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
_ITEM_TYPES = {
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
}
_INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
_RESPONSES = "openai-responses"
#: Items that are the tool's own bookkeeping, no turn of the conversation.
_NO_TURN = {"ghost_snapshot", "compaction", "compaction_summary"}


def looks_like(first: dict[str, Any]) -> bool:
    """Whether a file's first record is a Codex rollout's (current or legacy flat format)."""
    if first.get("type") in _LINE_TYPES and "payload" in first:
        return True
    return "type" not in first and "id" in first and "timestamp" in first and len(first) <= 8


def _text(content: Any) -> str:
    """The text of an item's content (a string or a list of text blocks)."""
    if isinstance(content, str):
        return content
    parts = [as_str(as_dict(block).get("text")) for block in as_list(content)]
    return "\n".join(p for p in parts if p)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    return {"input": raw} if raw not in (None, "") else {}


def _output(raw: Any) -> str:
    """A call's output: a string, older builds' ``{"output": …, "metadata": …}``, or blocks."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.startswith('{"output"') else None
        except ValueError:
            parsed = None
        inner = parsed.get("output") if isinstance(parsed, dict) else None
        return inner if isinstance(inner, str) else raw
    return _text(raw) if isinstance(raw, list) else json.dumps(raw, ensure_ascii=False)


class _Reader:
    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.prompt: bool | None = None  # whether the current line is a typed prompt (if known)
        self.model = ""
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        self.reasoning: list[dict[str, Any]] = []
        self.stamp = ""
        self.names: dict[str, str] = {}

    def line(self, value: dict[str, Any]) -> None:
        kind = value.get("type")
        payload = as_dict(value.get("payload"))
        stamp = as_str(value.get("timestamp"))
        self.draft.stamp(stamp)
        if "payload" not in value and kind in _ITEM_TYPES:
            self.item(value, stamp)  # the legacy flat format
        elif kind == "response_item":
            self.item(payload, stamp)
        elif kind == "session_meta":
            self.draft.source_id = as_str(payload.get("id"))
            self.draft.project_dir = as_str(payload.get("cwd")) or None
        elif kind == "turn_context":
            self.model = as_str(payload.get("model")) or self.model
        elif kind == "compacted":
            self.finish()
            self.draft.summary(_summary(payload), stamp)
        elif kind == "event_msg":
            self.draft.skip(f"event {as_str(payload.get('type'), 'without a type')}")
        elif "type" not in value and "id" in value:
            self.draft.source_id = as_str(value.get("id"))
        else:
            self.draft.skip(f"{kind} record" if isinstance(kind, str) else "record without a type")

    def item(self, item: dict[str, Any], stamp: str) -> None:
        kind = item.get("type")
        if kind == "message" and item.get("role") == "assistant":
            if self.calls:
                self.finish()
            self.stamp = self.stamp or stamp
            self.text.append(_text(item.get("content")))
        elif kind == "reasoning":
            self.stamp = self.stamp or stamp
            if isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]:
                self.reasoning.append({k: v for k, v in item.items() if v is not None})
            else:
                self.draft.skip("reasoning summary without replay data")
        elif kind in ("function_call", "custom_tool_call"):
            self.stamp = self.stamp or stamp
            raw = item.get("arguments") if kind == "function_call" else item.get("input")
            name = as_str(item.get("name"), "tool")
            call_id = as_str(item.get("call_id"))
            self.names[call_id] = name
            self.calls.append(ToolCall(name, _arguments(raw), id=call_id))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self.finish()
            call_id = as_str(item.get("call_id"))
            self.draft.result(
                call_id, self.names.get(call_id, ""), _output(item.get("output")), timestamp=stamp
            )
        elif kind == "message":
            self.finish()
            self.message(item, stamp)
        elif kind in _NO_TURN:
            self.draft.skip(f"{kind} item")
        else:
            self.finish()
            self.draft.note(f"a {kind or 'typeless'} item of the session")

    def message(self, item: dict[str, Any], stamp: str) -> None:
        role = item.get("role")
        text = _text(item.get("content"))
        if role != "user":
            self.draft.skip(f"{role} message (the tool's own instructions)")
        elif self.prompt is False or (self.prompt is None and text.lstrip().startswith(_INJECTED)):
            self.draft.skip("injected context")
        else:
            self.draft.user(text, stamp)

    def finish(self) -> None:
        if not (self.text or self.calls or self.reasoning):
            return
        replay = {_RESPONSES: {"reasoning": self.reasoning}} if self.reasoning else None
        text = "\n\n".join(t for t in self.text if t)
        self.draft.assistant(
            text, self.calls, model=self.model, timestamp=self.stamp, replay=replay
        )
        self.text, self.calls, self.reasoning, self.stamp = [], [], [], ""


def _summary(payload: dict[str, Any]) -> str:
    message = as_str(payload.get("message"))
    if message:
        return message
    items = [as_dict(i) for i in as_list(payload.get("replacement_history"))]
    return "\n\n".join(_text(i.get("content")) for i in items if i.get("type") == "message")


def _is_prompt_event(value: dict[str, Any]) -> bool:
    payload = as_dict(value.get("payload"))
    return value.get("type") == "event_msg" and payload.get("type") == "user_message"


def _typed(values: list[dict[str, Any]]) -> set[int] | None:
    """Which lines hold typed prompts: the user item each ``user_message`` event follows.

    ``None`` when the file has no such events (older builds): the reader then goes by the
    openings of injected context.
    """
    events = [i for i, v in enumerate(values) if _is_prompt_event(v)]
    if not events:
        return None
    texts = {as_str(as_dict(values[i].get("payload")).get("message")) for i in events}
    typed: set[int] = set()
    for i, value in enumerate(values):
        item = as_dict(value.get("payload"))
        is_user = value.get("type") == "response_item" and item.get("role") == "user"
        if is_user and _text(item.get("content")) in texts:
            typed.add(i)
    for i in events:
        j = i - 1
        while j >= 0 and values[j].get("type") != "response_item":
            j -= 1
        if j >= 0 and as_dict(values[j].get("payload")).get("role") == "user":
            typed.add(j)
    return typed


def read_codex(path: Path, draft: Draft, max_line_bytes: int) -> None:
    """Fill ``draft`` with the conversation of the Codex rollout file at ``path``."""
    values: list[dict[str, Any]] = []
    for line in read_lines(path, max_line_bytes):
        if line.value is None:
            draft.skip(f"unreadable line ({line.problem})")
        else:
            values.append(line.value)
    typed = _typed(values)
    reader = _Reader(draft)
    for i, value in enumerate(values):
        reader.prompt = None if typed is None else i in typed
        reader.line(value)
    reader.finish()
