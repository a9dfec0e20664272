"""The durable session log: entry types and their versioned stored form.

A session is an append-only log of entries numbered ``seq`` 0, 1, 2, … Each entry is a frozen
dataclass with a ``kind`` literal. The stored form is one JSON object per entry, written by
``dump_entry`` as ``(kind, version, json)``; ``load_entry`` reads every version ever written by
first upgrading older payloads step by step (``_UPGRADES``), so old databases and session files
keep loading. Vendor SDK types are never stored.

The user transcript and the model view are both derived from this log; nothing is stored twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias, get_args

from .codec import DecodeError, decode, encode
from .errors import CorruptEntryError
from .request import ContentPart, ToolCall, Usage

__all__ = [
    "TRANSCRIPT_KINDS",
    "VERSIONS",
    "ApprovalDecided",
    "ApprovalRequested",
    "AssistantEntry",
    "CacheDiagnosis",
    "ComponentChange",
    "ContextEpoch",
    "Dispatch",
    "EpochReason",
    "InstructionsFound",
    "Interrupted",
    "LogEntry",
    "MidConversationSystemMessage",
    "ModelSwitched",
    "PermissionChanged",
    "ProviderFailed",
    "Record",
    "RuntimeContextSnapshot",
    "SkillActivated",
    "SkillLoaded",
    "SkillRevision",
    "SkillStoreWrite",
    "SkillUnloaded",
    "Summary",
    "SystemPromptCheckpoint",
    "ToolResultEntry",
    "UserEntry",
    "dump_entry",
    "load_entry",
    "now",
]


def now() -> str:
    """The current UTC time in the log's timestamp format (ISO 8601)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class UserEntry:
    """User input as given: a string, or a tuple of text and image parts."""

    content: str | tuple[ContentPart, ...]
    timestamp: str = ""
    kind: Literal["user"] = "user"


@dataclass(frozen=True)
class AssistantEntry:
    """A model response with the usage figures the provider reported for it."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    provider: str = ""
    provider_data: dict[str, Any] = field(default_factory=dict)
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    timestamp: str = ""
    kind: Literal["assistant"] = "assistant"


@dataclass(frozen=True)
class ToolResultEntry:
    """The settled result of one tool call."""

    call_id: str
    name: str
    content: str | tuple[ContentPart, ...]
    is_error: bool = False
    timestamp: str = ""
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
    "start", "compaction", "model_switch", "window", "manual", "tools", "location"
]


@dataclass(frozen=True)
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
    kind: Literal["epoch"] = "epoch"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class ProviderFailed:
    """The dispatched request failed; the admitted context stays for ``retry()``."""

    error: str
    error_type: str = ""
    timestamp: str = ""
    kind: Literal["provider_failed"] = "provider_failed"


@dataclass(frozen=True)
class Interrupted:
    """A dispatched step found unfinished on reopen (the process died), recorded truthfully."""

    reason: str
    timestamp: str = ""
    kind: Literal["interrupted"] = "interrupted"


@dataclass(frozen=True)
class Summary:
    """A compaction summary; it opens the epoch that follows it."""

    text: str
    covers_until: int
    timestamp: str = ""
    kind: Literal["summary"] = "summary"


@dataclass(frozen=True)
class ModelSwitched:
    """The session's model changed; a new epoch follows."""

    model: str
    previous: str
    timestamp: str = ""
    kind: Literal["model_switched"] = "model_switched"


@dataclass(frozen=True)
class SkillRevision:
    """One explicitly selected skill as it was read: its name, where from, and which revision.

    ``revision`` is the content hash of what was read, so repeated selections of a skill whose
    file changed in between keep their own, independent revisions.
    """

    name: str
    location: str
    revision: str
    kind: Literal["skill_revision"] = "skill_revision"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class PermissionChanged:
    """The session's permission preset changed (recorded by ``set_permission_preset``)."""

    preset: str
    previous: str
    timestamp: str = ""
    kind: Literal["permission_changed"] = "permission_changed"


@dataclass(frozen=True)
class SkillLoaded:
    """A skill joined the loaded skills (its instructions and tools join the request)."""

    name: str
    revision: str
    location: str = ""
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["skill_loaded"] = "skill_loaded"


@dataclass(frozen=True)
class SkillUnloaded:
    """A skill left the loaded skills (pushed out by newer reads); its history stays."""

    name: str
    revision: str = ""
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["skill_unloaded"] = "skill_unloaded"


@dataclass(frozen=True)
class SkillActivated:
    """A loaded skill was read again and became the active (most recent) one."""

    name: str
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["skill_activated"] = "skill_activated"


@dataclass(frozen=True)
class SkillStoreWrite:
    """One write to a skill's durable per-session store; ``value`` is JSON text."""

    skill: str
    key: str
    value: str = "null"
    deleted: bool = False
    timestamp: str = ""
    kind: Literal["skill_store"] = "skill_store"


