"""Gemini client over the official ``google-genai`` SDK (Gemini Developer API).

Streamed chunks and a complete response are both reduced to one normalised list of parts
(adjacent text of the same kind merged), which then becomes the assistant message, so the two
paths agree. Thought signatures are kept as replay data for this format only. A function call
without an id gets one derived from the response id, so replays stay deterministic.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..request import AssistantMessage, ToolCall, Usage, new_call_id
from ._client import SDKModel, api_key_from_env, require_sdk
from .base import ModelDone, ModelEvent, ModelTextDelta, ModelToolCall

if TYPE_CHECKING:
    from google.genai import Client

__all__ = ["GeminiModel"]


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


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
        input_tokens=_int(meta.prompt_token_count),
        output_tokens=_int(meta.candidates_token_count) + _int(meta.thoughts_token_count),
        cached_input_tokens=_int(meta.cached_content_token_count),
    )


def _candidate_parts(response: Any) -> list[Any]:
    candidates = response.candidates or []
    if not candidates:
        return []
    content = candidates[0].content
    return list(content.parts or []) if content is not None else []


class GeminiModel(SDKModel):
    """A Gemini model through ``generateContent`` / ``streamGenerateContent``."""

    vendor = "gemini"
    wire_format = "gemini"

    def _make_sdk(self) -> Client:
        require_sdk("google.genai", "gemini")
        from google import genai
        from google.genai import types

        key = self._api_key or api_key_from_env(("GEMINI_API_KEY", "GOOGLE_API_KEY"), self.vendor)
        options = types.HttpOptions(
            base_url=self._base_url,
            timeout=int(self.timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return genai.Client(api_key=key, http_options=options)

    async def _close_sdk(self, sdk: Any) -> None:
        await sdk.aio.aclose()

    async def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        counter = [0]
        if not self.streaming:
            response = await sdk.aio.models.generate_content(**body)
            if not response.candidates:
                raise ProviderError("gemini: malformed response: no candidates")
            rid = response.response_id or ""
            raw = [_part_dict(p, rid, counter) for p in _candidate_parts(response)]
            message = _message(_merge([p for p in raw if p is not None]), self.wire_format)
            if message.content:
                yield ModelTextDelta(message.content)
            for call in message.tool_calls:
                yield ModelToolCall(call)
            model = response.model_version or self.model
            yield ModelDone(message, _usage(response.usage_metadata), model)
            return
        parts: list[dict[str, Any]] = []
        usage_meta: Any = None
        model = self.model
        seen_candidates = False
        async for chunk in await sdk.aio.models.generate_content_stream(**body):
            usage_meta = chunk.usage_metadata or usage_meta
            model = chunk.model_version or model
            seen_candidates = seen_candidates or bool(chunk.candidates)
            for part in _candidate_parts(chunk):
                converted = _part_dict(part, chunk.response_id or "", counter)
                if converted is None:
                    continue
                parts.append(converted)
                if "text" in converted and not converted.get("thought") and converted["text"]:
                    yield ModelTextDelta(converted["text"])
                elif "function_call" in converted:
                    fc = converted["function_call"]
                    yield ModelToolCall(ToolCall(fc["name"], fc["args"], id=fc["id"]))
        if not seen_candidates:
            raise ProviderError("gemini: malformed response: no candidates")
        message = _message(_merge(parts), self.wire_format)
        yield ModelDone(message, _usage(usage_meta), model)
