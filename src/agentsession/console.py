"""Console rendering shared by the command line and the demo: turn events and transcripts.

Plain text on a stream, so it works in any terminal, pipe or test capture: text deltas as they
arrive, one line per tool call and result (shortened), and a bracketed note for context changes
and provider retries.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from typing import TextIO

from .events import (
    ContextAdmitted,
    Event,
    PromptResult,
    ProviderRetry,
    StepCommitted,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    TurnFinished,
)
from .request import AssistantMessage, Message, ToolResultMessage, UserMessage, text_of

__all__ = ["print_events", "print_transcript"]

_PREVIEW = 200


def _short(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "…"


async def print_events(
    events: AsyncIterator[Event], out: TextIO | None = None
) -> PromptResult | None:
    """Print a turn's events as they arrive; return the result when the turn finished."""
    out = out or sys.stdout
    in_text = False
    result: PromptResult | None = None
    async for event in events:
        match event:
            case TextDelta():
                if not in_text:
                    out.write("assistant: ")
                    in_text = True
                out.write(event.text)
            case ToolCallStarted():
                out.write(f"  → {event.call.name}({_short(str(event.call.arguments))})\n")
            case ToolResultEvent():
                mark = "✗" if event.is_error else "←"
                out.write(f"  {mark} {event.name}: {_short(event.content)}\n")
            case ContextAdmitted():
                label = "new context epoch" if event.new_epoch else "context update"
                out.write(f"  [{label}: {', '.join(event.keys)}]\n")
            case ProviderRetry():
                out.write(f"  [provider failed, retry {event.attempt}: {event.error}]\n")
            case StepCommitted():
                pass
            case TurnFinished():
                result = event.result
        out.flush()
    if in_text:
        out.write("\n")
    return result


def print_transcript(messages: Sequence[Message], out: TextIO | None = None) -> None:
    """Print a user transcript."""
    out = out or sys.stdout
    for message in messages:
        match message:
            case UserMessage():
                out.write(f"user: {text_of(message.content)}\n")
            case AssistantMessage():
                if message.content:
                    out.write(f"assistant: {message.content}\n")
                for call in message.tool_calls:
                    out.write(f"  → {call.name}({_short(str(call.arguments))})\n")
            case ToolResultMessage():
                mark = "✗" if message.is_error else "←"
                out.write(f"  {mark} {message.name}: {_short(text_of(message.content))}\n")
            case _:
                pass
