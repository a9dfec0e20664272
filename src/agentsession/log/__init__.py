"""The durable session log: entry types and their versioned stored form.

A session is an append-only log of entries numbered ``seq`` 0, 1, 2, … Each entry is a frozen
dataclass with a ``kind`` literal. The stored form is one JSON object per entry, written by
``dump_entry`` as ``(kind, version, json)``; ``load_entry`` reads every version ever written by
first upgrading older payloads step by step (``log.upgrades``), so old databases and session files
keep loading. Vendor SDK types are never stored.

The user transcript and the model view are both derived from this log; nothing is stored twice.
"""

from __future__ import annotations

from .entries import (
    AssistantEntry,
    CacheDiagnosis,
    ComponentChange,
    ContextEpoch,
    Dispatch,
    EpochReason,
    Interrupted,
    MidConversationSystemMessage,
    ModelSwitched,
    Omitted,
    ProviderCompaction,
    ProviderFailed,
    RuntimeContextSnapshot,
    SideCall,
    SkillRevision,
    Summary,
    SystemPromptCheckpoint,
    ToolResultEntry,
    UserEntry,
    now,
)
from .inbox import INBOX_KINDS, InputCancelled, InputDelivered, InputMode, InputQueued
from .state import (
    STATE_KINDS,
    ApprovalDecided,
    ApprovalRequested,
    ApprovalsDropped,
    InstructionsFound,
    PermissionChanged,
    SkillActivated,
    SkillLoaded,
    SkillStoreWrite,
    SkillUnloaded,
    ToolLoaded,
    ToolUnloaded,
)
from .stored import (
    TRANSCRIPT_KINDS,
    VERSIONS,
    LogEntry,
    Record,
    dump_entry,
    dump_row,
    load_entry,
    text_refs,
)

__all__ = [
    "INBOX_KINDS",
    "STATE_KINDS",
    "TRANSCRIPT_KINDS",
    "VERSIONS",
    "ApprovalDecided",
    "ApprovalRequested",
    "ApprovalsDropped",
    "AssistantEntry",
    "CacheDiagnosis",
    "ComponentChange",
    "ContextEpoch",
    "Dispatch",
    "EpochReason",
    "InputCancelled",
    "InputDelivered",
    "InputMode",
    "InputQueued",
    "InstructionsFound",
    "Interrupted",
    "LogEntry",
    "MidConversationSystemMessage",
    "ModelSwitched",
    "Omitted",
    "PermissionChanged",
    "ProviderCompaction",
    "ProviderFailed",
    "Record",
    "RuntimeContextSnapshot",
    "SideCall",
    "SkillActivated",
    "SkillLoaded",
    "SkillRevision",
    "SkillStoreWrite",
    "SkillUnloaded",
    "Summary",
    "SystemPromptCheckpoint",
    "ToolLoaded",
    "ToolResultEntry",
    "ToolUnloaded",
    "UserEntry",
    "dump_entry",
    "dump_row",
    "load_entry",
    "now",
    "text_refs",
]
