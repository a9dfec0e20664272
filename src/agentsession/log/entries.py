"""Entry types of the conversation and of the System Context: what the model saw and why.

Each entry is a frozen dataclass with a ``kind`` literal; its stored form is written by
``log.stored``. User, assistant and tool-result entries make up the user transcript; the others
are runtime metadata the model view or the inspection tools read.
"""

from __future__ import annotations

import time
from dataclasses import field
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from .._frozen import frozen
from ..request import ContentPart, ToolCall, Usage

__all__ = [
    "AssistantEntry",
    "CacheDiagnosis",
    "ComponentChange",
    "ContextEpoch",
    "Dispatch",
    "EpochReason",
    "Interrupted",
    "MidConversationSystemMessage",
    "ModelSwitched",
    "Omitted",
    "ProviderCompaction",
    "ProviderFailed",
    "RuntimeContextSnapshot",
    "SideCall",
    "SkillRevision",
    "Summary",
    "SystemPromptCheckpoint",
    "ToolResultEntry",
    "UserEntry",
    "now",
]


def now() -> str:
    """The current UTC time in the log's timestamp format (ISO 8601)."""
    # The clock ``datetime.now`` reads, cut to microseconds the same way (towards the past).
    return _stamp(time.time_ns() // 1_000)


#: The second the last stamp fell in and its text up to the fraction: one tuple, so a thread
#: reads both together (threads racing to replace it write the same value).
_last_second: tuple[int, str] = (-1, "")


def _stamp(micros: int) -> str:
    """``micros`` (microseconds since the epoch) as ``datetime.isoformat`` writes it in UTC.

    ``isoformat`` renders every field through C's printf (about 13,000 instructions, at each
    entry and at each commit); the date and time of day change once a second, so that part is
    rendered once per second and kept, and only the fraction is formatted at each call.
    """
    global _last_second
    second, fraction = divmod(micros, 1_000_000)
    kept = _last_second
    if kept[0] != second:
        whole = datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds")
        kept = _last_second = (second, whole[:19])  # without its "+00:00"
    return f"{kept[1]}.{fraction:06d}+00:00"


@frozen(slots=True)
class UserEntry:
    """User input as given: a string, or a tuple of text and image parts."""

    content: str | tuple[ContentPart, ...]
    timestamp: str = ""
    kind: Literal["user"] = "user"


@frozen(slots=True)
class AssistantEntry:
    """A model response with the usage figures the provider reported for it.

    ``response_id`` is the provider's id of the response (the next request may ask the provider
    to compare against it); ``provider_cache`` the provider's own cache diagnosis of the request
    this answers (``""``: none asked or given; ``"hit"``; or its miss reason, e.g.
    ``"messages_changed"``), kept beside the local diagnosis of the dispatch record before it.
    ``usage_estimated``: the figures are the model's guess, not the provider's count, or the
    provider's figures had to be corrected (``usage_note`` says why: negative, not an integer,
    beyond range, parts above the whole).
    ``sent_at`` is when the request was sent by the runtime's clock (cache lifetimes are
    judged by it; ``timestamp`` is the wall clock's). ``replaced_surrogates``: how many lone
    UTF-16 surrogates the reply's text, tool names and arguments held on arrival, each stored
    as U+FFFD (text that cannot be encoded would fail every later request). ``cache_ttl`` and
    ``cache_diagnose``: the cache lifetime the request asked for (``"5m"``, ``"1h"``) and whether
    it asked for the provider's cache diagnosis, so the request can be shown as it was sent
    (``""``: not recorded, a response stored before they were). ``first_token_at`` is when
    the provider's first event of the answering attempt arrived (wall clock, like
    ``timestamp``): the time to first token is its distance from the dispatch record's
    ``timestamp`` (``""``: a response stored before it was recorded).
    """

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    provider: str = ""
    provider_data: dict[str, Any] = field(default_factory=dict)
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    timestamp: str = ""
    response_id: str = ""
    provider_cache: str = ""
    usage_estimated: bool = False
    sent_at: str = ""
    usage_note: str = ""
    replaced_surrogates: int = 0
    cache_ttl: str = ""
    cache_diagnose: bool = False
    first_token_at: str = ""
    kind: Literal["assistant"] = "assistant"


@frozen(slots=True)
class ToolResultEntry:
    """The settled result of one tool call.

    ``started_at`` is when the tool began to run (wall clock; ``""`` for a result no tool ran
    for — refused, synthetic — or one stored before it was recorded); ``timestamp`` is when it
    settled, so the two give the tool's duration.
    """

    call_id: str
    name: str
    content: str | tuple[ContentPart, ...]
    is_error: bool = False
    timestamp: str = ""
    started_at: str = ""
    kind: Literal["tool_result"] = "tool_result"


@frozen(slots=True)
class ComponentChange:
    """One component's admitted change: ``update`` is ``None`` when it was removed.

    ``baseline`` is stored beside the update so a later baseline can be rebuilt from the last
    admitted state when the component is unavailable then; ``hash`` is the checkpoint value.
    """

    key: str
    update: str | None
    baseline: str | None
    hash: str | None
    kind: Literal["component_change"] = "component_change"


@frozen(slots=True)
class MidConversationSystemMessage:
    """A durable chronological instruction: the newly effective state of changed components.

    ``text`` is exactly what the model was sent; ``changes`` advance the epoch's checkpoint in the
    same transaction. Hidden from the user transcript.
    """

    text: str
    changes: tuple[ComponentChange, ...]
    epoch: int
    tools_added: tuple[str, ...] = ()
    tools_removed: tuple[str, ...] = ()
    timestamp: str = ""
    kind: Literal["mid_conversation_system"] = "mid_conversation_system"


EpochReason: TypeAlias = Literal[
    "start", "compaction", "model_switch", "window", "manual", "tools", "location", "import"
]


@frozen(slots=True)
class ContextEpoch:
    """The start of a context epoch: its immutable baseline and initial checkpoint.

    ``baseline`` holds keyed component strings verbatim (reused across restarts); ``checkpoint``
    maps each key to the hash of its update string; ``removed`` lists keys of the prior epoch that
    are gone. ``history_start`` is the first log ``seq`` the model view of this epoch reads;
    ``summary_seq`` points at the compaction summary that opens the epoch (version 2). ``tools``
    names the tools the epoch's first request declared, in order (version 3; ``None`` in older
    epochs, which declared whatever the application's tools were).
    """

    epoch: int
    baseline: tuple[tuple[str, str], ...]
    checkpoint: tuple[tuple[str, str], ...]
    history_start: int
    reason: EpochReason = "start"
    model: str = ""
    removed: tuple[str, ...] = ()
    summary_seq: int | None = None
    timestamp: str = ""
    tools: tuple[str, ...] | None = None
    provider: str = ""
    kind: Literal["epoch"] = "epoch"


@frozen(slots=True)
class SystemPromptCheckpoint:
    """The public record of one dispatched request's system context.

    ``message_count`` is the number of user-transcript messages at dispatch; ``changed`` maps a
    component key to its rendered text, or ``None`` when it was removed. The first dispatch of an
    epoch records every baseline section; later ones record only what changed.
    """

    message_count: int
    timestamp: str
    changed: dict[str, str | None]
    kind: Literal["system_prompt_checkpoint"] = "system_prompt_checkpoint"


CacheDiagnosis: TypeAlias = Literal[
    "first",
    "unknown",
    "hit",
    "model_changed",
    "tools_changed",
    "system_changed",
    "messages_changed",
]
"""The expected prompt-cache outcome of a request against the one dispatched before it."""


@frozen(slots=True)
class Dispatch:
    """A request was sent to the model (committed right before the call).

    ``digest`` identifies the whole request (a retry must reproduce it). ``cache`` is the local
    cache diagnosis against the previous dispatch; the part digests and ``message_count`` let the
    next request be diagnosed against this one without keeping the request (also after a reopen):
    ``messages_digest`` chains the digests of the first ``message_count`` messages.
    """

    model: str
    step: int
    digest: str
    cache: CacheDiagnosis = "unknown"
    timestamp: str = ""
    tools_digest: str = ""
    system_digest: str = ""
    messages_digest: str = ""
    message_count: int = 0
    kind: Literal["dispatch"] = "dispatch"


@frozen(slots=True)
class ProviderFailed:
    """The dispatched request failed; the admitted context stays for ``retry()``."""

    error: str
    error_type: str = ""
    timestamp: str = ""
    kind: Literal["provider_failed"] = "provider_failed"


@frozen(slots=True)
class Interrupted:
    """A dispatched step found unfinished on reopen (the process died), recorded truthfully."""

    reason: str
    timestamp: str = ""
    kind: Literal["interrupted"] = "interrupted"


@frozen(slots=True)
class ProviderCompaction:
    """A provider's own compaction block, kept as the provider returned it.

    ``format`` is the wire format that wrote it (``"anthropic-messages"``); ``block`` is the
    block's JSON object exactly as it came (summary text, signature, opaque content), sent back
    unchanged on every later request in that format. Another format cannot read it: it gets the
    summary text instead.
    """

    format: str
    block: dict[str, Any]
    kind: Literal["provider_compaction"] = "provider_compaction"


@frozen(slots=True)
class Summary:
    """A compaction summary; it opens the epoch that follows it.

    ``block`` (version 2): the provider's compaction block when the provider compacted
    (``Config(compaction="provider")``); ``text`` is then the summary text the block holds.
    """

    text: str
    covers_until: int
    timestamp: str = ""
    block: ProviderCompaction | None = None
    kind: Literal["summary"] = "summary"


@frozen(slots=True)
class SideCall:
    """A model call beside the conversation, with the usage the provider reported for it.

    ``purpose`` says which: ``"title"`` (naming the session), ``"compaction"`` (writing a
    summary) or ``"keep_warm"`` (refreshing the provider's cache while the session is idle);
    ``reason`` says why a call no turn needed was made (the idle decision). These requests are
    no turn's and never enter the model view, but they are billed like any other: the cost
    ledger counts them. ``usage_estimated``: the figures are the model's guess, not the
    provider's count.
    """

    purpose: Literal["title", "compaction", "keep_warm"]
    model: str
    usage: Usage = field(default_factory=Usage)
    usage_estimated: bool = False
    timestamp: str = ""
    usage_note: str = ""
    reason: str = ""
    kind: Literal["side_call"] = "side_call"


@frozen(slots=True)
class ModelSwitched:
    """The session's model changed; a new epoch follows.

    A model is its provider and its name: ``provider`` and ``previous_provider`` (the profiles'
    ``provider``; ``""`` in logs written before they were recorded) tell apart two providers'
    models of the same name.
    """

    model: str
    previous: str
    timestamp: str = ""
    provider: str = ""
    previous_provider: str = ""
    kind: Literal["model_switched"] = "model_switched"


@frozen(slots=True)
class SkillRevision:
    """One explicitly selected skill as it was read: its name, where from, and which revision.

    ``revision`` is the content hash of what was read, so repeated selections of a skill whose
    file changed in between keep their own, independent revisions.
    """

    name: str
    location: str
    revision: str
    kind: Literal["skill_revision"] = "skill_revision"


@frozen(slots=True)
class RuntimeContextSnapshot:
    """An explicit skill selection, saved with the user turn it belongs to.

    ``user_turn`` is the zero-based ordinal of that turn among real user messages; ``content`` is
    the exact text the model view shows (the ``<skill …>`` blocks), saved so that a reopened
    session replays it even after the files changed or vanished. ``placement="user"`` prepends it
    to that user message in the model view; ``None`` (version-2 data) replays it as a separate
    user message right after that turn's user message. The stored user input is never rewritten.
    """

    user_turn: int
    content: str
    timestamp: str = ""
    skills: tuple[SkillRevision, ...] = ()
    placement: Literal["user"] | None = "user"
    kind: Literal["runtime_context"] = "runtime_context"


@frozen(slots=True)
class Omitted:
    """A stored item the model view shows as a placeholder from now on: alone it cannot fit.

    ``seq`` is the entry that is too big for any request (``tokens`` as measured when it was
    found out); the entry itself stays in the log unchanged.
    """

    seq: int
    tokens: int
    timestamp: str = ""
    kind: Literal["omitted"] = "omitted"
