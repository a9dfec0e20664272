"""Measuring a session's dispatched requests in order, and the prefix each shares with the last.

Consecutive requests of an epoch carry the same message objects up to their last few, so the
tokens of request N are those of request N-1 up to the first message that is not the very same
object, plus a measurement of the rest. ``budget.measure`` counts each part on its own (its
parts add up to its total), so the sum is exactly what measuring the whole request gives.
"""

from __future__ import annotations

from ..budget import TokenCounter, measure
from ..request import Request

__all__ = ["RequestTokens", "cacheable", "measure_in_order"]

RequestTokens = list[int]
"""A request's tokens part by part, in ``measure``'s order: framing, sections, messages, tools."""


def measure_in_order(requests: list[Request], counter: TokenCounter) -> list[RequestTokens]:
    """Each request's tokens by part, reusing the previous request's for a shared prefix."""
    out: list[RequestTokens] = []
    previous: Request | None = None
    for request in requests:
        kept = _same_prefix(previous, request) if previous is not None else 0
        if not kept:
            out.append([t for _, t in measure(request, counter).contributors])
        else:
            rest = Request(request.system, request.messages[kept:], request.tools)
            tail = [t for _, t in measure(rest, counter).contributors]
            head = 1 + len(request.system)
            out.append(out[-1][: head + kept] + tail[head:])
        previous = request
    return out


def _same_prefix(previous: Request, current: Request) -> int:
    """How many leading messages ``current`` shares with ``previous`` as the very same objects.

    0 when the system part or the tools differ: the request is measured afresh.
    """
    if current.system != previous.system or current.tools != previous.tools:
        return 0
    kept = 0
    for old, new in zip(previous.messages, current.messages, strict=False):
        if old is not new:
            break
        kept += 1
    return kept


def cacheable(previous: Request, current: Request, tokens: RequestTokens) -> int:
    """Tokens of ``current`` in the prefix it shares with ``previous``: tools, system, messages."""
    if previous.tools != current.tools:
        return 0
    head, body = 1 + len(current.system), 1 + len(current.system) + len(current.messages)
    shared = sum(tokens[body:])
    if previous.system != current.system:
        return shared
    shared += sum(tokens[:head])
    for i, (old, new) in enumerate(zip(previous.messages, current.messages, strict=False)):
        if old is not new and old != new:
            break
        shared += tokens[head + i]
    return shared
