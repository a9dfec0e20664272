"""What a model is to the runtime: a profile and a stream of events for one neutral request.

Transport, credentials and wire formats live in the provider modules; the session only sees this
protocol. A model streams ``ModelTextDelta`` and ``ModelToolCall`` events and ends with exactly one
``ModelDone`` carrying the assembled assistant message, which is identical whether or not the
provider streamed. ``ModelDone.stop_reason`` says why the reply ended, normalised across the
wire formats.

``provider_failure`` is the one place that decides how a failure leaves a model call: the
package's own errors keep their type, anything else becomes a ``ProviderError`` naming its source.
A model that can check its own readiness (credentials, SDK) without a network call implements
``Preparable``; the session calls it before it stores or dispatches anything.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import field, replace
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from .._frozen import frozen
from ..errors import AgentSessionError, ProviderError
from ..hygiene import repaired
from ..log.usage_check import checked_usage
from ..request import AssistantMessage, Request, ToolCall, Usage

__all__ = [
    "STOP_REASONS",
    "CacheControlled",
    "CountsTokens",
    "Model",
    "ModelDone",
    "ModelEvent",
    "ModelProfile",
    "ModelTextDelta",
    "ModelToolCall",
    "Preparable",
    "ReplyStopReason",
    "complete",
    "provider_failure",
    "valid_reply",
]

ReplyStopReason: TypeAlias = Literal[
    "end_turn", "tool_calls", "max_tokens", "content_filter", "refusal", "other"
]
"""Why one model reply ended: it was complete (``end_turn``), it asks for tool calls, it hit the
output limit (``max_tokens``: the text is cut), the provider's filter stopped it, the model
refused, or a vendor reason without a neutral name (``other``). The turn's ``StopReason``
(``agentsession.StopReason``, in ``events``) adds ``approval_required``."""

STOP_REASONS: tuple[ReplyStopReason, ...] = (
    "end_turn",
    "tool_calls",
    "max_tokens",
    "content_filter",
    "refusal",
    "other",
)


@frozen
class ModelProfile:
    """Per-model capabilities that shape lowering and budgeting.

    ``system_placement`` says where a native mid-conversation system/developer message may stand:
    ``"anywhere"``, ``"after_user"`` (only directly after user input or tool results) or
    ``"none"`` (wrap it into the user turn). ``native_tool_changes``: the provider can announce
    tools joining or leaving in place, so the ``tools`` list stays stable within an epoch.
    ``native_tool_search``: the format has its own tool search, used in place of the
    ``search_tools`` proxy's plain function (OpenAI Responses: a client-executed ``tool_search``
    tool whose ``tool_search_output`` items carry the tools it loaded, at the end of the context;
    Anthropic: ``tool_reference`` blocks in the proxy's result, the tools ``defer_loading``).
    ``system_role`` names the native role of a mid-conversation message where the format has a
    choice (OpenAI: ``"system"`` or ``"developer"``). ``max_output_tokens`` is sent where the
    format requires a cap (Anthropic). ``cache_markers``: place explicit prompt-cache
    breakpoints (Anthropic ``cache_control``). ``reasoning``: the model returns reasoning
    items worth replaying (OpenAI Responses, requested as encrypted content).

    ``reports_usage``: the usage figures in ``ModelDone`` are the provider's real counts, fit to
    calibrate token estimates. ``writes_titles``: the model may be asked to name a session.
    ``tokenizer``: the name of the model's exact BPE encoding (``"o200k_base"``,
    ``"cl100k_base"``) when it is known, else ``None``. ``provider`` is empty for a model
    that names none.

    Provider cache controls (added by ``providers.cache_controls``; all off by default, so a
    model that does not know them gets none of their fields): ``cache_key`` a per-session
    ``prompt_cache_key``; ``cache_breakpoints`` OpenAI's explicit ``prompt_cache_breakpoint``;
    ``cache_ttl`` a choice of cache lifetime (Anthropic ``ttl: "1h"``); ``cache_diagnostics``
    the provider's own cache diagnosis against the previous response. ``cache_lifetime``:
    seconds an unused cached prefix is documented to live at the provider with the default
    lifetime (OpenAI's explicit breakpoints 30 min, its in-memory retention 5 to 10 min,
    Anthropic's default 5 min; a chosen ``cache_ttl`` replaces it per request): past it the
    cache is cold, so the window may advance for free.
    """

    provider: str = ""
    wire_format: str = "neutral"
    system_placement: Literal["anywhere", "after_user", "none"] = "anywhere"
    native_tool_changes: bool = False
    native_tool_search: bool = False
    supports_images: bool = True
    context_window: int = 200_000
    system_role: Literal["system", "developer"] = "system"
    max_output_tokens: int = 8192
    cache_markers: bool = True
    reasoning: bool = False
    reports_usage: bool = True
    writes_titles: bool = True
    tokenizer: str | None = None
    cache_key: bool = False
    cache_breakpoints: bool = False
    cache_ttl: bool = False
    cache_diagnostics: bool = False
    cache_lifetime: float = 300.0
    provider_compaction: bool = False


@frozen
class ModelTextDelta:
    """A piece of assistant text as it arrives."""

    text: str
    kind: Literal["text_delta"] = "text_delta"


@frozen
class ModelToolCall:
    """A tool call, complete (arguments assembled)."""

    call: ToolCall
    kind: Literal["tool_call"] = "tool_call"


@frozen
class ModelDone:
    """The end of a response: the assembled message, the usage figures and why it ended.

    A reply that carries tool calls but reports a plain end (``end_turn``) is recorded as
    ``tool_calls``: some servers say ``stop`` for a tool-call turn, and the calls decide.
    """

    message: AssistantMessage
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    stop_reason: ReplyStopReason = "end_turn"
    kind: Literal["done"] = "done"
    response_id: str = ""
    provider_cache: str = ""
    unusable_calls: tuple[tuple[int, str], ...] = ()
    """Calls (by index in ``message.tool_calls``) whose arguments did not arrive as one JSON
    object, each with why (``"not valid JSON"``, ``"not a JSON object"``); their ``arguments``
    are empty and they never run."""
    usage_note: str = ""
    """Why the reported usage had to be corrected (``""``: it was taken as reported). Every
    figure is checked here, whoever built the event: a corrected usage is an estimate."""
    compaction: dict[str, Any] | None = None
    """The compaction block the server wrote before the reply (a threshold compaction in the
    middle of the request), as the JSON object to send back unchanged; ``message`` is the
    reply after it, and ``usage`` counts the compaction's iteration too."""

    def __post_init__(self) -> None:
        if self.stop_reason == "end_turn" and self.message.tool_calls:
            object.__setattr__(self, "stop_reason", "tool_calls")
        usage, note = checked_usage(self.usage)
        if usage is not self.usage:
            object.__setattr__(self, "usage", usage)
        if note:
            joined = f"{self.usage_note}; {note}" if self.usage_note else note
            object.__setattr__(self, "usage_note", joined)


ModelEvent: TypeAlias = ModelTextDelta | ModelToolCall | ModelDone


def valid_reply(done: ModelDone) -> tuple[ModelDone, int]:
    """``done`` as it may be committed, and how many lone surrogates it held.

    Every string (text, tool names, argument keys and values, ids) has its lone surrogates
    replaced by U+FFFD, a split pair joined. Replay data that held one is dropped instead:
    signed reasoning cannot be repaired (a changed block fails its signature), so it is not
    replayed, as if another provider had written it.
    """
    fixed, replaced = repaired(done)
    if fixed.message.provider_data is not done.message.provider_data:
        fixed = replace(fixed, message=replace(fixed.message, provider_data={}))
    return fixed, replaced


@runtime_checkable
class CountsTokens(Protocol):
    """A model whose provider can count a request's input tokens without running it."""

    async def count_input_tokens(self, request: Request, controls: Any = None) -> int | None:
        """The provider's count of ``request`` (with ``controls``); ``None``: it has no way."""
        ...


@runtime_checkable
class CacheControlled(Protocol):
    """A model that takes the session's provider cache controls with a request."""

    def stream_with(self, request: Request, controls: Any) -> AsyncIterator[ModelEvent]:
        """``stream(request)`` with ``controls`` (a ``CacheControls``) added to the body."""
        ...


@frozen
class CompactionDone:
    """A provider's own compaction of a conversation.

    ``block`` is the compaction block's JSON object exactly as the provider returned it, to be
    sent back unchanged in ``format``; ``text`` is the summary it holds (``""``: the compaction
    failed, and nothing is to be stored but the bill); ``usage`` is what the compaction was
    billed (every iteration counted once).
    """

    format: str
    block: dict[str, Any]
    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""


@runtime_checkable
class CompactsConversation(Protocol):
    """A model whose provider compacts a conversation itself (``profile.provider_compaction``)."""

    async def compact_with(self, request: Request, controls: Any) -> CompactionDone:
        """The provider's compaction of ``request`` (sent with ``controls``, cache controls).

        Raises:
            ProviderError: The call failed.
        """
        ...

    def compaction_input(self, request: Request) -> tuple[Request, bool] | None:
        """What ``compact_with`` sends of ``request``, and whether that reads the cache.

        The cache is the one the conversation's requests wrote; ``None``: not offered here
        (the installed SDK lacks the call).
        """
        ...


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
        """Send ``request`` and yield events; the last one is a ``ModelDone``.

        Args:
            request: The neutral request to send.

        Raises:
            ProviderError: The provider failed (``TransientProviderError`` when worth retrying).
        """
        ...


@runtime_checkable
class Preparable(Protocol):
    """A model that can check, without any network call, that a call could be made."""

    def ensure_ready(self) -> None:
        """Raise ``CredentialsError`` (no API key) or ``UsageError`` (no SDK), else return."""
        ...


def provider_failure(exc: BaseException, source: str) -> AgentSessionError:
    """The error a failed model call raises: the package's own errors keep their type.

    Anything else becomes a ``ProviderError`` naming ``source`` (a model or vendor name) and the
    exception type, with ``__cause__`` set to ``exc``. Raise the result ``from exc``, or re-raise
    when it is ``exc`` itself.
    """
    if isinstance(exc, AgentSessionError):
        return exc
    detail = str(exc) or type(exc).__name__
    error = ProviderError(f"{source}: {type(exc).__name__}: {detail}")
    error.__cause__ = exc
    return error


async def complete(model: Model, request: Request) -> ModelDone:
    """Run ``model`` on ``request`` without streaming and return the final event.

    A failure leaves as ``provider_failure`` decides; a stream without a ``ModelDone`` is a
    ``ProviderError``.
    """
    done: ModelDone | None = None
    try:
        async for event in model.stream(request):
            if isinstance(event, ModelDone):
                done = event
    except Exception as exc:
        failure = provider_failure(exc, model.name)
        if failure is exc:
            raise
        raise failure from exc
    if done is None:
        raise ProviderError(f"model {model.name} ended its response without a final message")
    return done
