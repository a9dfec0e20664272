"""One request annotated for people: where each part came from and what it weighs.

``context_view`` takes a request (the next one previewed, or a past one rebuilt) and the log it
was built from, and returns a ``ContextView``: the baseline sections, each message with the log
entries it came from (``Request.sources``) and their kinds — so a skill block, a summary or a
mid-conversation message is recognisable by where it came from — each tool declaration, the
token count of every part (the budget's own ``measure``, so the parts add up to what preflight
saw), and the window edge: how many transcript messages lie before it or were elided after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._frozen import frozen
from ..budget import TokenCounter, measure
from ..log import TRANSCRIPT_KINDS, Record
from ..request import (
    AssistantMessage,
    Message,
    Request,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
    text_of,
)
from .describe import preview

__all__ = ["ContextView", "Part", "context_view"]


@frozen
class Part:
    """One measured part of a request: a baseline section, a message or a tool declaration.

    ``sources`` are the log seqs a message came from and ``source_kinds`` their kinds (``new``
    for input not in the log yet); ``tokens`` is the budget's measurement of the part.
    """

    label: str
    tokens: int
    text: str = ""
    role: str = ""
    sources: tuple[int, ...] = ()
    source_kinds: tuple[str, ...] = ()


@frozen
class ContextView:
    """One request annotated: what the model sees, where each part came from, what it weighs.

    ``epoch`` is the epoch the request belongs to (``new_epoch``: this request starts it, for
    ``epoch_reason``). ``window_start`` is the first log seq of the conversation it carries;
    ``before_window`` counts user-transcript messages before that edge and ``left_out`` those
    after it that the window elided. ``limit`` is the token budget a request may fill (0 when
    unknown).
    """

    request: Request
    epoch: int | None
    epoch_reason: str
    new_epoch: bool
    sections: tuple[Part, ...]
    messages: tuple[Part, ...]
    tools: tuple[Part, ...]
    overhead: int
    total: int
    limit: int
    window_start: int | None
    before_window: int
    left_out: int


def context_view(
    request: Request,
    records: Sequence[Record],
    counter: TokenCounter,
    *,
    epoch: int | None,
    epoch_reason: str,
    new_epoch: bool,
    limit: int = 0,
) -> ContextView:
    """``request`` annotated against the log it was built from (``records``, in seq order)."""
    measured = dict(measure(request, counter).contributors)
    kinds = {r.seq: r.entry.kind for r in records}
    sections = tuple(
        Part(key, measured.get(f"system:{key}", 0), text) for key, text in request.system
    )
    messages = tuple(
        _message_part(i, message, request.sources, kinds, measured)
        for i, message in enumerate(request.messages)
    )
    tools = tuple(
        Part(t.name, measured.get(f"tool:{t.name}", 0), t.description) for t in request.tools
    )
    summary = {r.seq for r in records if r.entry.kind == "summary"}
    firsts = [s[0] for s in request.sources if s and s[0] not in summary]
    start = min(firsts) if firsts else None
    carried = {seq for source in request.sources for seq in source}
    transcript = [r.seq for r in records if r.entry.kind in TRANSCRIPT_KINDS]
    before = sum(1 for seq in transcript if start is not None and seq < start)
    left_out = sum(
        1 for seq in transcript if start is not None and seq >= start and seq not in carried
    )
    return ContextView(
        request=request,
        epoch=epoch,
        epoch_reason=epoch_reason,
        new_epoch=new_epoch,
        sections=sections,
        messages=messages,
        tools=tools,
        overhead=measured.get("request", 0),
        total=sum(measured.values()),
        limit=limit,
        window_start=start,
        before_window=before if start is not None else len(transcript),
        left_out=left_out,
    )


def _message_part(
    index: int,
    message: Message,
    sources: Sequence[tuple[int, ...]],
    kinds: Mapping[int, str],
    measured: Mapping[str, int],
) -> Part:
    seqs = sources[index] if index < len(sources) else ()
    return Part(
        label=_message_label(message),
        tokens=measured.get(f"message[{index}]:{message.role}", 0),
        text=_message_text(message),
        role=message.role,
        sources=seqs,
        source_kinds=tuple(kinds.get(seq, "new") for seq in seqs),
    )


def _message_label(message: Message) -> str:
    match message:
        case UserMessage():
            return "user"
        case AssistantMessage():
            calls = len(message.tool_calls)
            return (
                f"assistant ({calls} tool call{'s' if calls != 1 else ''})"
                if calls
                else "assistant"
            )
        case ToolResultMessage():
            return f"tool result: {message.name}" + (" (error)" if message.is_error else "")
        case SystemMessage():
            return "mid-conversation system message"


def _message_text(message: Message) -> str:
    match message:
        case UserMessage() | ToolResultMessage():
            return text_of(message.content)
        case AssistantMessage():
            calls = [f"→ {c.name}({preview(str(c.arguments), 200)})" for c in message.tool_calls]
            return "\n".join([message.content, *calls] if message.content else calls)
        case SystemMessage():
            lines = [message.content] if message.content else []
            if message.tools_added:
                lines.append("tools added: " + ", ".join(message.tools_added))
            if message.tools_removed:
                lines.append("tools removed: " + ", ".join(message.tools_removed))
            return "\n".join(lines)
