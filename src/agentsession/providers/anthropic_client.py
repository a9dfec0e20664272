"""Anthropic client over the official ``anthropic`` SDK (Messages API).

A body carrying ``tool_addition`` / ``tool_removal`` blocks goes through the SDK's beta
namespace with the beta named in the body; everything else through the stable one. Streaming
uses the SDK's accumulating stream, and both paths convert the final message with one function.
Usage counts all input: uncached, read from cache and written to cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..request import AssistantMessage, ToolCall, Usage
from ._client import SDKModel, api_key_from_env, require_sdk
from .base import ModelDone, ModelEvent, ModelTextDelta, ModelToolCall

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicModel"]

_REPLAYED = ("thinking", "redacted_thinking")


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _convert(message: Any, fmt: str) -> tuple[AssistantMessage, Usage]:
    text: list[str] = []
    calls: list[ToolCall] = []
    replay = False
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            calls.append(ToolCall(block.name, dict(arguments), id=block.id))
        elif block.type in _REPLAYED:
            replay = True  # signed reasoning must go back verbatim with the turn it belongs to
    data: dict[str, Any] = {}
    if replay:
        blocks = [
            b.model_dump(mode="json", exclude_none=True)
            for b in message.content
            if b.type in (*_REPLAYED, "text", "tool_use")
        ]
        for block in blocks:
            block.pop("citations", None)
            block.pop("caller", None)
        data = {fmt: {"content": blocks}}
    u = message.usage
    cache_read = _int(getattr(u, "cache_read_input_tokens", 0))
    cache_write = _int(getattr(u, "cache_creation_input_tokens", 0))
    usage = Usage(
        input_tokens=_int(u.input_tokens) + cache_read + cache_write,
        output_tokens=_int(u.output_tokens),
        cached_input_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
    assistant = AssistantMessage(
        content="".join(text), tool_calls=tuple(calls), provider="anthropic", provider_data=data
    )
    return assistant, usage


class AnthropicModel(SDKModel):
    """A Claude model through the Messages API."""

    vendor = "anthropic"
    wire_format = "anthropic-messages"

    def _make_sdk(self) -> AsyncAnthropic:
        require_sdk("anthropic", "anthropic")
        import anthropic

        key = self._api_key or api_key_from_env(("ANTHROPIC_API_KEY",), self.vendor)
        return anthropic.AsyncAnthropic(
            api_key=key, base_url=self._base_url, timeout=self.timeout, max_retries=0
        )

    async def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        api = sdk.beta.messages if "betas" in body else sdk.messages
        if not self.streaming:
            final = await api.create(**body)
            message, usage = _convert(final, self.wire_format)
            if message.content:
                yield ModelTextDelta(message.content)
            for call in message.tool_calls:
                yield ModelToolCall(call)
            yield ModelDone(message, usage, final.model)
            return
        async with api.stream(**body) as stream:
            async for event in stream:
                if event.type == "text":
                    yield ModelTextDelta(event.text)
                elif event.type == "content_block_stop" and event.content_block.type == "tool_use":
                    block = event.content_block
                    arguments = block.input if isinstance(block.input, dict) else {}
                    yield ModelToolCall(ToolCall(block.name, dict(arguments), id=block.id))
            final = await stream.get_final_message()
        message, usage = _convert(final, self.wire_format)
        yield ModelDone(message, usage, final.model)
