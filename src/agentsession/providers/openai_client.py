"""OpenAI clients over the official ``openai`` SDK: Chat Completions and Responses.

``OpenAIChatModel`` also serves OpenAI-compatible servers (llama.cpp, vLLM, Ollama) through a
base URL. A stream is assembled into the same ``ModelDone`` a complete response converts to, so
the assistant message does not depend on streaming. A Chat stream is whole only when a choice
carried its ``finish_reason`` (the SDK consumes ``[DONE]`` itself); a Responses stream only
when ``response.completed`` (or ``response.incomplete``, with its reason) arrived. A tool call
without an id gets a fresh one. Chat stream pieces of tool calls are placed by their ``index``;
a server that sends none (Gemini's OpenAI endpoint is reported to) has them placed by call id
and order, and a stream that mixes both forms is refused. A Responses stream's text deltas
must add up to the final response's text (each made valid Unicode first): the deltas are what
the user saw, the final response is what is stored. The SDK's own retries are off: the session
retries transient failures with the same admitted request.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..hygiene import replace_surrogates
from ..request import AssistantMessage, Request, ToolCall, Usage, new_call_id
from ._client import SDKModel, parse_arguments, replay, require_event_stream, usage_count
from ._errors import sdk_error, status_error
from ._lowering import SEARCH_TOOL_NAME
from .base import CompactionDone, ModelDone, ModelEvent, ModelTextDelta, ReplyStopReason
from .cache_controls import CacheControls
from .openai_compact import (
    compact_arguments,
    compacted,
    compaction_input,
    long_writes,
    offers_compaction,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.responses import Response

__all__ = ["OpenAIChatModel", "OpenAIResponsesModel", "map_openai_error"]

_CHAT_STOP: dict[str, ReplyStopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "max_tokens",
    "content_filter": "content_filter",
}
_INCOMPLETE_STOP: dict[str, ReplyStopReason] = {
    "max_output_tokens": "max_tokens",
    "content_filter": "content_filter",
}


def map_openai_error(exc: Exception, source: str = "openai") -> ProviderError | None:
    """The package error for an exception of the ``openai`` SDK; ``None`` if it is not one."""
    import openai

    return sdk_error(openai, exc, source)


class _OpenAIBase(SDKModel):
    vendor = "openai"
    sdk_module = "openai"
    sdk_extra = "openai"
    key_env = ("OPENAI_API_KEY",)

    def _make_sdk(self, key: str) -> AsyncOpenAI:
        import openai

        return openai.AsyncOpenAI(
            api_key=key, base_url=self._base_url, timeout=self.timeout, max_retries=0
        )

    def _map_error(self, exc: Exception) -> ProviderError | None:
        return map_openai_error(exc, self._source)


# --- Chat Completions --------------------------------------------------------------------------


class _ChatReply:
    """One Chat Completions reply, fed by a complete message or by stream chunks."""

    def __init__(self, model: str, source: str = "openai") -> None:
        self.model = model
        self.source = source
        self.text: list[str] = []
        self.refused = False
        self.calls: dict[int, dict[str, str]] = {}
        self.usage = Usage()
        self.finish: str | None = None
        self.id = ""
        self.indexed: bool | None = None  # whether the stream's tool-call pieces carry index

    def add_message(self, message: Any) -> None:
        self.text.append(message.content or "")
        if getattr(message, "refusal", None):
            self.text.append(message.refusal)
            self.refused = True
        for index, call in enumerate(message.tool_calls or []):
            if call.type == "function":
                fn = call.function
                self.calls[index] = {"id": call.id or "", "name": fn.name, "args": fn.arguments}

    def add_chunk(self, chunk: Any) -> list[str]:
        """Fold one stream chunk in; returns the text that arrived with it."""
        self.model = chunk.model or self.model
        self.id = chunk.id or self.id
        if chunk.usage is not None:
            self.usage = _chat_usage(chunk.usage)
        pieces: list[str] = []
        for choice in chunk.choices:
            delta = choice.delta
            if choice.finish_reason:
                self.finish = choice.finish_reason
            if getattr(delta, "refusal", None):
                self.refused = True
                pieces.append(delta.refusal)
            if delta.content:
                pieces.append(delta.content)
            for piece in delta.tool_calls or []:
                slot = self._slot(piece)
                slot["id"] = piece.id or slot["id"]
                if piece.function is not None:
                    slot["name"] += piece.function.name or ""
                    slot["args"] += piece.function.arguments or ""
        self.text += pieces
        return pieces

    def _slot(self, piece: Any) -> dict[str, str]:
        """The call a stream piece continues or starts: by ``index``, else by id and order."""
        index = getattr(piece, "index", None)
        indexed = isinstance(index, int)
        if self.indexed is None:
            self.indexed = indexed
        elif self.indexed != indexed:
            raise ProviderError(
                f"{self.source}: malformed stream: tool-call pieces with and without an index"
                " in one reply"
            )
        if isinstance(index, int):
            return self.calls.setdefault(index, {"id": "", "name": "", "args": ""})
        call_id = getattr(piece, "id", None) or ""
        for slot in self.calls.values():
            if call_id and slot["id"] == call_id:
                return slot
        last = self.calls.get(len(self.calls) - 1)
        function = getattr(piece, "function", None)
        named = bool(getattr(function, "name", None))
        if last is not None and not call_id and not (named and last["name"] and last["args"]):
            return last  # a piece without id continues the last call, unless it starts one
        return self.calls.setdefault(len(self.calls), {"id": "", "name": "", "args": ""})

    def done(self, provider: str) -> ModelDone:
        calls: list[ToolCall] = []
        unusable: list[tuple[int, str]] = []
        ended = self.finish in ("tool_calls", "function_call", "stop")
        for index, (_, c) in enumerate(sorted(self.calls.items())):
            arguments, problem = parse_arguments(c["args"], ended=ended)
            if problem is not None:
                unusable.append((index, problem))
            calls.append(ToolCall(c["name"], arguments, id=c["id"] or new_call_id()))
        message = AssistantMessage(
            content="".join(self.text), tool_calls=tuple(calls), provider=provider
        )
        reason: ReplyStopReason = (
            "refusal" if self.refused else _CHAT_STOP.get(self.finish or "", "other")
        )
        return ModelDone(
            message,
            self.usage,
            self.model,
            reason,
            response_id=self.id,
            unusable_calls=tuple(unusable),
        )


def _chat_usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        cached_input_tokens=getattr(details, "cached_tokens", 0),
        cache_write_tokens=getattr(details, "cache_write_tokens", 0),
    )


class OpenAIChatModel(_OpenAIBase):
    """A Chat Completions model: ``openai`` with ``wire_format="openai-chat"``, or compatible."""

    wire_format = "openai-chat"

    async def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        from openai.types.chat import ChatCompletion

        source, provider = self._source, self._profile.provider
        reply = _ChatReply(self.model, source)
        if not self.streaming:
            completion = await sdk.chat.completions.create(**body)
            if not isinstance(completion, ChatCompletion) or not completion.choices:
                raise ProviderError(f"{source}: malformed response: no chat completion choices")
            choice = completion.choices[0]
            reply.model, reply.usage = completion.model, _chat_usage(completion.usage)
            reply.id = completion.id or ""
            reply.finish = choice.finish_reason
            reply.add_message(choice.message)
            for event in replay(reply.done(provider)):
                yield event
            return
        stream = await sdk.chat.completions.create(
            **body, stream=True, stream_options={"include_usage": True}
        )
        require_event_stream(stream.response.headers, source)
        async for chunk in stream:
            for piece in reply.add_chunk(chunk):
                yield ModelTextDelta(piece)
        if reply.finish is None:
            raise ProviderError(
                f"{source}: the stream ended without a finish reason; the reply is incomplete"
            )
        for event in replay(reply.done(provider), text=False):
            yield event


# --- Responses ---------------------------------------------------------------------------------


def _responses_stop(response: Response, source: str) -> ReplyStopReason:
    match response.status:
        case "completed" | None:
            return "end_turn"
        case "incomplete":
            details = response.incomplete_details
            reason = details.reason if details is not None else None
            return _INCOMPLETE_STOP.get(reason or "", "other")
        case "failed":
            error = response.error
            body = error.model_dump(mode="json") if error is not None else None
            raise status_error(source, None, body, fallback="the response failed")
        case status:
            raise ProviderError(f"{source}: the response is {status}, not finished")


def _responses_done(response: Response, fmt: str, source: str) -> ModelDone:
    stop = _responses_stop(response, source)
    text: list[str] = []
    calls: list[ToolCall] = []
    unusable: list[tuple[int, str]] = []
    reasoning: list[dict[str, Any]] = []
    searches: list[dict[str, Any]] = []
    for item in response.output:
        match item.type:
            case "message":
                for part in item.content:
                    if part.type == "output_text":
                        text.append(part.text)
                    elif part.type == "refusal":
                        text.append(part.refusal)
                        stop = "refusal"
            case "function_call":
                args, problem = parse_arguments(
                    item.arguments, ended=response.status == "completed"
                )
                if problem is not None:
                    unusable.append((len(calls), problem))
                calls.append(ToolCall(item.name, args, id=item.call_id or new_call_id()))
            case "reasoning":
                if getattr(item, "encrypted_content", None):
                    reasoning.append(item.model_dump(mode="json", exclude_none=True))
            case "tool_search_call" if item.execution == "client":
                # The session's own search, asked through the API's tool search: a call of the
                # proxy, and the item as sent, to be replayed byte for byte.
                call_id = item.call_id or new_call_id()
                args = item.arguments if isinstance(item.arguments, dict) else {}
                if not isinstance(item.arguments, dict):
                    unusable.append((len(calls), "the tool search arguments are not an object"))
                calls.append(ToolCall(SEARCH_TOOL_NAME, dict(args), id=call_id))
                searches.append(
                    item.model_dump(mode="json", exclude_none=True) | {"call_id": call_id}
                )
            case _:
                pass  # hosted tool items are not requested by this client
    usage = Usage()
    if response.usage is not None:
        details = response.usage.input_tokens_details
        usage = Usage(
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cached_input_tokens=getattr(details, "cached_tokens", 0),
            cache_write_tokens=getattr(details, "cache_write_tokens", 0),
            cache_write_long_tokens=long_writes(details),
        )
    kept: dict[str, Any] = {"reasoning": reasoning} if reasoning else {}
    if searches:
        kept["tool_search_calls"] = searches
    data = {fmt: kept} if kept else {}
    message = AssistantMessage(
        content="".join(text), tool_calls=tuple(calls), provider="openai", provider_data=data
    )
    diagnosis = _responses_diagnosis(getattr(response, "prompt_cache_diagnostics", None))
    return ModelDone(
        message,
        usage,
        response.model,
        stop,
        response_id=response.id,
        provider_cache=diagnosis,
        unusable_calls=tuple(unusable),
    )


def _responses_diagnosis(found: Any) -> str:
    """The Responses API's cache diagnosis as one word: ``hit``, a miss reason, or ``""``."""
    kind = getattr(found, "type", None)
    if kind is None:
        return ""
    if kind == "cache_hit":
        return "hit"
    if kind == "cache_miss":
        return str(getattr(found, "reason", "") or "cache_miss")
    return str(kind)  # comparison_response_not_found, unavailable


