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
from ..request import Message, Request

__all__ = ["RequestTokens", "cacheable", "leading_same", "measure_in_order"]

RequestTokens = list[int]
"""A request's tokens part by part, in ``measure``'s order: framing, sections, messages, tools."""


def measure_in_order(requests: list[Request], counter: TokenCounter) -> list[RequestTokens]:
    """Each request's tokens by part, reusing the previous request's for a shared prefix.

    Each message object is measured once, all of them in one ``measure``: the requests of an
    epoch share their objects, and a new epoch's first request carries mostly the objects the
    last epoch's requests did. A request measured afresh takes its framing, system sections and
    tools from one measurement of those parts alone, kept per system part and tools.
    """
    if not requests:
        return []
    kept = [0, *(_same_prefix(a, b) for a, b in itertools.pairwise(requests))]
    wanted: dict[int, Message] = {}
    for request, shared in zip(requests, kept, strict=True):
        for message in request.messages[shared:]:
            wanted.setdefault(id(message), message)  # the requests hold them: ids stay theirs
    counted = measure(Request((), tuple(wanted.values()), ()), counter).contributors[1:]
    tokens = dict(zip(wanted, [t for _, t in counted], strict=True))
    frames: dict[tuple[int, int], tuple[Request, RequestTokens]] = {}
    out: list[RequestTokens] = []
    for request, shared in zip(requests, kept, strict=True):
        tail = [tokens[id(m)] for m in request.messages[shared:]]
        if shared:
            before = out[-1]
            body = 1 + len(request.system) + shared
            out.append(before[:body] + tail + before[len(before) - len(request.tools) :])
            continue
        key = (id(request.system), id(request.tools))
        frame = frames.get(key)  # its request holds both parts: their ids stay theirs
        if frame is None:
            bare = Request(request.system, (), request.tools)
            frame = frames[key] = (bare, [t for _, t in measure(bare, counter).contributors])
        head = 1 + len(request.system)
        out.append(frame[1][:head] + tail + frame[1][head:])
    return out


def leading_same(old: tuple[object, ...], new: tuple[object, ...]) -> int:
    """How many leading elements of ``old`` and ``new`` are the very same objects."""
    if all(map(operator.is_, old, new)):  # the usual case, without a list of the answers
        return min(len(old), len(new))
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
