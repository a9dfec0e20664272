"""agentsession: durable LLM-agent sessions.

The model always acts on the current System Context, the provider's prompt cache stays warm while
that context changes, nothing admitted is lost or sent twice, and every request can be shown
exactly. Everything public is importable from here; see ``__all__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .config import Config
from .context import (
    ABSENT,
    UNAVAILABLE,
    ComponentHandle,
    ContextComponent,
    PluginScope,
    Rendered,
)
from .engine.costs import CostEstimate
from .engine.parts import ContextSource, SourceFactory
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
from .ledger import CostSummary, ModelCost
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
from .store import Lease, MemoryStore, SessionInfo, SQLiteStore, Store
from .store.search import SearchHit
from .tools import Tool, ToolContext, ToolOutcome, tool

if TYPE_CHECKING:
    from .inspection.views import (
        ContextView,
        EpochInfo,
        Inspection,
        RequestInfo,
        TimelineItem,
        TurnInfo,
    )
    from .store.postgres import PostgresStore
    from .tools.builtin import builtin_tools

__version__ = "0.1.0"


#: Names imported when first used, not by ``import agentsession``: PostgreSQL's driver and the
#: inspection views take longer to import than the rest of the package, and most programs
#: never use them.
_LAZY = {
    "PostgresStore": "store.postgres",
    **dict.fromkeys(
        ("ContextView", "EpochInfo", "Inspection", "RequestInfo", "TimelineItem", "TurnInfo"),
        "inspection.views",
    ),
    "builtin_tools": "tools.builtin",  # the built-in tools' module: only a program that adds them
}


def __getattr__(name: str) -> Any:
    if name == "server":  # the HTTP server (the "server" extra) loads with its first use
        return importlib.import_module(".server", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ABSENT",
    "UNAVAILABLE",
    "AgentSessionError",
    "ApprovalNeeded",
    "ApprovalRequest",
    "AssistantMessage",
    "BudgetExceededError",
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
    "CostEstimate",
    "CostSummary",
    "CredentialsError",
    "Decision",
    "EpochInfo",
    "Event",
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
