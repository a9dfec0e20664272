"""OpenAI clients over the official ``openai`` SDK: Chat Completions and Responses.

``OpenAIChatModel`` also serves OpenAI-compatible servers (llama.cpp, vLLM, Ollama) through a
base URL. Streams are assembled into the same intermediate form a complete response converts
to, so the assistant message does not depend on streaming. The SDK's own retries are off: the
session retries transient failures with the same admitted request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..request import AssistantMessage, ToolCall, Usage
from ._client import SDKModel, api_key_from_env, parse_arguments, require_sdk
from .base import ModelDone, ModelEvent, ModelTextDelta, ModelToolCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

__all__ = ["OpenAIChatModel", "OpenAIResponsesModel"]


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


class _OpenAIBase(SDKModel):
    vendor = "openai"

    def _make_sdk(self) -> AsyncOpenAI:
        require_sdk("openai", "openai")
        import openai

        key = self._api_key
        if key is None:
            try:
                key = api_key_from_env(("OPENAI_API_KEY",), self.vendor)
            except ProviderError:
                if self._profile.provider != "openai-compatible":
                    raise
                key = "unused"  # local servers usually ignore the key; the SDK needs one
        return openai.AsyncOpenAI(
            api_key=key, base_url=self._base_url, timeout=self.timeout, max_retries=0
        )


def _chat_message(
    text: str, calls: list[dict[str, Any]], vendor: str, provider: str
) -> AssistantMessage:
    tool_calls = tuple(
        ToolCall(c["name"], parse_arguments(c["arguments"], vendor), id=c["id"]) for c in calls
    )
    return AssistantMessage(content=text, tool_calls=tool_calls, provider=provider)


def _chat_usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        input_tokens=_int(usage.prompt_tokens),
        output_tokens=_int(usage.completion_tokens),
        cached_input_tokens=_int(getattr(details, "cached_tokens", 0)),
    )


class OpenAIChatModel(_OpenAIBase):
    """A Chat Completions model: ``openai`` with ``wire_format="openai-chat"``, or compatible."""

    wire_format = "openai-chat"

    async def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        provider = self._profile.provider
        if not self.streaming:
            completion: ChatCompletion = await sdk.chat.completions.create(**body)
            if not completion.choices:
                raise ProviderError("openai: malformed response: no choices")
            msg = completion.choices[0].message
            calls = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in msg.tool_calls or []
                if c.type == "function"
            ]
            message = _chat_message(msg.content or "", calls, self.vendor, provider)
            if message.content:
                yield ModelTextDelta(message.content)
            for call in message.tool_calls:
                yield ModelToolCall(call)
            yield ModelDone(message, _chat_usage(completion.usage), completion.model)
            return
        stream = await sdk.chat.completions.create(
            **body, stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        calls_by_index: dict[int, dict[str, Any]] = {}
        usage = Usage()
        model = self.model
        async for chunk in stream:
            model = chunk.model or model
            if chunk.usage is not None:
                usage = _chat_usage(chunk.usage)
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                    yield ModelTextDelta(delta.content)
                for piece in delta.tool_calls or []:
                    slot = calls_by_index.setdefault(
                        piece.index, {"id": "", "name": "", "arguments": ""}
                    )
                    if piece.id:
                        slot["id"] = piece.id
                    if piece.function is not None:
                        slot["name"] += piece.function.name or ""
                        slot["arguments"] += piece.function.arguments or ""
        calls = [calls_by_index[i] for i in sorted(calls_by_index)]
        message = _chat_message("".join(text), calls, self.vendor, provider)
        for call in message.tool_calls:
            yield ModelToolCall(call)
        yield ModelDone(message, usage, model)


def _responses_message(response: Response, fmt: str) -> tuple[AssistantMessage, Usage]:
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for item in response.output:
        match item.type:
            case "message":
                for part in item.content:
                    if part.type == "output_text":
                        text.append(part.text)
            case "function_call":
                calls.append(
                    ToolCall(item.name, parse_arguments(item.arguments, "openai"), id=item.call_id)
                )
            case "reasoning":
                if getattr(item, "encrypted_content", None):
                    reasoning.append(item.model_dump(mode="json", exclude_none=True))
            case _:
                pass  # hosted tool items are not requested by this client
    usage = Usage()
    if response.usage is not None:
        details = response.usage.input_tokens_details
        usage = Usage(
            input_tokens=_int(response.usage.input_tokens),
            output_tokens=_int(response.usage.output_tokens),
            cached_input_tokens=_int(getattr(details, "cached_tokens", 0)),
        )
    data = {fmt: {"reasoning": reasoning}} if reasoning else {}
    message = AssistantMessage(
        content="".join(text), tool_calls=tuple(calls), provider="openai", provider_data=data
    )
    return message, usage


class OpenAIResponsesModel(_OpenAIBase):
    """A Responses API model (the default for ``openai:`` model strings)."""

    wire_format = "openai-responses"

    async def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        if not self.streaming:
            response: Response = await sdk.responses.create(**body)
            message, usage = _responses_message(response, self.wire_format)
            if message.content:
                yield ModelTextDelta(message.content)
            for call in message.tool_calls:
                yield ModelToolCall(call)
            yield ModelDone(message, usage, response.model)
            return
        stream = await sdk.responses.create(**body, stream=True)
        final: Response | None = None
        async for event in stream:
            match event.type:
                case "response.output_text.delta":
                    yield ModelTextDelta(event.delta)
                case "response.output_item.done" if event.item.type == "function_call":
                    item = event.item
                    args = parse_arguments(item.arguments, self.vendor)
                    yield ModelToolCall(ToolCall(item.name, args, id=item.call_id))
                case "response.completed" | "response.incomplete":
                    final = event.response
                case "response.failed" | "error":
                    raise ProviderError(f"openai: the response failed: {event}")
                case _:
                    pass
        if final is None:
            raise ProviderError("openai: malformed response: the stream ended without a response")
        message, usage = _responses_message(final, self.wire_format)
        yield ModelDone(message, usage, final.model)
