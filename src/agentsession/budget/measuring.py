"""Measuring a request: the token counters' protocols, the fixed overheads, ``measure``.

``measure`` counts a neutral request part by part (each baseline section, each message, each
tool declaration) plus fixed framing overheads, so the parts always add up to the total and a
rejection can name its biggest contributors; ``total_tokens`` gives the total alone. Each
counted object is counted once per counter and scale. ``budget`` re-exports every name here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol, assert_never, runtime_checkable

from .._frozen import frozen
from .._memo import IdentityMemo, PrefixMemo
from ..codec import one_shot
from ..request import (
    AssistantMessage,
    ContentPart,
    ImagePart,
    Message,
    Request,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from ._estimate import EstimateCounter
from ._tiktoken import TiktokenCounter

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "REQUEST_OVERHEAD",
    "SECTION_OVERHEAD",
    "TOOL_CALL_OVERHEAD",
    "TOOL_OVERHEAD",
    "Calibratable",
    "Measurement",
    "TokenCounter",
    "measure",
    "total_tokens",
]

# Fixed overheads, in tokens. Wire formats frame every message and declaration with a few tokens
# of their own (role markers, separators, JSON keys); these follow OpenAI's published accounting
# for chat messages and round up, so a measurement errs on the large side.
REQUEST_OVERHEAD = 3
"""Priming of the reply (OpenAI: ``<|start|>assistant<|message|>``)."""
MESSAGE_OVERHEAD = 4
"""Framing of each message: role and delimiters; the system prompt pays it once."""
SECTION_OVERHEAD = 2
"""Separator between baseline sections joined into one system prompt."""
TOOL_CALL_OVERHEAD = 8
"""Framing of one tool call inside an assistant message (type, id and name keys)."""
TOOL_OVERHEAD = 8
"""Framing of one tool declaration (type/function/parameters wrapper)."""
IMAGE_TOKENS = 1_600
"""One image. The real cost depends on its size and the provider (OpenAI tiles, Anthropic about
width x height / 750, capped near 1,600); the request does not carry the size, so take the cap."""


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts the tokens of a text."""

    def count(self, text: str) -> int:
        """The number of tokens ``text`` takes."""
        ...


@runtime_checkable
class Calibratable(Protocol):
    """A counter that can learn from what a provider reported (`EstimateCounter` is one)."""

    def calibrate(self, estimated: int, reported_input_tokens: int) -> float:
        """Move toward ``reported_input_tokens`` for text this counter counted as ``estimated``."""
        ...


@frozen
class Measurement:
    """A measured request: ``total`` tokens and the ``contributors`` that add up to it.

    Contributors are ``(label, tokens)`` pairs in request order: ``"request"`` (fixed framing of
    the request and its system prompt), ``"system:<key>"`` per baseline section,
    ``"message[i]:<role>"`` per message (role ``system`` is a mid-conversation message) and
    ``"tool:<name>"`` per declaration. ``fixed`` is the part of ``total`` that does not come from
    the counter (overheads and images); calibration leaves it out.
    """

    total: int
    contributors: tuple[tuple[str, int], ...]
    fixed: int = 0

    def largest(self, n: int = 5) -> tuple[tuple[str, int], ...]:
        """The ``n`` biggest contributors, largest first (request order among equals)."""
        ranked = sorted(enumerate(self.contributors), key=lambda item: (-item[1][1], item[0]))
        return tuple(pair for _, pair in ranked[:n])

    def subtotal(self, prefix: str) -> int:
        """Tokens of the contributors whose label starts with ``prefix`` (e.g. ``"tool:"``)."""
        return sum(tokens for label, tokens in self.contributors if label.startswith(prefix))


_COUNTED: IdentityMemo[tuple[TokenCounter, float, int, int]] = IdentityMemo()
"""Per message, declaration or section object: (counter, its scale, tokens, fixed tokens)."""


