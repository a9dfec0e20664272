"""Recovery: what a log tail says about the last step, and the entries that close it truthfully.

Pure functions over the records from the last ``dispatch`` on; the session reads that tail and
commits what these return. A step is *settled* when a failure or an interruption was recorded
after its dispatch, or when its response and every tool result are there; it is *paused* while a
call of it waits for the user's approval (nothing to close: the user answers, then it resumes).
A step the process left behind (killed, cancelled) is closed with an ``Interrupted`` record,
preceded by a synthetic error result for each tool call that never got one, so the history always
pairs every call with a result and the next request is valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from .._frozen import frozen
from ..errors import UsageError
from ..log import (
    ApprovalDecided,
    ApprovalRequested,
    AssistantEntry,
    Interrupted,
    LogEntry,
    ProviderFailed,
    Record,
    ToolResultEntry,
)
from ..request import ToolCall

__all__ = [
    "INTERRUPTED_RESULT",
    "Cause",
    "ResumePoint",
    "StepState",
    "closing_entries",
    "resume_point",
    "step_state",
]

Cause: TypeAlias = Literal["process", "cancelled"]

# Without a result in the log nobody knows whether the call ran: a result the store refused
# (and a close could not write) belongs to a call that did run. The text says what is known.
INTERRUPTED_RESULT = {
    "process": (
        "No result was stored: the process ended after this tool call was asked for. It may"
        " have run, with its effects, or not; its result is unknown."
    ),
    "cancelled": "No result: the turn was cancelled before this tool call finished.",
}
_REASONS = {
    ("process", "response"): "the process ended before the response was stored",
    ("process", "tools"): "the process ended before every tool result was stored",
    ("cancelled", "response"): "the turn was cancelled before the response was stored",
    ("cancelled", "tools"): "the turn was cancelled while tools were running",
}


@frozen
class StepState:
    """The state of the last dispatched step, read off its tail.

    ``responded`` — a response is stored; ``finished`` — that response asked for no tools, so
    the turn ended; ``settled`` — a failure or interruption was recorded, or every tool call of
    the response has its result; ``missing`` — tool calls of the response still without result;
    ``paused`` — the first of those waits for the user's approval (asked, not answered).
    """

    responded: bool
    finished: bool
    settled: bool
    missing: tuple[tuple[str, str], ...] = ()
    paused: bool = False


def step_state(tail: Sequence[Record]) -> StepState:
    """Read the state of the step that ``tail`` (records from its dispatch on) belongs to."""
    entries = [r.entry for r in tail]
    responses = [e for e in entries if isinstance(e, AssistantEntry)]
    closed = any(isinstance(e, ProviderFailed | Interrupted) for e in entries)
    if not responses:
        return StepState(responded=False, finished=False, settled=closed)
    answered = {e.call_id for e in entries if isinstance(e, ToolResultEntry)}
    last = responses[-1]
    missing = tuple((c.id, c.name) for c in last.tool_calls if c.id not in answered)
    # Calls run in order: the step waits for the user when its first call without a result was
    # asked about and not answered yet. An answered one may have started; it is not waiting.
    asked = {e.call_id for e in entries if isinstance(e, ApprovalRequested)}
    decided = {e.call_id for e in entries if isinstance(e, ApprovalDecided)}
    first = missing[0][0] if missing else None
    return StepState(
        responded=True,
        finished=not last.tool_calls,
        settled=closed or not missing,
        missing=missing,
        paused=not closed and first in asked and first not in decided,
    )


def closing_entries(tail: Sequence[Record], timestamp: str, cause: Cause) -> list[LogEntry]:
    """The entries that close the step of ``tail`` truthfully; empty when it is settled.

    An empty ``tail`` (nothing was ever dispatched) needs nothing.
    """
    if not tail:
        return []
    state = step_state(tail)
    if state.settled or state.paused:
        return []
    if not state.responded:
        return [Interrupted(_REASONS[cause, "response"], timestamp)]
    closing: list[LogEntry] = [
        ToolResultEntry(call_id, name, INTERRUPTED_RESULT[cause], True, timestamp)
        for call_id, name in state.missing
    ]
    closing.append(Interrupted(_REASONS[cause, "tools"], timestamp))
    return closing


@frozen
class ResumePoint:
    """Where an unfinished turn continues.

    ``unanswered`` — its request got no response (re-send it or admit afresh); ``tools`` — run
    ``calls``, the response's calls without a result; ``continue`` — every result is in, ask the
    model again.
    """

    kind: Literal["unanswered", "tools", "continue"]
    calls: tuple[ToolCall, ...] = ()


def resume_point(tail: Sequence[Record] | None) -> ResumePoint:
    """Where ``retry()`` continues the step of ``tail``; ``UsageError`` if nowhere."""
    if tail is None:
        raise UsageError("nothing to retry: no request was ever dispatched")
    state = step_state(tail)
    if state.finished:
        raise UsageError("nothing to retry: the last turn finished")
    if not state.responded:
        return ResumePoint("unanswered")
    if not state.missing:
        return ResumePoint("continue")
    response = [r.entry for r in tail if isinstance(r.entry, AssistantEntry)][-1]
    missing = {call_id for call_id, _ in state.missing}
    return ResumePoint("tools", tuple(c for c in response.tool_calls if c.id in missing))
