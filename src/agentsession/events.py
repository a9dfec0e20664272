"""Typed events of a turn, as ``session.stream()`` yields them.

``prompt()`` is built on the stream, and the CLI prints from it, so a long turn shows progress as
it happens: text deltas as they arrive, each tool call and result, each committed step, and the
finished turn with its result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from .request import ToolCall, Usage

__all__ = [
    "ContextAdmitted",
    "Event",
    "PromptResult",
    "ProviderRetry",
    "StepCommitted",
    "TextDelta",
    "ToolCallStarted",
    "ToolResultEvent",
    "TurnFinished",
]


@dataclass(frozen=True)
class PromptResult:
    """The outcome of one prompt: the final assistant text, steps taken and summed usage."""

    text: str
    steps: int
    usage: Usage = field(default_factory=Usage)
    session_id: str = ""


@dataclass(frozen=True)
class TextDelta:
    """A piece of assistant text as the model produces it."""

    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ToolCallStarted:
    """The model called a tool; it is about to run."""

    call: ToolCall
    kind: Literal["tool_call_started"] = "tool_call_started"


@dataclass(frozen=True)
class ToolResultEvent:
    """A tool call's result, as stored and as the model will read it."""

    call_id: str
    name: str
    content: str
    is_error: bool
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class ContextAdmitted:
    """System Context changes were admitted at this boundary (keys in component order)."""

    keys: tuple[str, ...]
    new_epoch: bool
    kind: Literal["context_admitted"] = "context_admitted"


@dataclass(frozen=True)
class ProviderRetry:
    """A transient provider failure; the same admitted request is sent again."""

    attempt: int
    error: str
    kind: Literal["provider_retry"] = "provider_retry"


@dataclass(frozen=True)
class StepCommitted:
    """A step's entries are durable: ``first_seq`` to ``last_seq`` inclusive."""

    step: int
    first_seq: int
    last_seq: int
    what: Literal["admission", "response", "tool_result"]
    kind: Literal["step_committed"] = "step_committed"


@dataclass(frozen=True)
class TurnFinished:
    """The model replied with text and no tool calls; the turn is over."""

    result: PromptResult
    kind: Literal["turn_finished"] = "turn_finished"


Event: TypeAlias = (
    TextDelta
    | ToolCallStarted
    | ToolResultEvent
    | ContextAdmitted
    | ProviderRetry
    | StepCommitted
    | TurnFinished
)
