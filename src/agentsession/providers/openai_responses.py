"""Lowering to the OpenAI Responses format (``openai-responses``), stateless.

The baseline is ``instructions`` (the keyed texts joined in order); the request is sent with
``store: false`` so the whole history travels in ``input``. A mid-conversation system message is
a native developer/system input message at its position, or an escaped user message at the
same position for a profile without one. Tool calls and results are ``function_call`` and
``function_call_output`` items paired by ``call_id``; reasoning items the model returned are
replayed only to this format, and only when they carry encrypted content (without ``store``
the server cannot look them up by id). A compaction (``responses.compact``) opens its epoch with
the call's output items — the user messages and the encrypted ``compaction`` item — as returned.

With ``native_tool_search`` (models with tool search) the ``search_tools`` proxy is the API's
own client-executed ``tool_search`` tool: the model's search is a ``tool_search_call`` (replayed
as the model sent it), its result a ``tool_search_output`` carrying the declarations of the tools
that search loaded (those the update message after it adds in place). The top-level ``tools``
list keeps the epoch's first declarations, so a load appends to the end of the context and the
cached prefix stays. A tool added in place without a search (a skill's) comes in an
``additional_tools`` item (role ``developer``) where it joins. A tool that leaves has
no removal item in this format: its declaration stays in the history, and the toolbox answers a
call of it with ``Unknown tool``.
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
    ToolSpec,
    UserMessage,
    standing_tools,
)
from ._lowering import (
    SEARCH_TOOL_NAME,
    Lowered,
    SearchLoads,
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


def _assistant_items(message: AssistantMessage, search: bool) -> list[dict[str, Any]]:
    replay = provider_items(message, FMT)
    compacted = (replay or {}).get("compaction")
    if isinstance(compacted, dict):
        # A compaction's opening: the ``compact`` call's output items, exactly as returned.
        return [dict(item) for item in compacted.get("output", [])]
    items = [dict(item) for item in (replay or {}).get("reasoning", [])]
    searches = {
        str(item.get("call_id")): item for item in (replay or {}).get("tool_search_calls", [])
    }
    if message.content:
        items.append({"type": "message", "role": "assistant", "content": message.content})
    for call in message.tool_calls:
        if search and call.name == SEARCH_TOOL_NAME:
            sent = searches.get(call.id)
            items.append(dict(sent) if sent is not None else _search_call(call.id, call.arguments))
            continue
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


def _function(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        "strict": False,
    }


def _tool(spec: ToolSpec, search: bool) -> dict[str, Any]:
    if search and spec.name == SEARCH_TOOL_NAME:
        return {
            "type": "tool_search",
            "execution": "client",
            "description": spec.description,
            "parameters": spec.parameters,
        }
    return _function(spec)


def _search_call(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_search_call",
        "call_id": call_id,
        "execution": "client",
        "arguments": arguments,
        "status": "completed",
    }


def _search_output(call_id: str, loaded: list[ToolSpec]) -> dict[str, Any]:
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": [_function(spec) for spec in loaded],
    }


def _unsearched(
    loads: SearchLoads, specs: dict[str, ToolSpec], message: SystemMessage, i: int
) -> list[dict[str, Any]]:
    """An ``additional_tools`` item for the tools ``message`` adds without a search."""
    names = [n for n in loads.added(message) if n in specs]
    if i in loads.announced or not names:
        return []
    tools = [_function(specs[name]) for name in names]
    return [{"type": "additional_tools", "role": "developer", "tools": tools}]


def _answer(
    message: ToolResultMessage,
    profile: ModelProfile,
    i: int,
    loads: SearchLoads | None,
    specs: dict[str, ToolSpec],
) -> dict[str, Any]:
    if loads is not None and message.name == SEARCH_TOOL_NAME:
        loaded = [specs[name] for name in loads.by_result.get(i, []) if name in specs]
        return _search_output(message.call_id, loaded)
    return _result_item(message, profile, i)


def lower_openai_responses(request: Request, profile: ModelProfile, model: str | None) -> Lowered:
    """Lower ``request`` to a Responses API body (``responses.create`` arguments)."""
    items: list[dict[str, Any]] = []
    origins: list[int] = []
    search = profile.native_tool_search
    loads = SearchLoads.of(request) if search else None
    specs = {spec.name: spec for spec in request.tools}

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
                for item in _assistant_items(message, search):
                    add(item, i)
            case ToolResultMessage():
                add(_answer(message, profile, i, loads, specs), i)
            case SystemMessage():
                for item in _unsearched(loads, specs, message, i) if loads is not None else ():
                    add(item, i)
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
    tools = standing_tools(request) if search else request.tools
    if tools:
        body["tools"] = [_tool(spec, search) for spec in tools]
    body["store"] = False
    if profile.reasoning:
        body["include"] = ["reasoning.encrypted_content"]
    return Lowered(body, origins)
