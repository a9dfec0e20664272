"""Typed events of a turn, as ``session.stream()`` yields them.

``prompt()`` is built on the stream, and the CLI prints from it, so a long turn shows progress as
it happens: text deltas as they arrive, each tool call and result, each committed step, and the
finished turn with its result.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import field
from typing import Literal, TypeAlias

from ._frozen import frozen
from .request import ToolCall, Usage

__all__ = [
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
    "drain",
]


StopReason: TypeAlias = Literal[
    "end_turn",
    "tool_calls",
    "max_tokens",
    "content_filter",
    "refusal",
    "other",
    "approval_required",
]
"""Why a turn stopped: the model's normalised finish reason, or ``approval_required`` when a tool
call waits for the user (``session.approve``/``deny``, then ``session.retry()``)."""


@frozen
class ApprovalRequest:
    """A tool call that waits for the user's approval, and why the preset asks."""

    call_id: str
    name: str
    arguments: dict[str, object]
    reason: str


@frozen
class PromptResult:
    """The outcome of one prompt: the final assistant text, steps taken and summed usage.

    ``stop_reason`` says why the turn stopped: ``end_turn`` normally, ``max_tokens`` when the
    reply was cut by the output limit (``text`` is then incomplete), ``approval_required`` when
    ``approvals`` wait for the user.
    """

    text: str
    steps: int
    usage: Usage = field(default_factory=Usage)
    session_id: str = ""
    stop_reason: StopReason = "end_turn"
    approvals: tuple[ApprovalRequest, ...] = ()


@frozen
class TextDelta:
    """A piece of assistant text as the model produces it."""

    text: str
    kind: Literal["text_delta"] = "text_delta"


@frozen
class ToolCallStarted:
    """The model called a tool: it runs now, or waits for approval (``ApprovalNeeded`` next).

    A call the request did not offer (``Unknown tool: <name>``) gets no such event: its error
    result (``ToolResultEvent``) comes right after the response is committed.
    """

    call: ToolCall
    kind: Literal["tool_call_started"] = "tool_call_started"


@frozen
class ToolResultEvent:
    """A tool call's result, as stored and as the model will read it."""

    call_id: str
    name: str
    content: str
    is_error: bool
    kind: Literal["tool_result"] = "tool_result"


@frozen
class ContextAdmitted:
    """System Context changes were admitted at this boundary (keys in component order)."""

    keys: tuple[str, ...]
    new_epoch: bool
    kind: Literal["context_admitted"] = "context_admitted"


@frozen
class ProviderRetry:
    """A transient provider failure; the same admitted request is sent again.

    ``discarded`` is how many characters of text the failed attempt had streamed: they are not
    part of the answer (a renderer that printed them should drop them). ``delay`` is how many
    seconds the session waits first (a provider's ``Retry-After`` is honoured within a cap).
    """

    attempt: int
    error: str
    discarded: int = 0
    delay: float = 0.0
    kind: Literal["provider_retry"] = "provider_retry"


@frozen
class ApprovalNeeded:
    """A tool call waits for the user's approval; ``TurnFinished`` follows at once.

    The turn's result then has ``stop_reason="approval_required"`` and lists the waiting call
    in ``approvals``; ``session.approve()``/``deny()`` and ``session.retry()`` go on.
    """

    request: ApprovalRequest
    kind: Literal["approval_needed"] = "approval_needed"


@frozen
class StepCommitted:
    """A step's entries are durable: ``first_seq`` to ``last_seq`` inclusive."""

    step: int
    first_seq: int
    last_seq: int
    what: Literal["admission", "response", "tool_result"]
    kind: Literal["step_committed"] = "step_committed"


@frozen
class TurnFinished:
    """The turn is over; the last event of every turn that was not cancelled or failed.

    ``result.stop_reason`` says why: ``end_turn`` (the model replied without tool calls),
    ``max_tokens`` and the other finish reasons, or ``approval_required`` (a call waits).
    """

    result: PromptResult
    kind: Literal["turn_finished"] = "turn_finished"


@frozen
class CostAlert:
    """The session's cost crossed ``Config.cost_alert_usd`` with the response just committed.

    Yielded once per crossing, right after that response's ``StepCommitted``; ``total_usd`` is
    ``session.cost().total_usd`` at that moment.
    """

    total_usd: float
    threshold_usd: float
    kind: Literal["cost_alert"] = "cost_alert"


Event: TypeAlias = (
    ApprovalNeeded
    | TextDelta
    | ToolCallStarted
    | ToolResultEvent
    | ContextAdmitted
    | ProviderRetry
    | StepCommitted
    | CostAlert
    | TurnFinished
)
"""An event of a turn, as ``session.stream()`` yields them; ``kind`` tells which."""


class TurnStream:
    """The events of one turn (``session.stream()``): an async context manager and iterator.

    ``async with session.stream(text) as events: async for event in events: ...`` — leaving the
    block settles the turn, however it is left: after the last event nothing remains to do; on
    ``break`` or an exception inside the block the turn is closed like a cancellation (recorded
    as interrupted by cancellation) before the block is left, so the session takes the next
    operation at once. A stream iterated without ``async with`` and dropped early is settled by
    the session's next operation (or ``session.close()``) before that operation starts.
    """

    def __init__(
        self,
        events: AsyncGenerator[Event, None],
        on_start: Callable[[TurnStream, AsyncGenerator[Event, None]], None],
    ) -> None:
        self._events = events
        self._on_start = on_start
        self._started = False

    async def __aenter__(self) -> TurnStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> Event:
        if not self._started:
            self._started = True
            # The session learns of the stream before the turn starts: should the consumer
            # drop it half-way, the next operation closes the turn first.
            self._on_start(self, self._events)
        return await self._events.__anext__()

    async def aclose(self) -> None:
        """Stop the turn now (as a cancellation) and wait until it is settled."""
        await self._events.aclose()


async def drain(events: AsyncIterator[Event]) -> PromptResult:
    """Run a turn's events to the end and return its result.

    Args:
        events: A turn's events (``session.stream()``).
    """
    result: PromptResult | None = None
    async for event in events:
        if isinstance(event, TurnFinished):
            result = event.result
    assert result is not None
    return result
