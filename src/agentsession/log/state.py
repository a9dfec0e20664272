"""Entry types of a session's own state: permissions, loaded skills, instruction files, approvals.

A session rebuilds this state from these entries when it is opened; none of them is part of the
user transcript or of the model view.
"""

from __future__ import annotations

from typing import Literal

from .._frozen import frozen

__all__ = [
    "STATE_KINDS",
    "ApprovalDecided",
    "ApprovalRequested",
    "ApprovalsDropped",
    "InstructionsFound",
    "PermissionChanged",
    "SkillActivated",
    "SkillLoaded",
    "SkillStoreWrite",
    "SkillUnloaded",
    "ToolLoaded",
    "ToolUnloaded",
]


@frozen(slots=True)
class PermissionChanged:
    """The session's permission preset changed (recorded by ``set_permission_preset``)."""

    preset: str
    previous: str
    timestamp: str = ""
    kind: Literal["permission_changed"] = "permission_changed"


@frozen(slots=True)
class SkillLoaded:
    """A skill joined the loaded skills (its instructions and tools join the request)."""

    name: str
    revision: str
    location: str = ""
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["skill_loaded"] = "skill_loaded"


@frozen(slots=True)
class SkillUnloaded:
    """A skill left the loaded skills (pushed out by newer reads); its history stays."""

    name: str
    revision: str = ""
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["skill_unloaded"] = "skill_unloaded"


@frozen(slots=True)
class SkillActivated:
    """A loaded skill was read again and became the active (most recent) one."""

    name: str
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["skill_activated"] = "skill_activated"


@frozen(slots=True)
class SkillStoreWrite:
    """One write to a skill's durable per-session store; ``value`` is JSON text."""

    skill: str
    key: str
    value: str = "null"
    deleted: bool = False
    timestamp: str = ""
    kind: Literal["skill_store"] = "skill_store"


@frozen(slots=True)
class ToolLoaded:
    """``search_tools`` found a deferred tool: it joins the request (or becomes most recent)."""

    name: str
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["tool_loaded"] = "tool_loaded"


@frozen(slots=True)
class ToolUnloaded:
    """A deferred tool left the loaded tools (pushed out by newer finds): ``Unknown tool``."""

    name: str
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["tool_unloaded"] = "tool_unloaded"


@frozen(slots=True)
class InstructionsFound:
    """Nested instruction files a tool's read discovered; they join the System Context."""

    paths: tuple[str, ...]
    call_id: str = ""
    timestamp: str = ""
    kind: Literal["instructions_found"] = "instructions_found"


@frozen(slots=True)
class ApprovalRequested:
    """A tool call waits for the user's approval (its preset asks); the turn pauses."""

    call_id: str
    name: str
    reason: str
    timestamp: str = ""
    kind: Literal["approval_requested"] = "approval_requested"


@frozen(slots=True)
class ApprovalDecided:
    """The user's answer to an approval request; ``always`` approves the tool for the session."""

    call_id: str
    approved: bool
    always: bool = False
    note: str = ""
    timestamp: str = ""
    kind: Literal["approval_decided"] = "approval_decided"


@frozen(slots=True)
class ApprovalsDropped:
    """Approvals remembered for the session ("always") no longer apply (an import brings none).

    ``tools`` names the tools they covered; ``reason`` says why, for the reader of the log.
    """

    tools: tuple[str, ...]
    reason: str
    timestamp: str = ""
    kind: Literal["approvals_dropped"] = "approvals_dropped"


#: What a session reads once when it is opened to rebuild its state: every kind defined here,
#: and the explicit skill selections (``runtime_context``) that ``runtime_contexts()`` returns.
STATE_KINDS: tuple[str, ...] = (
    "runtime_context",
    "permission_changed",
    "skill_loaded",
    "skill_unloaded",
    "skill_activated",
    "skill_store",
    "tool_loaded",
    "tool_unloaded",
    "instructions_found",
    "approval_requested",
    "approval_decided",
    "approvals_dropped",
    # The inbox (``log.inbox``): what was accepted, delivered or withdrawn.
    "input_queued",
    "input_delivered",
    "input_cancelled",
)
