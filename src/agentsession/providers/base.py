"""What a model is to the runtime: a profile and a stream of events for one neutral request.

Transport, credentials and wire formats live in the provider modules; the session only sees this
protocol. A model streams ``ModelTextDelta`` and ``ModelToolCall`` events and ends with exactly one
``ModelDone`` carrying the assembled assistant message, which is identical whether or not the
provider streamed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from ..request import AssistantMessage, Request, ToolCall, Usage

__all__ = [
    "Model",
    "ModelDone",
    "ModelEvent",
    "ModelProfile",
    "ModelTextDelta",
    "ModelToolCall",
    "complete",
]


@dataclass(frozen=True)
class ModelProfile:
    """Per-model capabilities that shape lowering and budgeting.

    ``system_placement`` says where a native mid-conversation system/developer message may stand:
    ``"anywhere"``, ``"after_user"`` (only directly after user input or tool results) or
    ``"none"`` (wrap it into the user turn). ``native_tool_changes``: the provider can announce
    tools joining or leaving in place, so the ``tools`` list stays stable within an epoch.
    ``system_role`` names the native role of a mid-conversation message where the format has a
    choice (OpenAI: ``"system"`` or ``"developer"``). ``max_output_tokens`` is sent where the
    format requires a cap (Anthropic). ``cache_markers``: place explicit prompt-cache
    breakpoints (Anthropic ``cache_control``). ``reasoning``: the model returns reasoning
    items worth replaying (OpenAI Responses, requested as encrypted content).
    ``reports_usage``: its usage figures are real, so they may calibrate token estimates;
    ``writes_titles``: it may be asked to name a session.
    """

    provider: str = ""
    wire_format: str = "neutral"
    system_placement: Literal["anywhere", "after_user", "none"] = "anywhere"
    native_tool_changes: bool = False
    supports_images: bool = True
    context_window: int = 200_000
    system_role: Literal["system", "developer"] = "system"
    max_output_tokens: int = 8192
    cache_markers: bool = True
    reasoning: bool = False
    reports_usage: bool = True
    writes_titles: bool = True


@dataclass(frozen=True)
class ModelTextDelta:
    """A piece of assistant text as it arrives."""

    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ModelToolCall:
    """A tool call, complete (arguments assembled)."""

    call: ToolCall
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class ModelDone:
    """The end of a response: the assembled message and the usage figures."""

    message: AssistantMessage
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    kind: Literal["done"] = "done"


ModelEvent: TypeAlias = ModelTextDelta | ModelToolCall | ModelDone


@runtime_checkable
class Model(Protocol):
    """A model the session can call."""

    @property
    def name(self) -> str:
        """A stable identifier such as ``"openai:gpt-4.1"``; a change of name is a switch."""
        ...

    @property
    def profile(self) -> ModelProfile:
        """Capabilities of this model."""
        ...

    def stream(self, request: Request) -> AsyncIterator[ModelEvent]:
        """Send ``request`` and yield events; the last one is a ``ModelDone``."""
        ...


async def complete(model: Model, request: Request) -> ModelDone:
    """Run ``model`` on ``request`` without streaming and return the final event."""
    done: ModelDone | None = None
    async for event in model.stream(request):
        if isinstance(event, ModelDone):
            done = event
    if done is None:
        from ..errors import ProviderError

        raise ProviderError(f"model {model.name} ended its response without a final message")
    return done
