"""Gemini client over the official ``google-genai`` SDK (Gemini Developer API).

Streamed chunks and a complete response are both reduced to one normalised list of parts
(adjacent text of the same kind merged), which then becomes the assistant message, so the two
paths agree. Thought signatures are kept as replay data for this format only. A function call
without an id gets one derived from the response id, so replays stay deterministic. A stream is
whole only when a chunk carried the candidate's finish reason.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..log.usage_check import token_sum
from ..request import AssistantMessage, ToolCall, Usage, new_call_id
from ._client import SDKModel, replay, require_event_stream
from ._errors import status_error, transport_error
from .base import ModelDone, ModelEvent, ModelTextDelta, ReplyStopReason

if TYPE_CHECKING:
    from google.genai import Client

__all__ = ["GeminiModel", "map_gemini_error"]

# Finish reasons that mean a filter stopped the reply (safety, recitation, blocklists, PII).
_FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)


def _part_dict(part: Any, response_id: str, counter: list[int]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if part.function_call is not None:
        fc = part.function_call
        call_id = fc.id or (f"call_{response_id}_{counter[0]}" if response_id else new_call_id())
        counter[0] += 1
        out["function_call"] = {"id": call_id, "name": fc.name or "", "args": dict(fc.args or {})}
    elif part.text is not None:
        out["text"] = part.text
        if part.thought:
            out["thought"] = True
    else:
        return None  # inline media and executable code are not requested by this client
    if part.thought_signature:
        out["thought_signature"] = base64.b64encode(part.thought_signature).decode("ascii")
    return out


def _merge(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for part in parts:
        last = merged[-1] if merged else None
        if (
            last is not None
            and "text" in part
            and "text" in last
            and last.get("thought") == part.get("thought")
        ):
            last["text"] += part["text"]
            if "thought_signature" in part:
                last["thought_signature"] = part["thought_signature"]
        else:
            merged.append(dict(part))
    return merged


def _message(parts: list[dict[str, Any]], fmt: str) -> AssistantMessage:
    text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
    calls = tuple(
        ToolCall(
            p["function_call"]["name"], p["function_call"]["args"], id=p["function_call"]["id"]
        )
        for p in parts
        if "function_call" in p
    )
    replay = any("thought_signature" in p or p.get("thought") for p in parts)
    data = {fmt: {"parts": parts}} if replay else {}
    return AssistantMessage(content=text, tool_calls=calls, provider="gemini", provider_data=data)


def _usage(meta: Any) -> Usage:
    if meta is None:
        return Usage()
    return Usage(
        input_tokens=meta.prompt_token_count,
        output_tokens=token_sum(meta.candidates_token_count, meta.thoughts_token_count),
        cached_input_tokens=meta.cached_content_token_count,
    )


def _candidate_parts(response: Any) -> list[Any]:
    candidates = response.candidates or []
    if not candidates:
        return []
    content = candidates[0].content
    return list(content.parts or []) if content is not None else []


def _stop(reason: str) -> ReplyStopReason:
    if reason == "STOP":
        return "end_turn"
    if reason == "MAX_TOKENS":
        return "max_tokens"
    return "content_filter" if reason in _FILTERED else "other"


def map_gemini_error(exc: Exception, source: str = "gemini") -> ProviderError | None:
    """The package error for an exception of ``google-genai``; ``None`` if it is not one.

    The SDK raises ``errors.APIError`` (``ClientError`` for 4xx, ``ServerError`` for 5xx, also
    for an error chunk inside a stream) and lets its HTTP library's own timeouts and connection
    errors through; those are recognised by type.
    """
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        status = exc.code if isinstance(exc.code, int) else None
        raw = getattr(exc.response, "headers", None)
        headers = {str(k): str(v) for k, v in raw.items()} if raw is not None else None
        return status_error(source, status, exc.details, headers=headers, fallback=str(exc))
    if isinstance(exc, errors.UnknownApiResponseError):
        return ProviderError(f"{source}: malformed response: {exc}")
    return transport_error(exc, source)


class _GeminiReply:
    """One Gemini reply, fed by a complete response or by stream chunks."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.parts: list[dict[str, Any]] = []
        self.usage_meta: Any = None
        self.finish: str | None = None
        self.counter = [0]

    def add(self, response: Any) -> list[dict[str, Any]]:
        """Fold one response or chunk in; returns its converted parts."""
        self.usage_meta = response.usage_metadata or self.usage_meta
        self.model = response.model_version or self.model
        if response.candidates:
            reason = response.candidates[0].finish_reason
            name = str(getattr(reason, "value", reason)).upper() if reason is not None else ""
            if name and name != "FINISH_REASON_UNSPECIFIED":
                self.finish = name
        rid = response.response_id or ""
        converted = [_part_dict(p, rid, self.counter) for p in _candidate_parts(response)]
        fresh = [p for p in converted if p is not None]
        self.parts += fresh
        return fresh

    def done(self, fmt: str) -> ModelDone:
        message = _message(_merge(self.parts), fmt)
        return ModelDone(message, _usage(self.usage_meta), self.model, _stop(self.finish or ""))


def _blocked(response: Any, source: str) -> ProviderError:
    feedback = getattr(response, "prompt_feedback", None)
    reason = getattr(feedback, "block_reason", None)
    if reason is not None:
        return ProviderError(f"{source}: the prompt was blocked ({reason})")
    return ProviderError(f"{source}: malformed response: no candidates")


class GeminiModel(SDKModel):
    """A Gemini model through ``generateContent`` / ``streamGenerateContent``."""

    vendor = "gemini"
    wire_format = "gemini"
    sdk_module = "google.genai"
    sdk_extra = "gemini"
    key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    def _make_sdk(self, key: str) -> Client:
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            base_url=self._base_url,
            timeout=int(self.timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return genai.Client(api_key=key, http_options=options)

    async def _close_sdk(self, sdk: Any) -> None:
        await sdk.aio.aclose()

    def _map_error(self, exc: Exception) -> ProviderError | None:
        return map_gemini_error(exc, self._source)

    async def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        source = self._source
        reply = _GeminiReply(self.model)
        if not self.streaming:
            response = await sdk.aio.models.generate_content(**body)
            if not response.candidates:
                raise _blocked(response, source)
            reply.add(response)
            for event in replay(reply.done(self.wire_format)):
                yield event
            return
        last: Any = None
        async for chunk in await sdk.aio.models.generate_content_stream(**body):
            if last is None and chunk.sdk_http_response is not None:
                require_event_stream(_lower_keys(chunk.sdk_http_response.headers), source)
            last = chunk
            for part in reply.add(chunk):
                if "text" in part and not part.get("thought") and part["text"]:
                    yield ModelTextDelta(part["text"])
        if reply.finish is None:
            if last is not None and not last.candidates:
                raise _blocked(last, source)
            raise ProviderError(
                f"{source}: the stream ended without a finish reason; the reply is incomplete"
            )
        for event in replay(reply.done(self.wire_format), text=False):
            yield event


def _lower_keys(headers: dict[str, str] | None) -> dict[str, str]:
    return {k.lower(): v for k, v in (headers or {}).items()}
