"""Lowering to OpenAI Chat Completions (``openai-chat``), also used by compatible servers.

The baseline is one leading system/developer message holding the keyed texts joined in order
(compatible servers' chat templates expect one string). A mid-conversation system message is
a native system/developer message at its position, or, for a profile without one, escaped
user text at the same position (after the tool messages that carry the results). A profile
that wraps (``system_placement`` other than ``"anywhere"``: typically a local server whose chat
template has no mid-conversation system role) also gets strict alternation: consecutive
user-side content, wrapped text included, joins one user message, as many templates refuse two
user messages in a row. Tool calls carry JSON-string arguments; each result is a ``tool``
message answering its id. The format has no error flag, so an error result starts with
``Error:``.
"""

from __future__ import annotations

from typing import Any, assert_never

from ..request import (
    AssistantMessage,
    ContentPart,
    ImagePart,
    Request,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    UserMessage,
)
from ._lowering import (
    Lowered,
    dumps_arguments,
    native_system_ok,
    provider_items,
    reject,
    require_image_support,
    text_parts,
    wrap_system,
)
from .base import ModelProfile

__all__ = ["FMT", "lower_openai_chat", "strict_alternation"]

FMT = "openai-chat"


def _image_url(part: ImagePart) -> str:
    if part.data is not None:
        return f"data:{part.media_type};base64,{part.data}"
    return part.url or ""


def _user_content(
    content: str | tuple[ContentPart, ...], profile: ModelProfile, position: int
) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        match part:
            case TextPart():
                parts.append({"type": "text", "text": part.text})
            case ImagePart():
                require_image_support(FMT, profile, part, position)
                parts.append({"type": "image_url", "image_url": {"url": _image_url(part)}})
            case _:
                assert_never(part)
    return parts


def _result_text(message: ToolResultMessage, position: int) -> str:
    texts: list[str] = []
    for part in text_parts(message.content):
        match part:
            case TextPart():
                texts.append(part.text)
            case ImagePart():
                reject(FMT, "Chat Completions tool messages cannot carry images", position)
            case _:
                assert_never(part)
    text = "".join(texts)
    return f"Error: {text}" if message.is_error else text


def strict_alternation(profile: ModelProfile) -> bool:
    """Whether ``profile`` wraps system text and so keeps user and assistant strictly apart."""
    return profile.system_placement != "anywhere"


def _joined(first: str | list[dict[str, Any]], second: str | list[dict[str, Any]]) -> Any:
    """Two user contents as one: text joined by a blank line, else one list of parts."""
    if isinstance(first, str) and isinstance(second, str):
        return "\n\n".join(text for text in (first, second) if text)

    def parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
        if isinstance(content, str):
            return [{"type": "text", "text": content}] if content else []
        return content

    return parts(first) + parts(second)


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": "assistant"}
    replay = provider_items(message, FMT)
    if replay:
        wire.update(replay.get("fields", {}))
    wire["content"] = message.content or (None if message.tool_calls else "")
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": dumps_arguments(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return wire


def lower_openai_chat(request: Request, profile: ModelProfile, model: str | None) -> Lowered:
    """Lower ``request`` to a Chat Completions body (``chat.completions.create`` arguments)."""
    messages: list[dict[str, Any]] = []
    origins: list[int] = []
    strict = strict_alternation(profile)

    def add(wire: dict[str, Any], origin: int) -> None:
        last = messages[-1] if messages else None
        if strict and wire["role"] == "user" and last is not None and last["role"] == "user":
            last["content"] = _joined(last["content"], wire["content"])
            return
        messages.append(wire)
        origins.append(origin)

    system_text = request.system_text
    if system_text:
        add({"role": profile.system_role, "content": system_text}, -1)
    for i, message in enumerate(request.messages):
        match message:
            case UserMessage():
                add({"role": "user", "content": _user_content(message.content, profile, i)}, i)
            case AssistantMessage():
                add(_assistant(message), i)
            case ToolResultMessage():
                result = _result_text(message, i)
                add({"role": "tool", "tool_call_id": message.call_id, "content": result}, i)
            case SystemMessage():
                if not message.content:
                    continue  # tool changes alone: the tools list already differs
                if native_system_ok(request.messages, i, profile):
                    add({"role": profile.system_role, "content": message.content}, i)
                else:
                    add({"role": "user", "content": wrap_system(message.content)}, i)
            case _:
                assert_never(message)
    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    body["messages"] = messages
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.parameters,
                },
            }
            for spec in request.tools
        ]
    return Lowered(body, origins)
