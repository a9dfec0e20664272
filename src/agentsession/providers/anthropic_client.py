"""Anthropic client over the official ``anthropic`` SDK (Messages API).

A body carrying ``tool_addition`` / ``tool_removal`` blocks goes through the SDK's beta
namespace with the beta named in the body; everything else through the stable one. A stream's
raw events are folded into the final message here (``_Assembly``), and both paths convert the
final message with one function. A tool call's input is the ``input_json`` text it streamed,
parsed strictly: the SDK's own accumulation fills in a cut fragment (``{"days": 15`` becomes
15 days) and fails on text that is not valid Unicode, so it is not used. A stream is whole
only when ``message_stop`` arrived. Usage counts all input: uncached, read from cache and
written to cache.

A reply the server compacted in the middle of (the threshold edit, ``compact_20260112``)
opens with a ``compaction`` block: it comes back on ``ModelDone.compaction`` as a JSON object
with the fields the server sent (streamed: its start, then its ``compaction_delta``), in the
order the SDK's ``BetaCompactionBlockParam`` names them, and never in the message's replay data.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..log.usage_check import token_sum
from ..request import AssistantMessage, Request, ToolCall, Usage, new_call_id
from ._client import SDKModel, parse_arguments, replay, require_event_stream, usage_count
from ._errors import sdk_error
from .anthropic_messages import THRESHOLD_BETA
from .base import CompactionDone, ModelDone, ModelEvent, ModelTextDelta, ReplyStopReason
from .cache_controls import CacheControls

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["COMPACTION_BETA", "AnthropicModel", "map_anthropic_error"]

COMPACTION_BETA = "compact-2026-09-04"
"""The beta that names the ``compaction`` parameter (on-demand compaction)."""

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


# Stop reasons after which a tool_use block's input is as the model meant it.
_ENDED = frozenset({"tool_use", "end_turn", "stop_sequence"})


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


_BLOCK_FIELDS = ("type", "content", "encrypted_content", "signature", "tool_changes")


def _compaction(block: Any) -> dict[str, Any]:
    """A ``compaction`` block as JSON: the fields the server sent, none added or dropped."""
    dumped: dict[str, Any] = block.model_dump(mode="json", exclude_unset=True)
    ordered = {key: dumped[key] for key in _BLOCK_FIELDS if key in dumped}
    return ordered | {key: value for key, value in dumped.items() if key not in ordered}


def _usage(u: Any) -> Usage:
    # Figures go on as reported: ``ModelDone`` checks them and names what it had to correct.
    # A compaction's iterations are billed but left out of the top-level figures (the SDK's
    # ``BetaIterationsUsage``): each is added here, so the bill counts it once.
    found = _one_usage(u)
    for item in getattr(u, "iterations", None) or ():
        if getattr(item, "type", "") == "compaction":
            more = _one_usage(item)
            found = Usage(*(a + b for a, b in zip(_figures(found), _figures(more), strict=True)))
    return found


def _figures(u: Usage) -> tuple[int, int, int, int, int]:
    return (
        u.input_tokens,
        u.output_tokens,
        u.cached_input_tokens,
        u.cache_write_tokens,
        u.cache_write_long_tokens,
    )


def _one_usage(u: Any) -> Usage:
    cache_read = getattr(u, "cache_read_input_tokens", 0) or 0
    cache_write = getattr(u, "cache_creation_input_tokens", 0) or 0
    split = getattr(u, "cache_creation", None)
    return Usage(
        input_tokens=token_sum(u.input_tokens, cache_read, cache_write),
        output_tokens=u.output_tokens,
        cached_input_tokens=cache_read,
        cache_write_tokens=cache_write,
        cache_write_long_tokens=getattr(split, "ephemeral_1h_input_tokens", 0) or 0,
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


def _done(message: Any, fmt: str, problems: dict[int, str] | None = None) -> ModelDone:
    """The final message as a ``ModelDone``.

    ``problems``: why a block's input is unusable (by the block's ``id()``), found where its
    streamed text was parsed.
    """
    text: list[str] = []
    calls: list[ToolCall] = []
    unusable: list[tuple[int, str]] = []
    compaction: dict[str, Any] | None = None
    for block in message.content:
        if block.type == "compaction":
            compaction = _compaction(block)  # the last one: the server drops what precedes it
        elif block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input
            problem = (problems or {}).get(id(block))
            if problem is None and not isinstance(arguments, dict):
                problem = "not a JSON object"
            if problem is not None:
                unusable.append((len(calls), problem))
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
        compaction=compaction,
    )


class _Assembly:
    """A stream's raw events folded into the final message; tool input parsed strictly here."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.message: Any = None
        self.blocks: dict[int, Any] = {}
        self.inputs: dict[int, list[str]] = {}
        self.closed: set[int] = set()  # blocks whose content_block_stop arrived
        self.stopped = False

    def add(self, event: Any) -> str:
        """Fold ``event`` in; returns the reply text it carried."""
        kind = event.type
        if kind == "message_start":
            self.message = event.message
        elif self.message is None:
            raise ProviderError(f"{self.source}: malformed stream: {kind} before message_start")
        elif kind == "content_block_start":
            self.blocks[event.index] = event.content_block
        elif kind == "content_block_delta":
            return self._delta(self.blocks.get(event.index), event.index, event.delta)
        elif kind == "content_block_stop":
            self.closed.add(event.index)
        elif kind == "message_delta":
            self._ended(event)
        elif kind == "message_stop":
            self.stopped = True
        return ""

    def _delta(self, block: Any, index: int, delta: Any) -> str:
        if block is None:
            raise ProviderError(f"{self.source}: malformed stream: a delta for no content block")
        match delta.type, block.type:
            case "text_delta", "text":
                block.text += delta.text
                return str(delta.text)
            case "input_json_delta", _:
                self.inputs.setdefault(index, []).append(delta.partial_json)
            case "thinking_delta", "thinking":
                block.thinking += delta.thinking
            case "signature_delta", "thinking":
                block.signature = delta.signature
            case "compaction_delta", "compaction":
                for name in ("content", "encrypted_content"):  # as sent: none made up
                    if name in delta.model_fields_set:
                        setattr(block, name, getattr(delta, name))
            case _:
                pass  # citations are not replayed; other deltas are not requested
        return ""

    def _ended(self, event: Any) -> None:
        message, usage = self.message, event.usage
        message.stop_reason = event.delta.stop_reason
        message.usage.output_tokens = usage.output_tokens
        # Totals on message_delta overwrite; one left out keeps message_start's value.
        names = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        for name in (*names, "iterations"):  # a compaction's iterations come at the end
            value = getattr(usage, name, None)
            if value is not None:
                setattr(message.usage, name, value)

    def final(self, fmt: str) -> ModelDone:
        """The assembled message as a ``ModelDone``, each tool input parsed from its text."""
        message = self.message
        message.content = [self.blocks[i] for i in sorted(self.blocks)]
        ended = message.stop_reason in _ENDED
        problems: dict[int, str] = {}
        for index, block in self.blocks.items():
            if block.type != "tool_use":
                continue
            text = "".join(self.inputs.get(index, ()))
            if index not in self.closed:
                problem: str | None = "cut before the end (its block never closed)"
            elif not text and ended:
                continue  # no input text: the object the block started with
            else:
                block.input, problem = parse_arguments(text, ended=ended)
            if problem is not None:
                problems[id(block)] = problem
        return _done(message, fmt, problems)


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

    def compaction_input(self, request: Request) -> tuple[Request, bool]:
        """The live request itself, read from the cache the conversation wrote."""
        return request, True

    async def compact_with(self, request: Request, controls: CacheControls) -> CompactionDone:
        """Anthropic's on-demand compaction of ``request`` (the ``compaction`` parameter).

        The request goes with the session's cache controls, so its prefix is read from the
        cache the conversation wrote; the answer holds only the compaction block, kept as the
        raw JSON the server sent. A block without content (the server's failed compaction)
        gives an empty ``text``.
        """
        body = self._controlled(request, controls)
        # The parameter cannot be combined with ``context_management`` (the threshold edit).
        body.pop("context_management", None)
        betas = [b for b in body.get("betas", ()) if b != THRESHOLD_BETA]
        body["betas"] = [*betas, COMPACTION_BETA]
        body["compaction"] = {"type": "summarize"}
        try:
            raw = await self._client().beta.messages.with_raw_response.create(**body)
            message = await raw.parse()
            sent = await raw.json()
        except Exception as exc:
            raise self._failure(exc) from exc
        blocks = [b for b in sent.get("content") or () if b.get("type") == "compaction"]
        block = blocks[0] if len(blocks) == 1 else {}
        text = block.get("content")
        # A failed compaction (no content) is billed all the same: the caller records the
        # usage and reports the empty summary.
        return CompactionDone(
            self.wire_format,
            block,
            text if isinstance(text, str) else "",
            _usage(message.usage),
            str(message.model or ""),
        )

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
        assembly = _Assembly(source)
        stream = await api.create(**body, stream=True)
        require_event_stream(stream.response.headers, source)
        async with stream:
            async for event in stream:
                text = assembly.add(event)
                if text:
                    yield ModelTextDelta(text)
        if not assembly.stopped:
            raise ProviderError(
                f"{source}: the stream ended before message_stop; the reply is incomplete"
            )
        for item in replay(assembly.final(self.wire_format), text=False):
            yield item
