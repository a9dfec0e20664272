"""Projection: durable log records → the model view.

The model view of an epoch is every conversation entry from the epoch's ``history_start`` on,
with this epoch's mid-conversation system messages in place and its compaction summary first.
Each projected message keeps the log ``seq`` numbers it came from (for inspection; never sent).
Runtime metadata (dispatch records, checkpoints, epochs) never becomes a message. An entry an
``Omitted`` record names (too big for any request) is shown as a placeholder that keeps its role
and its tool-call pairing, so the session stays usable; the stored entry is never changed.

Explicit skill selections (``RuntimeContextSnapshot``) are replayed from their saved text, never
re-read. One with ``placement="user"`` is stored right after its user entry (same admission) and
is prepended to that user message in the view only: a string stays a string, block input gets a
text part in front; the stored input is never rewritten. A version-2 snapshot (no placement)
becomes a separate user message right after the user message it is anchored to: the one whose
zero-based ordinal among real user messages is its ``user_turn`` when the view starts at the
beginning of the log (no epoch, or one whose history starts at seq 0), else the nearest user
entry before it (the same one in a log written in order); with neither, it stands at its own
place.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from ._frozen import frozen
from ._memo import IdentityMemo
from .log import (
    TRANSCRIPT_KINDS,
    AssistantEntry,
    ContextEpoch,
    MidConversationSystemMessage,
    Omitted,
    Record,
    RuntimeContextSnapshot,
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
from .skills.select import prepend_skill_blocks

__all__ = [
    "VIEW_KINDS",
    "Projection",
    "ViewMessage",
    "elsewhere",
    "placeholder",
    "project",
    "projection_of",
    "summary_message",
    "summary_text",
    "to_message",
    "transcript_from",
]

#: The entry kinds the model view reads; ``project`` leaves every other kind out.
VIEW_KINDS: tuple[str, ...] = (
    *TRANSCRIPT_KINDS,
    "mid_conversation_system",
    "summary",
    "runtime_context",
    "omitted",
)

SUMMARY_PREFIX = "Summary of the earlier conversation (older messages are no longer shown):\n\n"


@frozen
class ViewMessage:
    """A model-view message and the log entries it came from."""

    message: Message
    seqs: tuple[int, ...]
    summary: bool = False
    replayed: bool = False
    """A version-2 runtime-context snapshot replayed as a user message: it belongs to the turn
    of the user message it follows, so the window and compaction never count it as a turn."""


def summary_text(summary: Summary) -> str:
    """How a compaction summary reads in the model view."""
    return SUMMARY_PREFIX + summary.text


def summary_message(summary: Summary) -> Message:
    """The message a compaction summary opens its epoch with.

    A local summary is a user message. A provider's compaction block is an assistant message
    whose replay data, in the block's format, is the block exactly as returned — the form the
    provider reads back; any other format gets the assistant's text, the summary as text (the
    same path signed reasoning takes, see ``boundary.build_request``).
    """
    block = summary.block
    if block is None:
        return UserMessage(summary_text(summary))
    # Anthropic's block is an assistant turn's content; OpenAI's compaction is a list of input
    # items (the ``compact`` call's output), replayed as the epoch's opening items.
    kept = "compaction" if block.format == "openai-responses" else "content"
    replay = block.block if kept == "compaction" else [block.block]
    return AssistantMessage(
        content=summary_text(summary),
        provider=_VENDOR.get(block.format, block.format),
        provider_data={block.format: {kept: replay}},
    )


def elsewhere(message: AssistantMessage, *, summary: bool) -> Message:
    """``message`` for another provider than the one whose replay data it holds.

    The data is dropped; a provider's compaction block (a ``summary`` opening) becomes the
    user message a local summary is, which every format accepts first.
    """
    if summary:
        return UserMessage(message.content)
    return replace(message, provider_data={})


#: The provider name an assistant message carries for each wire format's replay data.
_VENDOR = {"anthropic-messages": "anthropic", "openai-responses": "openai"}


_MESSAGES: IdentityMemo[Message] = IdentityMemo()


def to_message(record: Record) -> Message | None:
    """The model-view message of one conversation record, or ``None`` for metadata.

    The same entry gives the same message object every time (memoised by identity): a window
    message's encoding, digest and token count are then computed once, not at every request.
    The entry, not the record, is the key: the record an admission projects before its commit
    and the one the store hands back hold the same entry, so the request after the commit
    carries the very message object the one before did (and resumes its digests).
    """
    hit = _MESSAGES.get(record.entry)
    if hit is not None:
        return hit
    message = _message_of(record)
    return _MESSAGES.put(record.entry, message) if message is not None else None


def _message_of(record: Record) -> Message | None:
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
            return summary_message(entry)
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
    Consecutive requests of an epoch project the same records plus a few new ones: the view of
    the records the last projection of this epoch shared with these (the same objects, in the
    same order) is reused when no record can change a message other than its own (see
    ``_Projected``); the result is the same as projecting afresh.
    """
    return projection_of(records, epoch).view