class _Tally:
    """Adds up counted text and fixed tokens separately.

    Messages and parts are matched exhaustively, like the lowerings: a new type fails the type
    check here instead of silently counting nothing. The same window messages are measured at
    every request, so a part's count is memoised per object for the package's own counters
    (deterministic, or changing only through ``scale``); another counter counts afresh.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.fixed = 0
        self.memo = isinstance(counter, EstimateCounter | TiktokenCounter)
        self.scale = counter.scale if isinstance(counter, EstimateCounter) else 1.0

    def memoised(self, value: object, count: Callable[[Any], int]) -> int:
        """``count(value)``, from the memo when this counter at this scale counted it before."""
        if not self.memo:
            return count(value)
        hit = _COUNTED.get(value)
        if hit is not None and hit[0] is self.counter and hit[1] == self.scale:
            self.fixed += hit[3]
            return hit[2]
        before = self.fixed
        tokens = count(value)
        _COUNTED.put(value, (self.counter, self.scale, tokens, self.fixed - before))
        return tokens

    def text(self, text: str) -> int:
        return self.counter.count(text) if text else 0

    def const(self, tokens: int) -> int:
        self.fixed += tokens
        return tokens

    def content(self, content: str | tuple[ContentPart, ...]) -> int:
        if isinstance(content, str):
            return self.text(content)
        total = 0
        for part in content:
            match part:
                case TextPart():
                    total += self.text(part.text)
                case ImagePart():
                    total += self.const(IMAGE_TOKENS)
                case _:
                    assert_never(part)
        return total

    def message(self, message: Message) -> int:
        tokens = self.const(MESSAGE_OVERHEAD)
        match message:
            case UserMessage():
                tokens += self.content(message.content)
            case AssistantMessage():
                # provider_data (e.g. reasoning signatures) is left out: providers do not bill
                # it as input, and it goes only to the provider that produced it.
                tokens += self.text(message.content)
                for call in message.tool_calls:
                    tokens += self.const(TOOL_CALL_OVERHEAD) + self.text(call.id)
                    tokens += self.text(call.name) + self.text(_json(call.arguments))
            case ToolResultMessage():
                tokens += self.text(message.call_id) + self.content(message.content)
            case SystemMessage():
                tokens += self.text(message.content)
                for name in (*message.tools_added, *message.tools_removed):
                    tokens += self.text(name)  # in-place tool announcements name each tool
            case _:
                assert_never(message)
        return tokens

    def sections(self, system: tuple[tuple[str, str], ...]) -> int:
        return sum(self.memoised(section, self.section) for section in system)

    def tools(self, tools: tuple[ToolSpec, ...]) -> int:
        return sum(self.memoised(tool, self.tool) for tool in tools)

    def section(self, section: tuple[str, str]) -> int:
        return self.const(SECTION_OVERHEAD) + self.text(section[1])

    def tool(self, tool: ToolSpec) -> int:
        tokens = self.const(TOOL_OVERHEAD) + self.text(tool.name) + self.text(tool.description)
        return tokens + self.text(_json(tool.parameters))


def _json(value: Any) -> str:
    # Compact and key-sorted: the form wire formats send, and the same text every time.
    return _SORTED_COMPACT(value)


_SEP = (",", ":")
_SORTED_COMPACT = one_shot(json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=_SEP))


def measure(request: Request, counter: TokenCounter) -> Measurement:
    """Count ``request`` with ``counter``, part by part; the parts add up to the total.

    Every part is counted on its own plus the fixed overheads above, so a measurement is a
    little larger than one tokenization of the lowered wire format would be.
    """
    tally = _Tally(counter)
    parts = [
        ("request", tally.const(REQUEST_OVERHEAD + (MESSAGE_OVERHEAD if request.system else 0)))
    ]
    for section in request.system:
        parts.append((f"system:{section[0]}", tally.memoised(section, tally.section)))
    for i, message in enumerate(request.messages):
        parts.append((f"message[{i}]:{message.role}", tally.memoised(message, tally.message)))
    for tool in request.tools:
        parts.append((f"tool:{tool.name}", tally.memoised(tool, tally.tool)))
    return Measurement(total=sum(t for _, t in parts), contributors=tuple(parts), fixed=tally.fixed)


_SUMS: PrefixMemo[tuple[TokenCounter, float, int]] = PrefixMemo()
"""Per message tuple: (counter, its scale, the messages' tokens), resumed by the next request."""


def total_tokens(request: Request, counter: TokenCounter) -> int:
    """``measure(request, counter).total``, without labelling every part.

    What an admission asks at every provider call: the parts are named only when the request
    does not fit. The messages' sum of the request before is resumed (see ``PrefixMemo``).
    """
    tally = _Tally(counter)
    total = tally.const(REQUEST_OVERHEAD + (MESSAGE_OVERHEAD if request.system else 0))
    total += tally.memoised(request.system, tally.sections)  # kept per tuple, like messages
    total += tally.memoised(request.tools, tally.tools)
    messages, done, summed = request.messages, 0, 0
    found = _SUMS.resume(messages) if tally.memo else None
    if found is not None and found[1][0] is counter and found[1][1] == tally.scale:
        done, summed = found[0], found[1][2]
    summed += sum(tally.memoised(message, tally.message) for message in messages[done:])
    if tally.memo and len(messages) > done:
        _SUMS.keep(messages, (counter, tally.scale, summed))
    return total + summed
