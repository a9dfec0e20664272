"""Shared pieces of the four lowerings: the neutral pairing check, system wrapping, placement.

Every lowering is a pure function ``(request, profile, model) -> Lowered``; ``Lowered.origins``
maps each wire message back to the neutral message it came from, so a validator finding on
the wire can be reported at the neutral position the developer knows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..errors import RequestValidationError
from ..request import (
    AssistantMessage,
    ContentPart,
    ImagePart,
    Message,
    Request,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    UserMessage,
    introduced_in_place,
)
from .base import ModelProfile

__all__ = [
    "CALL_TOOL_NAME",
    "SEARCH_TOOL_NAME",
    "WRAP_TAG",
    "Lowered",
    "SearchLoads",
    "WireViolation",
    "check_history",
    "dumps_arguments",
    "native_system_ok",
    "provider_items",
    "reject",
    "require_image_support",
    "wrap_system",
]

WRAP_TAG = "system-message"
#: The session's tool-search proxy (``engine.deferred.SEARCH_TOOLS``): a format with its own
#: tool search lowers this tool, its calls and its results to that search's items.
SEARCH_TOOL_NAME = "search_tools"
#: The stable proxy that calls a loaded deferred tool where the format has neither tool search
#: nor in-place tool changes (``engine.deferred.CALL_TOOLS``); inspection shows the inner call.
CALL_TOOL_NAME = "call_tool"
_TAG_RE = re.compile(rf"<(/?){WRAP_TAG}", re.IGNORECASE)


@dataclass
class Lowered:
    """A lowered body and, per wire message, the index of the neutral message it came from."""

    body: dict[str, Any]
    origins: list[int] = field(default_factory=list)


class WireViolation(RequestValidationError):
    """A broken rule, keeping the bare ``detail`` so ``lower()`` can restate the position."""

    def __init__(self, detail: str, *, fmt: str, position: int | None) -> None:
        super().__init__(detail, fmt=fmt, position=position)
        self.detail = detail


def reject(fmt: str, message: str, position: int | None) -> NoReturn:
    """Raise the one error a lowering or validator raises for a broken request."""
    raise WireViolation(message, fmt=fmt, position=position)


def wrap_system(text: str) -> str:
    """A mid-conversation system message as user-turn text.

    Only the wrapper's own tags are escaped (``<`` becomes ``&lt;``), so the text cannot end
    the wrapper early; everything else stays verbatim, code samples included.
    """
    escaped = _TAG_RE.sub(lambda m: f"&lt;{m.group(1)}{WRAP_TAG}", text)
    return f"<{WRAP_TAG}>\n{escaped}\n</{WRAP_TAG}>"


def dumps_arguments(arguments: dict[str, Any]) -> str:
    """Tool-call arguments as the JSON string OpenAI formats carry (stable key order)."""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def provider_items(message: AssistantMessage, fmt: str) -> dict[str, Any] | None:
    """The opaque replay data of ``message`` for ``fmt``, if it was produced by that format."""
    data = message.provider_data.get(fmt)
    return data if isinstance(data, dict) else None


def require_image_support(
    fmt: str, profile: ModelProfile, part: ContentPart, position: int
) -> None:
    """Refuse an image for a profile without vision, rather than dropping it."""
    if isinstance(part, ImagePart):
        if not profile.supports_images:
            reject(fmt, "the model does not accept images", position)
        if part.data is None and part.url is None:
            reject(fmt, "an image part needs data or url", position)


def _neighbour(messages: Sequence[Message], start: int, step: int) -> Message | None:
    i = start + step
    while 0 <= i < len(messages):
        if not isinstance(messages[i], SystemMessage):
            return messages[i]
        i += step
    return None


def native_system_ok(messages: Sequence[Message], index: int, profile: ModelProfile) -> bool:
    """Whether the system message at ``index`` may use the native role at its position.

    ``after_user`` is Anthropic's rule: the system group must directly follow a user turn (user
    input or tool results) and be followed by an assistant turn or end the list; a group is
    judged as a whole, which looking past neighbouring system messages achieves.
    """
    match profile.system_placement:
        case "anywhere":
            return True
        case "none":
            return False
        case "after_user":
            before = _neighbour(messages, index, -1)
            after = _neighbour(messages, index, 1)
            return isinstance(before, UserMessage | ToolResultMessage) and (
                after is None or isinstance(after, AssistantMessage)
            )


def check_history(request: Request, fmt: str) -> None:
    """The neutral pairing rules every format shares, reported at neutral positions.

    Every tool call has a non-empty id unique in the request and exactly one result; results
    come directly after the assistant message that made the calls (in any order), with
    nothing else between; a result never stands without its call.
    """
    seen_ids: set[str] = set()
    pending: dict[str, int] = {}
    answered: set[str] = set()
    for i, message in enumerate(request.messages):
        if isinstance(message, ToolResultMessage):
            if message.call_id in pending:
                del pending[message.call_id]
                answered.add(message.call_id)
            elif message.call_id in answered:
                reject(fmt, f"tool call {message.call_id!r} has a second result", i)
            else:
                reject(
                    fmt,
                    f"tool result for {message.call_id!r} has no matching tool call before it",
                    i,
                )
            continue
        if pending:
            call_id, at = next(iter(pending.items()))
            what = "system message" if isinstance(message, SystemMessage) else "message"
            reject(
                fmt,
                f"tool call {call_id!r} (message {at}) has no result before the next {what}",
                i,
            )
        answered = set()
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if not call.id:
                    reject(fmt, f"tool call {call.name!r} has no id", i)
                if call.id in seen_ids:
                    reject(fmt, f"tool call id {call.id!r} is used twice", i)
                seen_ids.add(call.id)
                pending[call.id] = i
    if pending:
        call_id, at = next(iter(pending.items()))
        reject(fmt, f"tool call {call_id!r} has no result", at)


def text_parts(content: str | tuple[ContentPart, ...]) -> tuple[ContentPart, ...]:
    """Content as a tuple of parts (a string becomes one text part; empty text is dropped)."""
    if isinstance(content, str):
        return (TextPart(content),) if content else ()
    return tuple(p for p in content if not (isinstance(p, TextPart) and not p.text))


@dataclass
class SearchLoads:
    """Which tools each ``search_tools`` result of a request loaded, for a native tool search.

    The tools a search loaded are those the update message right after its result adds in place
    (first mentioned there, so not in the top-level list): ``by_result`` maps the result's
    position to their names, ``announced`` maps the position of each update message whose
    additions a search result carries to that result's (a second search in the same step gets
    none).
    """

    by_result: dict[int, list[str]] = field(default_factory=dict)
    announced: dict[int, int] = field(default_factory=dict)
    inline: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, request: Request) -> SearchLoads:
        loads = cls(inline=introduced_in_place(request))
        last_search: int | None = None
        for i, message in enumerate(request.messages):
            if isinstance(message, ToolResultMessage):
                if message.name == SEARCH_TOOL_NAME:
                    last_search = i
                continue
            if (
                isinstance(message, SystemMessage)
                and message.tools_added
                and last_search is not None
            ):
                loads.by_result[last_search] = loads.added(message)
                loads.announced[i] = last_search
            last_search = None
        return loads

    def added(self, message: SystemMessage) -> list[str]:
        """The tools ``message`` adds in place (not those of the top-level list)."""
        return [name for name in message.tools_added if name in self.inline]

    def searched(self) -> set[str]:
        """Every tool some search result of the request loaded."""
        return {name for names in self.by_result.values() for name in names}
