"""Anthropic client over the official ``anthropic`` SDK (Messages API).

A body carrying ``tool_addition`` / ``tool_removal`` blocks goes through the SDK's beta
namespace with the beta named in the body; everything else through the stable one. Streaming
uses the SDK's accumulating stream, and both paths convert the final message with one function.
A stream is whole only when ``message_stop`` arrived. Usage counts all input: uncached, read
from cache and written to cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..log.usage_check import token_sum
from ..request import AssistantMessage, ToolCall, Usage, new_call_id
from ._client import SDKModel, replay, require_event_stream, usage_count
from ._errors import sdk_error
from .base import ModelDone, ModelEvent, ModelTextDelta, ReplyStopReason

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicModel", "map_anthropic_error"]

_REPLAYED = ("thinking", "redacted_thinking")
_STOP: dict[str, ReplyStopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_calls",
    "max_tokens": "max_tokens",
    # the reply was cut because input plus output reached the context window: cut all the same
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}


def map_anthropic_error(exc: Exception, source: str = "anthropic") -> ProviderError | None:
    """The package error for an exception of the ``anthropic`` SDK; ``None`` if it is not one."""
    import anthropic

    return sdk_error(anthropic, exc, source)


def _replay_data(content: list[Any], fmt: str) -> dict[str, Any]:
    """Signed reasoning goes back verbatim with the turn it belongs to, in this format only."""
    if not any(block.type in _REPLAYED for block in content):
        return {}
    blocks = [
        b.model_dump(mode="json", exclude_none=True)
        for b in content
        if b.type in (*_REPLAYED, "text", "tool_use")
    ]
    for block in blocks:
        block.pop("citations", None)
        block.pop("caller", None)
    return {fmt: {"content": blocks}}


def _usage(u: Any) -> Usage:
    # Figures go on as reported: ``ModelDone`` checks them and names what it had to correct.
    cache_read = getattr(u, "cache_read_input_tokens", 0)
    cache_write = getattr(u, "cache_creation_input_tokens", 0)
    split = getattr(u, "cache_creation", None)
    return Usage(
        input_tokens=token_sum(u.input_tokens, cache_read, cache_write),
        output_tokens=u.output_tokens,
        cached_input_tokens=cache_read,
        cache_write_tokens=cache_write,
        cache_write_long_tokens=getattr(split, "ephemeral_1h_input_tokens", 0),
    )


def _diagnosis(message: Any) -> str:
    """Anthropic's cache diagnosis as one word: ``hit``, a miss reason, ``pending`` or ``""``.

    No ``diagnostics`` object on a response that asked for one means no divergence was found;
    one without a reason means the comparison had not finished.
    """
    found = getattr(message, "diagnostics", None)
    if found is None:
        return ""
    reason = getattr(found, "cache_miss_reason", None)
    if reason is None:
        return "pending"
    return str(getattr(reason, "type", "") or "unavailable")


def _done(message: Any, fmt: str) -> ModelDone:
    text: list[str] = []
    calls: list[ToolCall] = []
    unusable: list[tuple[int, str]] = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input
            if not isinstance(arguments, dict):
                unusable.append((len(calls), "not a JSON object"))
                arguments = {}
            calls.append(ToolCall(block.name, dict(arguments), id=block.id or new_call_id()))
    data = _replay_data(list(message.content), fmt)
    assistant = AssistantMessage(
        content="".join(text), tool_calls=tuple(calls), provider="anthropic", provider_data=data
    )
    stop = _STOP.get(message.stop_reason or "", "other")
    return ModelDone(
        assistant,
        _usage(message.usage),
        message.model,
        stop,
        response_id=str(getattr(message, "id", "") or ""),
        provider_cache=_diagnosis(message),
        unusable_calls=tuple(unusable),
    )


class AnthropicModel(SDKModel):
    """A Claude model through the Messages API."""

    vendor = "anthropic"
    wire_format = "anthropic-messages"
    sdk_module = "anthropic"
    sdk_extra = "anthropic"
    key_env = ("ANTHROPIC_API_KEY",)

    def _make_sdk(self, key: str) -> AsyncAnthropic:
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=key, base_url=self._base_url, timeout=self.timeout, max_retries=0
        )

    def _map_error(self, exc: Exception) -> ProviderError | None:
        return map_anthropic_error(exc, self._source)

    async def _count(self, sdk: Any, body: dict[str, Any]) -> int | None:
        keys = ("model", "messages", "system", "tools", "tool_choice", "thinking", "betas")
        args = {k: body[k] for k in keys if k in body}
        api = sdk.beta.messages if "betas" in body else sdk.messages
        result = await api.count_tokens(**args)
        return usage_count(result.input_tokens)

    async def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        source = self._source
        api = sdk.beta.messages if "betas" in body else sdk.messages
        if not self.streaming:
            final = await api.create(**body)
            if not hasattr(final, "content"):
                raise ProviderError(f"{source}: malformed response: not a message")
            for event in replay(_done(final, self.wire_format)):
                yield event
            return
        stopped = False
        async with api.stream(**body) as stream:
            require_event_stream(stream.response.headers, source)
            async for event in stream:
                if event.type == "text":
                    yield ModelTextDelta(event.text)
                elif event.type == "message_stop":
                    stopped = True
            if not stopped:
                raise ProviderError(
                    f"{source}: the stream ended before message_stop; the reply is incomplete"
                )
            final = await stream.get_final_message()
        for item in replay(_done(final, self.wire_format), text=False):
            yield item
