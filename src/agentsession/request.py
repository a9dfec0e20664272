"""The neutral request: what every wire format is lowered from.

A request is ``system`` (the epoch's baseline as ordered ``(key, text)`` pairs), ``messages``
(chronological; role ``system`` is a mid-conversation system message) and ``tools`` (declarations
in a deterministic order). Values are frozen dataclasses with a ``kind`` (parts) or ``role``
(messages) literal, so lowering can match exhaustively and the stored form stays explicit.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import field
from itertools import compress, repeat
from typing import Any, Literal, TypeAlias, cast

from ._frozen import frozen
from ._memo import PrefixMemo
from .codec import canonical_json

__all__ = [
    "AssistantMessage",
    "ContentPart",
    "ImagePart",
    "Message",
    "Request",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "digest",
    "introduced_in_place",
    "new_call_id",
    "standing_tools",
    "text_of",
]


@frozen(slots=True)
class TextPart:
    """A piece of text inside a message."""

    text: str
    kind: Literal["text"] = "text"


@frozen(slots=True)
class ImagePart:
    """An image, either inline (``data`` is base64) or by ``url``."""

    media_type: str
    data: str | None = None
    url: str | None = None
    kind: Literal["image"] = "image"


ContentPart: TypeAlias = TextPart | ImagePart


def new_call_id() -> str:
    """A fresh tool-call id for calls whose model gave none."""
    return "call_" + uuid.uuid4().hex[:24]


@frozen(slots=True)
class ToolCall:
    """One tool call the model made: ``ToolCall("read_file", {"path": "a.txt"})``."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    kind: Literal["tool_call"] = "tool_call"


@frozen(slots=True)
class Usage:
    """Token figures a provider reported for one response (0 when not reported).

    ``input_tokens`` counts all input, cached included; ``cached_input_tokens`` (read from the
    provider's prompt cache) and ``cache_write_tokens`` (written to it) are parts of it;
    ``cache_write_long_tokens`` is the part of ``cache_write_tokens`` written with the long
    lifetime (Anthropic's 1 h), billed at its own price.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_long_tokens: int = 0


@frozen
class UserMessage:
    """User input: a string stays a string; block input is a tuple of parts."""

    content: str | tuple[ContentPart, ...]
    role: Literal["user"] = "user"


@frozen
class AssistantMessage:
    """A model reply: text and/or tool calls.

    ``provider_data`` holds opaque provider-specific items (e.g. reasoning signatures) keyed by
    the provider that produced them; a request to another provider does not carry them.
    """

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    provider: str = ""
    provider_data: dict[str, Any] = field(default_factory=dict)
    role: Literal["assistant"] = "assistant"


@frozen
class ToolResultMessage:
    """The result of one tool call, paired to it by ``call_id``."""

    call_id: str
    name: str
    content: str | tuple[ContentPart, ...]
    is_error: bool = False
    role: Literal["tool"] = "tool"


@frozen
class SystemMessage:
    """A mid-conversation system message: the newly effective state of changed components.

    ``tools_added`` / ``tools_removed`` name tool declarations that join or leave at this point;
    profiles with native in-place tool changes announce them here instead of changing ``tools``.
    """

    content: str
    tools_added: tuple[str, ...] = ()
    tools_removed: tuple[str, ...] = ()
    role: Literal["system"] = "system"


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | SystemMessage
"""A message of a request or of the user transcript; ``role`` tells which."""


@frozen
class ToolSpec:
    """A tool declaration: name, description and a JSON schema for the arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@frozen
class Request:
    """The neutral request a model receives.

    ``system`` is the baseline as ``(key, text)`` pairs in component order; ``messages`` is the
    windowed history with mid-conversation system messages in place; ``tools`` are declarations.
    ``sources`` maps each message index to the log ``seq`` numbers it came from; it is for
    inspection only and never lowered into a wire format.
    """

    system: tuple[tuple[str, str], ...] = ()
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    sources: tuple[tuple[int, ...], ...] = ()

    @property
    def system_text(self) -> str:
        """The baseline joined as one string, the way single-string system prompts get it."""
        return "\n\n".join(text for _, text in self.system if text)


def text_of(content: str | tuple[ContentPart, ...]) -> str:
    """The text of a content value, images left out."""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, TextPart))


_HASHED: PrefixMemo[Any] = PrefixMemo()
"""Per message tuple: the SHA-256 state after ``{"messages": [`` and those messages' JSON."""


def digest(request: Request) -> str:
    """A stable digest of what ``request`` sends (sources excluded): proves a replay unchanged.

    The SHA-256 of ``{"messages": …, "system": …, "tools": …}`` as key-sorted JSON; each part is
    ``codec.canonical_json``, so a message sent before is not encoded again, and the hash of the
    messages the request before sent is resumed (messages come first in the text), so only the
    new ones are hashed.
    """
    messages = request.messages
    found = _HASHED.resume(messages)
    if found is None:
        done, hashed = 0, hashlib.sha256(b'{"messages": [')
    else:
        done, hashed = found[0], found[1].copy()
    for index in range(done, len(messages)):
        text = canonical_json(messages[index])
        hashed.update((", " + text if index else text).encode("utf-8", "surrogatepass"))
    if len(messages) > done:
        _HASHED.keep(messages, hashed.copy())
    rest = (
        f'], "system": {canonical_json(request.system)}, "tools": {canonical_json(request.tools)}}}'
    )
    hashed.update(rest.encode("utf-8", "surrogatepass"))
    return hashed.hexdigest()[:32]


def introduced_in_place(request: Request) -> set[str]:
    """Tools whose first mention in the history is an addition on a mid-conversation message.

    On a profile with native tool changes such a tool is defined where it joins, not in the
    request's top-level tool list, so that list stays the same for the whole epoch.
    """
    messages = request.messages
    # Asked at every provider call: the first mentions of the request before are resumed (see
    # ``PrefixMemo``), and its new system messages are picked out in C, not in a loop.
    found = _FIRST.resume(messages)
    done, first = (0, {}) if found is None else (found[0], dict(found[1]))
    new = messages[done:]
    chosen = compress(new, map(isinstance, new, repeat(SystemMessage)))
    for message in cast("Iterator[SystemMessage]", chosen):
        for name in message.tools_removed:
            first.setdefault(name, "removed")
        for name in message.tools_added:
            first.setdefault(name, "added")
    if new:
        _FIRST.keep(messages, first)  # never changed again: a resume copies it
    return {name for name, how in first.items() if how == "added"}


_FIRST: PrefixMemo[dict[str, str]] = PrefixMemo()
"""Per message tuple: each tool's first mention on its system messages (added or removed)."""


def standing_tools(request: Request) -> tuple[ToolSpec, ...]:
    """The declarations that stand at the top of the request (not introduced in place)."""
    inline = introduced_in_place(request)
    if not inline:
        return request.tools  # the same tuple: its text and digest are kept for the object
    return tuple(t for t in request.tools if t.name not in inline)