@dataclass(frozen=True)
class InstructionsFound:
    """Nested instruction files a tool's read discovered; they join the System Context."""

    paths: tuple[str, ...]
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["instructions_found"] = "instructions_found"


@dataclass(frozen=True)
class ApprovalRequested:
    """A tool call waits for the user's approval (its preset asks); the turn pauses."""

    call_id: str
    name: str
    reason: str
    timestamp: str = ""
    kind: Literal["approval_requested"] = "approval_requested"


@dataclass(frozen=True)
class ApprovalDecided:
    """The user's answer to an approval request; ``always`` approves the tool for the session."""

    call_id: str
    approved: bool
    always: bool = False
    note: str = ""
    timestamp: str = ""
    kind: Literal["approval_decided"] = "approval_decided"


LogEntry: TypeAlias = (
    UserEntry
    | AssistantEntry
    | ToolResultEntry
    | MidConversationSystemMessage
    | ContextEpoch
    | SystemPromptCheckpoint
    | Dispatch
    | ProviderFailed
    | Interrupted
    | Summary
    | ModelSwitched
    | RuntimeContextSnapshot
    | PermissionChanged
    | SkillLoaded
    | SkillUnloaded
    | SkillActivated
    | SkillStoreWrite
    | InstructionsFound
    | ApprovalRequested
    | ApprovalDecided
)

#: Entry kinds that make up the user transcript (``session.messages``).
TRANSCRIPT_KINDS: tuple[str, ...] = ("user", "assistant", "tool_result")

_TYPES: dict[str, type[Any]] = {
    str(cls.__dataclass_fields__["kind"].default): cls for cls in get_args(LogEntry)
}

#: The version each kind is written with today.
VERSIONS: dict[str, int] = {**dict.fromkeys(_TYPES, 1), "epoch": 3, "dispatch": 2}


def _epoch_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 1 epochs were never opened by a compaction summary.
    return {**payload, "summary_seq": None}


def _epoch_v2_to_v3(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 2 epochs did not record their tools: they declared the application's tools.
    return {**payload, "tools": None}


def _dispatch_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 1 stored the diagnosis as free text and no part digests: a value outside the
    # diagnosis type says nothing we can use, and the next request cannot be compared with it.
    cache = payload.get("cache")
    known = get_args(CacheDiagnosis)
    return {**payload, "cache": cache if cache in known else "unknown"}


#: Upgrades of stored payloads: (kind, version) -> function returning the version + 1 payload.
_UPGRADES: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("epoch", 1): _epoch_v1_to_v2,
    ("epoch", 2): _epoch_v2_to_v3,
    ("dispatch", 1): _dispatch_v1_to_v2,
}


@dataclass(frozen=True)
class Record:
    """A stored entry with its position in the session log."""

    seq: int
    entry: LogEntry


def dump_entry(entry: LogEntry) -> tuple[str, int, str]:
    """The stored form of ``entry``: its kind, the current version of that kind, and JSON."""
    payload = encode(entry)
    text = json.dumps(payload, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (a model's JSON can hold "\ud800") have no UTF-8 form; JSON escapes
        # carry them losslessly into any store or file.
        text = json.dumps(payload, ensure_ascii=True)
    return entry.kind, VERSIONS[entry.kind], text


def load_entry(
    kind: str, version: int, data: str, *, session_id: str = "", seq: int | None = None
) -> LogEntry:
    """Decode a stored entry of any known version; ``CorruptEntryError`` when it cannot be."""
    cls = _TYPES.get(kind)
    if cls is None:
        raise CorruptEntryError(f"unknown entry kind {kind!r}", session_id=session_id, seq=seq)
    current = VERSIONS[kind]
    if version > current:
        raise CorruptEntryError(
            f"entry kind {kind!r} has version {version}, newer than this agentsession reads"
            f" ({current}); upgrade agentsession",
            session_id=session_id,
            seq=seq,
        )
    try:
        payload = json.loads(data)
    except (json.JSONDecodeError, TypeError) as exc:
        raise CorruptEntryError(
            f"entry is not valid JSON: {exc}", session_id=session_id, seq=seq
        ) from exc
    if not isinstance(payload, dict):
        raise CorruptEntryError("entry is not a JSON object", session_id=session_id, seq=seq)
    while version < current:
        upgrade = _UPGRADES.get((kind, version))
        if upgrade is None:
            raise CorruptEntryError(
                f"no upgrade for {kind!r} version {version}", session_id=session_id, seq=seq
            )
        payload = upgrade(payload)
        version += 1
    payload.setdefault("kind", kind)
    if payload["kind"] != kind:
        raise CorruptEntryError(
            f"entry says kind {payload['kind']!r} but is stored as {kind!r}",
            session_id=session_id,
            seq=seq,
        )
    try:
        entry: LogEntry = decode(cls, payload)
    except DecodeError as exc:
        raise CorruptEntryError(
            f"malformed {kind!r} entry: {exc}", session_id=session_id, seq=seq
        ) from exc
    return entry
