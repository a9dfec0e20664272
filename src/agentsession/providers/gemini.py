"""Lowering to Google Gemini ``generateContent`` (``gemini``), in the SDK's call shape.

The body is ``{"model", "contents", "config"}`` as ``models.generate_content`` takes them. The
baseline becomes ``config.system_instruction`` with one text part per component key. Gemini has
no mid-conversation system role, so a system message is always escaped text in the user turn
at its position (after the function responses). Turns alternate ``user``/``model``: consecutive
user-side messages merge. Parallel calls are several ``function_call`` parts in one model turn,
answered by as many ``function_response`` parts in the next user turn, paired by id and name.
Thought signatures the model returned are replayed only to this format.
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
    provider_items,
    reject,
    require_image_support,
    text_parts,
    wrap_system,
)
from .base import ModelProfile

__all__ = ["FMT", "lower_gemini"]

FMT = "gemini"


def _part(part: ContentPart, profile: ModelProfile, position: int) -> dict[str, Any]:
    match part:
        case TextPart():
            return {"text": part.text}
        case ImagePart():
            require_image_support(FMT, profile, part, position)
            if part.data is not None:
                return {"inline_data": {"mime_type": part.media_type, "data": part.data}}
            return {"file_data": {"mime_type": part.media_type, "file_uri": part.url}}
        case _:
            assert_never(part)


def _model_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    replay = provider_items(message, FMT)
    if replay is not None and isinstance(replay.get("parts"), list):
        return [dict(p) for p in replay["parts"]]
    parts: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
    for call in message.tool_calls:
        parts.append({"function_call": {"id": call.id, "name": call.name, "args": call.arguments}})
    return parts


def _function_response(message: ToolResultMessage, position: int) -> dict[str, Any]:
    texts: list[str] = []
    for part in text_parts(message.content):
        if isinstance(part, ImagePart):
            reject(FMT, "Gemini function responses cannot carry images here", position)
        texts.append(part.text)
    key = "error" if message.is_error else "output"
    response = {"id": message.call_id, "name": message.name, "response": {key: "".join(texts)}}
    return {"function_response": response}


def _config(request: Request) -> dict[str, Any]:
    config: dict[str, Any] = {}
    system_parts = [{"text": text} for _, text in request.system if text]
    if system_parts:
        config["system_instruction"] = {"parts": system_parts}
    if request.tools:
        config["tools"] = [
            {
                "function_declarations": [
                    {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters_json_schema": spec.parameters,
                    }
                    for spec in request.tools
                ]
            }
        ]
    # The session dispatches tool calls itself.
    config["automatic_function_calling"] = {"disable": True}
    return config


def lower_gemini(request: Request, profile: ModelProfile, model: str | None) -> Lowered:
    """Lower ``request`` to ``generate_content`` arguments (model, contents, config)."""
    contents: list[dict[str, Any]] = []
    origins: list[int] = []

    def turn(role: str, origin: int) -> list[dict[str, Any]]:
        if contents and contents[-1]["role"] == role:
            parts: list[dict[str, Any]] = contents[-1]["parts"]
            return parts
        contents.append({"role": role, "parts": []})
        origins.append(origin)
        fresh: list[dict[str, Any]] = contents[-1]["parts"]
        return fresh

    for i, message in enumerate(request.messages):
        match message:
            case UserMessage():
                parts = [_part(p, profile, i) for p in text_parts(message.content)]
                if not parts:
                    reject(FMT, "a user message needs content", i)
                turn("user", i).extend(parts)
            case AssistantMessage():
                model_parts = _model_parts(message)
                if model_parts:  # an empty reply carries nothing; the API rejects empty turns
                    turn("model", i).extend(model_parts)
            case ToolResultMessage():
                turn("user", i).append(_function_response(message, i))
            case SystemMessage():
                if message.content:
                    turn("user", i).append({"text": wrap_system(message.content)})
            case _:
                assert_never(message)

    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    body["contents"] = contents
    body["config"] = _config(request)
    return Lowered(body, origins)
