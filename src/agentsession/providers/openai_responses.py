"""Lowering to the OpenAI Responses format (``openai-responses``), stateless.

The baseline is ``instructions`` (the keyed texts joined in order); the request is sent with
``store: false`` so the whole history travels in ``input``. A mid-conversation system message is
a native developer/system input message at its position, or an escaped user message at the
same position for a profile without one. Tool calls and results are ``function_call`` and
``function_call_output`` items paired by ``call_id``; reasoning items the model returned are
replayed only to this format, and only when they carry encrypted content (without ``store``
the server cannot look them up by id).
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
    require_image_support,
    text_parts,
    wrap_system,
)
from .base import ModelProfile

__all__ = ["FMT", "lower_openai_responses"]

FMT = "openai-responses"


def _parts(
    content: tuple[ContentPart, ...], profile: ModelProfile, position: int
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in content:
        match part:
            case TextPart():
                parts.append({"type": "input_text", "text": part.text})
            case ImagePart():
                require_image_support(FMT, profile, part, position)
                url = (
                    f"data:{part.media_type};base64,{part.data}"
                    if part.data is not None
                    else part.url
                )
                parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
            case _:
                assert_never(part)
    return parts


def _assistant_items(message: AssistantMessage) -> list[dict[str, Any]]:
    replay = provider_items(message, FMT)
    items = [dict(item) for item in (replay or {}).get("reasoning", [])]
    if message.content:
        items.append({"type": "message", "role": "assistant", "content": message.content})
    for call in message.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": dumps_arguments(call.arguments),
            }
        )
    return items


def _result_item(message: ToolResultMessage, profile: ModelProfile, i: int) -> dict[str, Any]:
    parts = text_parts(message.content)
    output: str | list[dict[str, Any]]
    if all(isinstance(p, TextPart) for p in parts):
        text = "".join(p.text for p in parts if isinstance(p, TextPart))
        output = f"Error: {text}" if message.is_error else text
    else:
        output = _parts(parts, profile, i)
        if message.is_error:
            output.insert(0, {"type": "input_text", "text": "Error:"})
    return {"type": "function_call_output", "call_id": message.call_id, "output": output}


def _tools(request: Request) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
            "strict": False,
        }
        for spec in request.tools
    ]


def lower_openai_responses(request: Request, profile: ModelProfile, model: str | None) -> Lowered:
    """Lower ``request`` to a Responses API body (``responses.create`` arguments)."""
    items: list[dict[str, Any]] = []
    origins: list[int] = []

    def add(item: dict[str, Any], origin: int) -> None:
        items.append(item)
        origins.append(origin)

    for i, message in enumerate(request.messages):
        match message:
            case UserMessage():
                content = message.content
                wire = content if isinstance(content, str) else _parts(content, profile, i)
                add({"type": "message", "role": "user", "content": wire}, i)
            case AssistantMessage():
                for item in _assistant_items(message):
                    add(item, i)
            case ToolResultMessage():
                add(_result_item(message, profile, i), i)
            case SystemMessage():
                if not message.content:
                    continue  # tool changes alone: the tools list already differs
                if native_system_ok(request.messages, i, profile):
                    role = profile.system_role
                    add({"type": "message", "role": role, "content": message.content}, i)
                else:
                    wrapped = wrap_system(message.content)
                    add({"type": "message", "role": "user", "content": wrapped}, i)
            case _:
                assert_never(message)
    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    if request.system_text:
        body["instructions"] = request.system_text
    body["input"] = items
    if request.tools:
        body["tools"] = _tools(request)
    body["store"] = False
    if profile.reasoning:
        body["include"] = ["reasoning.encrypted_content"]
    return Lowered(body, origins)
