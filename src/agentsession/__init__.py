"""agentsession: durable LLM-agent sessions.

The model always acts on the current System Context, the provider's prompt cache stays warm while
that context changes, nothing admitted is lost or sent twice, and every request can be shown
exactly. Everything public is importable from here; see ``__all__``.
"""

# No ``from __future__ import annotations`` here or in ``__main__``: that statement imports the
# module ``__future__``, which ``python -m agentsession`` would find in the current folder before
# ``__main__`` starts again without it on the path. Annotations that need a name only type
# checkers import are quoted.
import importlib

# Not ``typing.TYPE_CHECKING``: importing ``typing`` alone costs more than the rest of this module.
TYPE_CHECKING = False
if TYPE_CHECKING:  # every public name, for type checkers; at run time each loads when used
    from typing import Any

    from .config import Config
    from .context import (
        ABSENT,
        UNAVAILABLE,
        ComponentHandle,
        ContextComponent,
        PluginScope,
        Rendered,
    )
    from .engine.inbox import PendingInput
    from .errors import (
        AgentSessionError,
        BudgetExceededError,
        ConflictError,
        ContextLoadError,
        ContextOverflowError,
        CorruptEntryError,
        CredentialsError,
        MaxStepsExceededError,
        ProviderError,
        RequestValidationError,
        SessionBusyError,
        SessionFileError,
        SessionNotFoundError,
        StoreError,
        TransientProviderError,
        UnknownFormatError,
        UnknownModelError,
        UsageError,
    )
    from .events import (
        ApprovalNeeded,
        ApprovalRequest,
        ContextAdmitted,
        CostAlert,
        Event,
        PromptResult,
        ProviderRetry,
        StepCommitted,
        StopReason,
        TextDelta,
        ToolCallStarted,
        ToolResultEvent,
        TurnFinished,
        TurnStream,
    )
    from .inspection.timing import TimingSpan, TurnUsage
    from .inspection.views import (
        ContextView,
        EpochInfo,
        Inspection,
        RequestInfo,
        TimelineItem,
        TurnInfo,
    )
    from .ledger import CacheMiss, CostEstimate, CostSummary, ModelCost
    from .ledger.idle import IdleOutcome
    from .ledger.prices import ModelPrice
    from .log import (
        ContextEpoch,
        MidConversationSystemMessage,
        RuntimeContextSnapshot,
        SkillRevision,
        SystemPromptCheckpoint,
    )
    from .mcp import MCPServer
    from .permissions import Decision, PermissionPreset
    from .portability import ImportReport, import_session
    from .providers import Model, ModelProfile, ScriptedModel, get_model, lower
    from .request import (
        AssistantMessage,
        ImagePart,
        Message,
        Request,
        SystemMessage,
        TextPart,
        ToolCall,
        ToolResultMessage,
        ToolSpec,
        Usage,
        UserMessage,
    )
    from .runtime import Runtime
    from .session import Session
    from .skills import (
        Skill,
        SkillContext,
        SkillDiagnostic,
        SkillSet,
        SkillStore,
        discover_skills,
        skill_context,
    )
    from .skills.library import describe_skills
    from .sources import ContextSource, SourceFactory
    from .store import Lease, MemoryStore, SessionInfo, SQLiteStore, Store
    from .store.postgres import PostgresStore
    from .store.search import SearchHit
    from .tools import Tool, ToolContext, ToolOutcome, tool
    from .tools.builtin import builtin_tools

__version__ = "0.1.0"