class Projection(NamedTuple):
    """A model view with what a request takes from it, kept as the view grows.

    ``messages`` and ``sources`` are each view message's message and seqs, in order;
    ``systems`` counts the mid-conversation system messages among them and ``opaque`` the
    messages that carry provider data. An admission reads these instead of walking the view
    again: consecutive requests of an epoch extend the same lists by their new records.
    """

    view: list[ViewMessage]
    messages: list[Message]
    sources: list[tuple[int, ...]]
    systems: int
    opaque: int


def projection_of(records: Iterable[Record], epoch: ContextEpoch | None) -> Projection:
    """``project(records, epoch)`` with its messages, sources and counts (see `Projection`)."""
    records = list(records)
    if epoch is None:
        return _counted(_project(records, epoch))
    last = _PROJECTED.get(epoch)
    shared = _shared(records, last.records) if last is not None else 0
    # The records the last projection shared hold no reaching kinds (it was an extension).
    if any(r.entry.kind in _REACHING for r in records[shared:]):
        return _counted(_project(records, epoch))
    return _extended(records, epoch, last, shared)


def _counted(view: list[ViewMessage]) -> Projection:
    """The `Projection` of a view projected afresh (each message looked at once)."""
    messages = [v.message for v in view]
    systems = sum(isinstance(m, SystemMessage) for m in messages)
    opaque = sum(bool(getattr(m, "provider_data", None)) for m in messages)
    return Projection(view, messages, [v.seqs for v in view], systems, opaque)


def _shared(records: list[Record], before: list[Record]) -> int:
    """How many leading ``records`` are the very objects of ``before`` (compared in C)."""
    same = list(map(operator.is_, records, before))
    return same.index(False) if False in same else len(same)


#: Kinds whose record changes messages of other records: a selection snapshot (prepended to or
#: placed after a user message) and an omission (a placeholder for the record it names).
_REACHING = frozenset({"runtime_context", "omitted"})


class _Projected(NamedTuple):
    """One epoch's last projection: its records, and where the view stood after each of them.

    Without ``_REACHING`` records every record adds at most one message of its own (a summary to
    the opening, anything else to the body), decided by the record and the epoch alone, so the
    view of a prefix of the records is a prefix of the view.
    """

    records: list[Record]
    ends: list[tuple[int, int, int, int]]  # opening, body, systems and opaque after each record
    opening: list[ViewMessage]
    body: list[ViewMessage]
    messages: list[Message]  # the body's messages
    sources: list[tuple[int, ...]]  # the body's seqs


_PROJECTED: IdentityMemo[_Projected] = IdentityMemo(size=64)
#: The kinds ``to_message`` gives a message for, besides a summary (which opens the view).
_MESSAGE_KINDS = frozenset({*TRANSCRIPT_KINDS, "mid_conversation_system"})


def _extended(
    records: list[Record], epoch: ContextEpoch, last: _Projected | None, shared: int
) -> Projection:
    """``_project(records, epoch)`` for records without ``_REACHING`` kinds, reusing ``last``.

    ``shared``: how many leading records are the very objects ``last`` projected.
    """
    if shared and last is not None:
        ends = last.ends[:shared]
        start, size, systems, opaque = ends[-1]
        opening = last.opening[:start]
        body, messages, sources = last.body[:size], last.messages[:size], last.sources[:size]
    else:
        ends, opening, body, messages, sources = [], [], [], [], []
        systems = opaque = 0
    for record in records[shared:]:
        entry = record.entry
        if isinstance(entry, Summary):
            if record.seq == epoch.summary_seq:
                opening.append(ViewMessage(summary_message(entry), (record.seq,), summary=True))
        elif (
            entry.kind in _MESSAGE_KINDS  # dispatch records and checkpoints: no match to try
            and record.seq >= epoch.history_start
            and not (isinstance(entry, MidConversationSystemMessage) and entry.epoch != epoch.epoch)
        ):
            message = to_message(record)
            if message is not None:
                seqs = (record.seq,)
                body.append(ViewMessage(message, seqs))
                messages.append(message)
                sources.append(seqs)
                systems += isinstance(message, SystemMessage)
                opaque += isinstance(message, AssistantMessage) and bool(message.provider_data)
        ends.append((len(opening), len(body), systems, opaque))
    _PROJECTED.put(epoch, _Projected(records, ends, opening, body, messages, sources))
    # An opening is a summary: never a system message; opaque when it is a provider's block.
    opaque += sum(bool(getattr(v.message, "provider_data", None)) for v in opening)
    return Projection(
        opening + body,
        [v.message for v in opening] + messages,
        [v.seqs for v in opening] + sources,
        systems,
        opaque,
    )


