"""Measuring a session's dispatched requests in order, and the prefix each shares with the last.

Consecutive requests of an epoch carry the same message objects up to their last few, so the
tokens of request N are those of request N-1 up to the first message that is not the very same
object, plus a measurement of the messages after it. ``budget.measure`` counts each part on its
own (its parts add up to its total), so the sum is exactly what measuring the whole request
gives. The leading objects two requests share are found by comparing them in C.
"""

from __future__ import annotations

import itertools
import operator

from ..budget import TokenCounter, measure
from ..request import Request

__all__ = ["RequestTokens", "cacheable", "leading_same", "measure_in_order"]

RequestTokens = list[int]
"""A request's tokens part by part, in ``measure``'s order: framing, sections, messages, tools."""


def measure_in_order(requests: list[Request], counter: TokenCounter) -> list[RequestTokens]:
    """Each request's tokens by part, reusing the previous request's for a shared prefix."""
    if not requests:
        return []
    kept = [0, *(_same_prefix(a, b) for a, b in itertools.pairwise(requests))]
    # The messages after each shared prefix, measured together: a request without system part
    # or tools measures its framing, then one part per message, each on its own.
    new = [m for request, k in zip(requests, kept, strict=True) if k for m in request.messages[k:]]
    counted = measure(Request((), tuple(new), ()), counter).contributors[1:]
    tokens = iter([t for _, t in counted])
    out: list[RequestTokens] = []
    for request, shared in zip(requests, kept, strict=True):
        if not shared:
            out.append([t for _, t in measure(request, counter).contributors])
            continue
        before = out[-1]
        body = 1 + len(request.system) + shared
        tools = len(before) - len(request.tools)
        tail = [next(tokens) for _ in range(len(request.messages) - shared)]
        out.append(before[:body] + tail + before[tools:])
    return out


def leading_same(old: tuple[object, ...], new: tuple[object, ...]) -> int:
    """How many leading elements of ``old`` and ``new`` are the very same objects."""
    same = list(map(operator.is_, old, new))
    return same.index(False) if False in same else len(same)


def _same_prefix(previous: Request, current: Request) -> int:
    """How many leading messages ``current`` shares with ``previous`` as the very same objects.

    0 when the system part or the tools differ: the request is measured afresh.
    """
    if current.system != previous.system or current.tools != previous.tools:
        return 0
    return leading_same(previous.messages, current.messages)


def cacheable(previous: Request, current: Request, tokens: RequestTokens) -> int:
    """Tokens of ``current`` in the prefix it shares with ``previous``: tools, system, messages."""
    if previous.tools != current.tools:
        return 0
    head, body = 1 + len(current.system), 1 + len(current.system) + len(current.messages)
    shared = sum(tokens[body:])
    if previous.system != current.system:
        return shared
    old, new = previous.messages, current.messages
    equal = leading_same(old, new)
    for a, b in zip(old[equal:], new[equal:], strict=False):
        if a != b:  # equal values in new objects count as shared too
            break
        equal += 1
    return shared + sum(tokens[:head]) + sum(tokens[head : head + equal])