#: Where each public name lives. ``import agentsession`` imports none of them (nor anything
#: outside the standard library): a name loads its module when it is first used, so
#: ``--version`` and ``--help`` stay fast, and ``python -m agentsession`` has run nothing a
#: folder could shadow before ``__main__`` decides how to start.
_LAZY: dict[str, str] = {
    "Config": "config",
    **dict.fromkeys(
        ("ABSENT", "ComponentHandle", "ContextComponent", "PluginScope", "Rendered", "UNAVAILABLE"),
        "context",
    ),
    **dict.fromkeys(("ContextSource", "SourceFactory"), "sources"),
    **dict.fromkeys(("ImportReport", "import_session"), "portability"),
    "SearchHit": "store.search",
    **dict.fromkeys(
        (
            "AgentSessionError",
            "BudgetExceededError",
            "ConflictError",
            "ContextLoadError",
            "ContextOverflowError",
            "CorruptEntryError",
            "CredentialsError",
            "MaxStepsExceededError",
            "ProviderError",
            "RequestValidationError",
            "SessionBusyError",
            "SessionFileError",
            "SessionNotFoundError",
            "StoreError",
            "TransientProviderError",
            "UnknownFormatError",
            "UnknownModelError",
            "UsageError",
        ),
        "errors",
    ),
    **dict.fromkeys(
        (
            "ApprovalNeeded",
            "ApprovalRequest",
            "ContextAdmitted",
            "CostAlert",
            "Event",
            "PromptResult",
            "ProviderRetry",
            "StepCommitted",
            "StopReason",
            "TextDelta",
            "ToolCallStarted",
            "ToolResultEvent",
            "TurnFinished",
            "TurnStream",
        ),
        "events",
    ),
    **dict.fromkeys(
        ("ContextView", "EpochInfo", "Inspection", "RequestInfo", "TimelineItem", "TurnInfo"),
        "inspection.views",
    ),
    **dict.fromkeys(("TimingSpan", "TurnUsage"), "inspection.timing"),
    **dict.fromkeys(("CacheMiss", "CostEstimate", "CostSummary", "ModelCost"), "ledger"),
    "IdleOutcome": "ledger.idle",
    "PendingInput": "engine.inbox",
    "ModelPrice": "ledger.prices",
    **dict.fromkeys(
        (
            "ContextEpoch",
            "MidConversationSystemMessage",
            "RuntimeContextSnapshot",
            "SkillRevision",
            "SystemPromptCheckpoint",
        ),
        "log",
    ),
    "MCPServer": "mcp",
    **dict.fromkeys(("Decision", "PermissionPreset"), "permissions"),
    **dict.fromkeys(("Model", "ModelProfile", "ScriptedModel", "get_model", "lower"), "providers"),
    **dict.fromkeys(
        (
            "AssistantMessage",
            "ImagePart",
            "Message",
            "Request",
            "SystemMessage",
            "TextPart",
            "ToolCall",
            "ToolResultMessage",
            "ToolSpec",
            "Usage",
            "UserMessage",
        ),
        "request",
    ),
    "Runtime": "runtime",
    "Session": "session",
    **dict.fromkeys(
        (
            "Skill",
            "SkillContext",
            "SkillDiagnostic",
            "SkillSet",
            "SkillStore",
            "discover_skills",
            "skill_context",
        ),
        "skills",
    ),
    "describe_skills": "skills.library",
    **dict.fromkeys(("Lease", "MemoryStore", "SQLiteStore", "SessionInfo", "Store"), "store"),
    "PostgresStore": "store.postgres",
    **dict.fromkeys(("Tool", "ToolContext", "ToolOutcome", "tool"), "tools"),
    "builtin_tools": "tools.builtin",
}


def __getattr__(name: str) -> "Any":
    if name == "server":  # the HTTP server (the "server" extra) loads with its first use
        return importlib.import_module(".server", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ABSENT",
    "UNAVAILABLE",
    "AgentSessionError",
    "ApprovalNeeded",
    "ApprovalRequest",
    "AssistantMessage",
    "BudgetExceededError",
    "CacheMiss",
    "ComponentHandle",
    "Config",
    "ConflictError",
    "ContextAdmitted",
    "ContextComponent",
    "ContextEpoch",
    "ContextLoadError",
    "ContextOverflowError",
    "ContextSource",
    "ContextView",
    "CorruptEntryError",
    "CostAlert",
    "CostEstimate",
    "CostSummary",
    "CredentialsError",
    "Decision",
    "EpochInfo",
    "Event",
    "IdleOutcome",
    "ImagePart",
    "ImportReport",
    "Inspection",
    "Lease",
    "MCPServer",
    "MaxStepsExceededError",
    "MemoryStore",
    "Message",
    "MidConversationSystemMessage",
    "Model",
    "ModelCost",
    "ModelPrice",
    "ModelProfile",
    "PendingInput",
    "PermissionPreset",
    "PluginScope",
    "PostgresStore",
    "PromptResult",
    "ProviderError",
    "ProviderRetry",
    "Rendered",
    "Request",
    "RequestInfo",
    "RequestValidationError",
    "Runtime",
    "RuntimeContextSnapshot",
    "SQLiteStore",
    "ScriptedModel",
    "SearchHit",
    "Session",
    "SessionBusyError",
    "SessionFileError",
    "SessionInfo",
    "SessionNotFoundError",
    "Skill",
    "SkillContext",
    "SkillDiagnostic",
    "SkillRevision",
    "SkillSet",
    "SkillStore",
    "SourceFactory",
    "StepCommitted",
    "StopReason",
    "Store",
    "StoreError",
    "SystemMessage",
    "SystemPromptCheckpoint",
    "TextDelta",
    "TextPart",
    "TimelineItem",
    "TimingSpan",
    "Tool",
    "ToolCall",
    "ToolCallStarted",
    "ToolContext",
    "ToolOutcome",
    "ToolResultEvent",
    "ToolResultMessage",
    "ToolSpec",
    "TransientProviderError",
    "TurnFinished",
    "TurnInfo",
    "TurnStream",
    "TurnUsage",
    "UnknownFormatError",
    "UnknownModelError",
    "Usage",
    "UsageError",
    "UserMessage",
    "__version__",
    "builtin_tools",
    "describe_skills",
    "discover_skills",
    "get_model",
    "import_session",
    "lower",
    "skill_context",
    "tool",
]