class OpenAIResponsesModel(_OpenAIBase):
    """A Responses API model (the default for ``openai:`` model strings)."""

    wire_format = "openai-responses"

    async def _count(self, sdk: Any, body: dict[str, Any]) -> int | None:
        keys = ("model", "input", "instructions", "tools", "tool_choice", "reasoning", "text")
        args = {k: body[k] for k in keys if k in body}
        result = await sdk.responses.input_tokens.count(**args)
        return usage_count(result.input_tokens)

    def compaction_input(self, request: Request) -> tuple[Request, bool] | None:
        """``request`` without its tools: the compaction takes none.

        It reads the cache only when the conversation declares no tools; ``None`` with an SDK
        without the call.
        """
        return compaction_input(request) if offers_compaction() else None

    async def compact_with(self, request: Request, controls: CacheControls) -> CompactionDone:
        """OpenAI's compaction of ``request`` (``responses.compact``), see ``openai_compact``.

        The output items are kept as the raw JSON the server sent, to be replayed unchanged.
        """
        args = compact_arguments(self._controlled(request, controls))
        try:
            raw = await self._client().responses.with_raw_response.compact(**args)
            parsed = raw.parse()  # the SDK's ``CompactedResponse``: its usage
            sent = json.loads(raw.content)  # the items as the server sent them, key order kept
        except Exception as exc:
            raise self._failure(exc) from exc
        return compacted(sent, parsed, self.wire_format, self.model)

    async def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        from openai.types.responses import Response

        source = self._source
        if not self.streaming:
            response = await sdk.responses.create(**body)
            if not isinstance(response, Response):
                raise ProviderError(f"{source}: malformed response: not a Responses object")
            for event in replay(_responses_done(response, self.wire_format, source)):
                yield event
            return
        stream = await sdk.responses.create(**body, stream=True)
        require_event_stream(stream.response.headers, source)
        final: Response | None = None
        streamed: list[str] = []
        async for event in stream:
            match event.type:
                case "response.output_text.delta" | "response.refusal.delta":
                    streamed.append(event.delta)
                    yield ModelTextDelta(event.delta)
                case "response.completed" | "response.incomplete" | "response.failed":
                    final = event.response
                case "error":
                    body = {"code": event.code, "message": event.message}
                    raise status_error(source, None, body, fallback="the stream failed")
                case _:
                    pass
        if final is None:
            raise ProviderError(
                f"{source}: the stream ended before response.completed; the reply is incomplete"
            )
        done = _responses_done(final, self.wire_format, source)
        _check_streamed(streamed, done.message.content, source)
        for item in replay(done, text=not streamed):
            yield item


def _check_streamed(streamed: list[str], final: str, source: str) -> None:
    """Refuse a stream whose text deltas are not the final response's text.

    A stream without deltas (a server that sends only the final response) is accepted: its
    text then reaches the caller once, from the final response. Both sides are compared as
    valid Unicode, so a pair a proxy split between two deltas matches its character.
    """
    if not streamed:
        return
    shown = replace_surrogates("".join(streamed))[0]
    if shown != replace_surrogates(final)[0]:
        raise ProviderError(
            f"{source}: the streamed text ({len(shown)} characters) is not the final"
            f" response's text ({len(final)} characters); the reply is inconsistent"
        )