def _project(records: list[Record], epoch: ContextEpoch | None) -> list[ViewMessage]:
    """The model view of ``records``, every record projected (any kinds)."""
    start = epoch.history_start if epoch is not None else 0
    number = epoch.epoch if epoch is not None else -1
    summary_seq = epoch.summary_seq if epoch is not None else None
    anchors = _anchors(records, from_start=start == 0)
    view: list[ViewMessage] = []
    opening: list[ViewMessage] = []
    for record in records:
        entry = record.entry
        if isinstance(entry, Summary):
            if record.seq == summary_seq:
                opening.append(ViewMessage(summary_message(entry), (record.seq,), summary=True))
            continue
        if record.seq < start:
            continue
        if isinstance(entry, MidConversationSystemMessage) and entry.epoch != number:
            continue
        if isinstance(entry, RuntimeContextSnapshot):
            if record.seq in anchors.standalone:
                view.append(anchors.view(UserMessage(entry.content), (record.seq,)))
            continue
        if isinstance(entry, UserEntry):
            view.extend(_user_turn(record, entry, anchors))
            continue
        message = to_message(record)
        if message is not None:
            view.append(anchors.view(message, (record.seq,)))
    return opening + view


@dataclass
class _Anchors:
    """Where the snapshots among some records go (by the seq of their user entry); omissions."""

    prepended: dict[int, list[Record]] = field(default_factory=dict)
    separate: dict[int, list[Record]] = field(default_factory=dict)
    standalone: set[int] = field(default_factory=set)
    omitted: dict[int, int] = field(default_factory=dict)

    def view(self, message: Message, seqs: tuple[int, ...]) -> ViewMessage:
        """``message`` from ``seqs``, or its placeholder when one of them is omitted."""
        tokens = next((self.omitted[seq] for seq in seqs if seq in self.omitted), None)
        shown = message if tokens is None else placeholder(message, tokens)
        return ViewMessage(shown, seqs)


def _anchors(records: Sequence[Record], *, from_start: bool) -> _Anchors:
    """Each snapshot's user entry: the one before it, or (version 2) the one of its ordinal.

    ``from_start``: the view begins at the start of the log, so every user entry is among the
    records. It is the view's start, not the first record's seq, that decides: a read of only
    the kinds the view needs may begin after seq 0 and must anchor the same way.
    """
    found = _Anchors()
    found.omitted = {r.entry.seq: r.entry.tokens for r in records if isinstance(r.entry, Omitted)}
    users = [r.seq for r in records if isinstance(r.entry, UserEntry)]
    by_turn = dict(enumerate(users)) if from_start else None
    last_user: int | None = None
    for record in records:
        entry = record.entry
        if isinstance(entry, UserEntry):
            last_user = record.seq
        elif isinstance(entry, RuntimeContextSnapshot):
            if entry.placement == "user":
                if last_user is not None:
                    found.prepended.setdefault(last_user, []).append(record)
                continue
            anchor = by_turn.get(entry.user_turn) if by_turn is not None else last_user
            if anchor is None:
                found.standalone.add(record.seq)
            else:
                found.separate.setdefault(anchor, []).append(record)
    return found


def _content(record: Record) -> str:
    assert isinstance(record.entry, RuntimeContextSnapshot)
    return record.entry.content


def _user_turn(record: Record, entry: UserEntry, anchors: _Anchors) -> list[ViewMessage]:
    """A user message with its selections in front, then its version-2 snapshots."""
    prepended = anchors.prepended.get(record.seq, [])
    blocks = "\n\n".join(_content(r) for r in prepended if _content(r))
    seqs = (record.seq, *(r.seq for r in prepended))
    if blocks:
        message: Message = UserMessage(prepend_skill_blocks(entry.content, blocks))
    else:
        message = to_message(record) or UserMessage(entry.content)
    turn = [anchors.view(message, seqs)]
    for legacy in anchors.separate.get(record.seq, []):
        shown = anchors.view(UserMessage(_content(legacy)), (legacy.seq,))
        turn.append(ViewMessage(shown.message, shown.seqs, replayed=True))
    return turn


def transcript_from(records: Iterable[Record]) -> list[Message]:
    """The user transcript of ``records``: user, assistant and tool messages only."""
    out: list[Message] = []
    for record in records:
        if record.entry.kind in TRANSCRIPT_KINDS:
            message = to_message(record)
            assert message is not None
            out.append(message)
    return out
