"""Projection: durable log records → the model view.

The model view of an epoch is every conversation entry from the epoch's ``history_start`` on,
with this epoch's mid-conversation system messages in place and its compaction summary first.
Each projected message keeps the log ``seq`` numbers it came from (for inspection; never sent).
Runtime metadata (dispatch records, checkpoints, epochs) never becomes a message. An entry an
``Omitted`` record names (too big for any request) is shown as a placeholder that keeps its role
and its tool-call pairing, so the session stays usable; the stored entry is never changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from .log import (
    TRANSCRIPT_KINDS,
    AssistantEntry,
    ContextEpoch,
    MidConversationSystemMessage,
    Omitted,
    Record,
    Summary,
    ToolResultEntry,
    UserEntry,
)
from .request import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "ViewMessage",
    "placeholder",
    "project",
    "summary_text",
    "to_message",
    "transcript_from",
]

SUMMARY_PREFIX = "Summary of the earlier conversation (older messages are no longer shown):\n\n"


@dataclass(frozen=True)
class ViewMessage:
    """A model-view message and the log entries it came from."""

    message: Message
    seqs: tuple[int, ...]
    summary: bool = False


def summary_text(summary: Summary) -> str:
    """How a compaction summary reads in the model view."""
    return SUMMARY_PREFIX + summary.text


def to_message(record: Record) -> Message | None:
    """The model-view message of one conversation record, or ``None`` for metadata."""
    entry = record.entry
    match entry:
        case UserEntry():
            return UserMessage(entry.content)
        case AssistantEntry():
            return AssistantMessage(
                content=entry.content,
                tool_calls=entry.tool_calls,
                provider=entry.provider,
                provider_data=entry.provider_data,
            )
        case ToolResultEntry():
            return ToolResultMessage(entry.call_id, entry.name, entry.content, entry.is_error)
        case MidConversationSystemMessage():
            return SystemMessage(entry.text, entry.tools_added, entry.tools_removed)
        case Summary():
            return UserMessage(summary_text(entry))
        case _:
            return None


def placeholder(message: Message, tokens: int) -> Message:
    """What the model sees instead of a stored item too big for any request."""
    note = (
        f"[omitted: this {message.role} message ({tokens:,} tokens) is too large to fit in any"
        " request; it is kept in the session log]"
    )
    match message:
        case UserMessage():
            return UserMessage(note)
        case AssistantMessage():
            calls = tuple(replace(c, arguments={}) for c in message.tool_calls)
            return replace(message, content=note, tool_calls=calls, provider_data={})
        case ToolResultMessage():
            return replace(message, content=note)
        case SystemMessage():
            return replace(message, content=note)


def project(records: Iterable[Record], epoch: ContextEpoch | None) -> list[ViewMessage]:
    """The model view of ``records`` under ``epoch`` (all of them when there is no epoch yet).

    A compaction epoch opens with its summary, wherever the summary entry sits in the log.
    """
    records = list(records)
    omitted = {r.entry.seq: r.entry.tokens for r in records if isinstance(r.entry, Omitted)}
    start = epoch.history_start if epoch is not None else 0
    number = epoch.epoch if epoch is not None else -1
    summary_seq = epoch.summary_seq if epoch is not None else None
    view: list[ViewMessage] = []
    opening: list[ViewMessage] = []
    for record in records:
        entry = record.entry
        if isinstance(entry, Summary):
            if record.seq == summary_seq:
                opening.append(
                    ViewMessage(UserMessage(summary_text(entry)), (record.seq,), summary=True)
                )
            continue
        if record.seq < start:
            continue
        if isinstance(entry, MidConversationSystemMessage) and entry.epoch != number:
            continue
        message = to_message(record)
        if message is not None:
            if record.seq in omitted:
                message = placeholder(message, omitted[record.seq])
            view.append(ViewMessage(message, (record.seq,)))
    return opening + view


def transcript_from(records: Iterable[Record]) -> list[Message]:
    """The user transcript of ``records``: user, assistant and tool messages only."""
    out: list[Message] = []
    for record in records:
        if record.entry.kind in TRANSCRIPT_KINDS:
            message = to_message(record)
            assert message is not None
            out.append(message)
    return out
