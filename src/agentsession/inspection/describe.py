"""One-line descriptions of log entries, for timelines and reports.

``describe`` knows the kinds it has a better sentence for; every other kind — one added later,
by a feature this module has never heard of — is described from its stored fields (the codec's
encoding), so it shows up on every timeline without a change here. ``category_of`` groups kinds
for filtering the same way: known kinds by name, anything else as ``other``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeAlias

from ..codec import encode
from ..log import (
    STATE_KINDS,
    ApprovalDecided,
    ApprovalRequested,
    AssistantEntry,
    ContextEpoch,
    Dispatch,
    InputCancelled,
    InputDelivered,
    InputQueued,
    Interrupted,
    LogEntry,
    MidConversationSystemMessage,
    ModelSwitched,
    PermissionChanged,
    ProviderFailed,
    Summary,
    SystemPromptCheckpoint,
    ToolResultEntry,
    UserEntry,
)
from ..request import text_of
from .toolview import call_line

__all__ = ["CATEGORIES", "Category", "category_of", "describe", "preview"]

Category: TypeAlias = Literal["conversation", "context", "request", "state", "other"]

CATEGORIES: dict[str, Category] = {
    "user": "conversation",
    "assistant": "conversation",
    "tool_result": "conversation",
    "epoch": "context",
    "mid_conversation_system": "context",
    "system_prompt_checkpoint": "context",
    "summary": "context",
    "runtime_context": "context",
    "dispatch": "request",
    "provider_failed": "request",
    "interrupted": "request",
    "model_switched": "request",
    **dict.fromkeys(STATE_KINDS, "state"),
}

EPOCH_REASONS = {
    "start": "the first request",
    "compaction": "a compaction",
    "model_switch": "a model switch",
    "window": "the window moved",
    "manual": "asked for",
    "tools": "the tools changed",
    "location": "the session moved",
    "import": "imported: the file's context set aside",
}

_TEXT_CHARS = 4_000


def preview(text: str, limit: int = _TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def category_of(kind: str) -> Category:
    """The timeline group of an entry kind; unknown kinds are ``other``."""
    return CATEGORIES.get(kind, "other")


def describe(entry: LogEntry) -> tuple[str, str]:
    """A title line and a (cut) body text for one log entry."""
    describer = _DESCRIBERS.get(entry.kind)
    if describer is None:
        return _generic(entry)
    title, text = describer(entry)
    return title, preview(text)


def _generic(entry: object) -> tuple[str, str]:
    fields = encode(entry)
    kind = str(fields.pop("kind", type(entry).__name__))
    fields.pop("timestamp", None)
    lines = [f"{key}: {_short(value)}" for key, value in fields.items()]
    return kind.replace("_", " "), preview("\n".join(lines))


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return preview(text, 300)


def _user(entry: UserEntry) -> tuple[str, str]:
    return "user", text_of(entry.content)


def _assistant(entry: AssistantEntry) -> tuple[str, str]:
    calls = [f"→ {_short(call_line(c.name, c.arguments))}" for c in entry.tool_calls]
    title = f"assistant · {entry.model}" if entry.model else "assistant"
    if entry.tool_calls:
        n = len(entry.tool_calls)
        title += f" · {n} tool call{'s' if n != 1 else ''}"
    return title, "\n".join([entry.content, *calls] if entry.content else calls)


def _tool_result(entry: ToolResultEntry) -> tuple[str, str]:
    mark = " (error)" if entry.is_error else ""
    return f"tool result · {entry.name}{mark}", text_of(entry.content)


def _epoch(entry: ContextEpoch) -> tuple[str, str]:
    why = EPOCH_REASONS.get(entry.reason, entry.reason)
    keys = ", ".join(key for key, _ in entry.baseline)
    lines = [f"baseline: {keys}"]
    if entry.removed:
        lines.append("removed: " + ", ".join(entry.removed))
    if entry.tools is not None:
        lines.append("tools: " + (", ".join(entry.tools) or "none"))
    return f"epoch {entry.epoch} starts · {why} · {entry.model}", "\n".join(lines)


def _mid(entry: MidConversationSystemMessage) -> tuple[str, str]:
    keys = ", ".join(c.key for c in entry.changes)
    lines = [entry.text] if entry.text else []
    if entry.tools_added:
        lines.append("tools added: " + ", ".join(entry.tools_added))
    if entry.tools_removed:
        lines.append("tools removed: " + ", ".join(entry.tools_removed))
    changed = keys or ", ".join((*entry.tools_added, *entry.tools_removed))
    return f"mid-conversation system message · {changed}", "\n".join(lines)


def _checkpoint(entry: SystemPromptCheckpoint) -> tuple[str, str]:
    keys = [f"{k} (removed)" if v is None else k for k, v in entry.changed.items()]
    return f"system prompt checkpoint · {len(keys)} sections", ", ".join(keys)


def _dispatch(entry: Dispatch) -> tuple[str, str]:
    return f"request sent · step {entry.step} · {entry.model} · cache: {entry.cache}", ""


def _failed(entry: ProviderFailed) -> tuple[str, str]:
    return f"provider failed · {entry.error_type or 'error'}", entry.error


def _interrupted(entry: Interrupted) -> tuple[str, str]:
    return "interrupted", entry.reason


def _summary(entry: Summary) -> tuple[str, str]:
    if entry.block is not None:  # the provider's own block: replayed as returned
        title = f"provider compaction · {entry.block.format} · covers seq < {entry.covers_until}"
        return title, entry.text
    return f"compaction summary · covers seq < {entry.covers_until}", entry.text


def _switched(entry: ModelSwitched) -> tuple[str, str]:
    return f"model switched · {entry.previous or '?'} → {entry.model}", ""


def _permission(entry: PermissionChanged) -> tuple[str, str]:
    return f"permission preset · {entry.previous} → {entry.preset}", ""


def _approval_requested(entry: ApprovalRequested) -> tuple[str, str]:
    return f"approval requested · {entry.name}", entry.reason


def _approval_decided(entry: ApprovalDecided) -> tuple[str, str]:
    answer = "approved" if entry.approved else "denied"
    if entry.always:
        answer += " (always)"
    return f"approval · {answer}", entry.note


def _input_queued(entry: InputQueued) -> tuple[str, str]:
    when = "the running turn's next step" if entry.mode == "steer" else "its own turn, next"
    return f"input {entry.mode} · {entry.input_id[:8]} · for {when}", entry.text


def _input_delivered(entry: InputDelivered) -> tuple[str, str]:
    return f"input delivered · {entry.input_id[:8]} · the user message below", ""


def _input_cancelled(entry: InputCancelled) -> tuple[str, str]:
    return f"input cancelled · {entry.input_id[:8]}", ""


_DESCRIBERS: dict[str, Callable[[Any], tuple[str, str]]] = {
    "user": _user,
    "assistant": _assistant,
    "tool_result": _tool_result,
    "epoch": _epoch,
    "mid_conversation_system": _mid,
    "system_prompt_checkpoint": _checkpoint,
    "dispatch": _dispatch,
    "provider_failed": _failed,
    "interrupted": _interrupted,
    "summary": _summary,
    "model_switched": _switched,
    "permission_changed": _permission,
    "approval_requested": _approval_requested,
    "approval_decided": _approval_decided,
    "input_queued": _input_queued,
    "input_delivered": _input_delivered,
    "input_cancelled": _input_cancelled,
}
