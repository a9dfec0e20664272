"""The simulator's streaming shapes: a complete answer told as the providers' event streams.

Each function takes the answer ``provider_sim`` would send whole and returns the server-sent
events the provider documents for the same reply, as ``(event name or None, data)`` pairs:

- OpenAI Chat Completions (``stream: true``): ``chat.completion.chunk`` objects (the role,
  text or tool-call argument deltas, the finish reason) and, when ``stream_options.
  include_usage`` is set, a last chunk with no choices and the usage; then ``[DONE]``.
- OpenAI Responses: ``response.created``, ``response.output_item.added``, the text or
  function-call argument deltas and their ``done`` events, ``response.output_item.done`` and
  ``response.completed`` carrying the whole response (usage, cache diagnosis), each with its
  ``sequence_number``.
- Anthropic Messages: ``message_start`` (the message with its input usage and the cache
  diagnosis), ``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta`` (stop
  reason, cumulative usage) and ``message_stop``. A compaction block starts with its other
  fields (the signature) and gets its summary and opaque content in one ``compaction_delta``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["anthropic_stream", "chat_stream", "encode", "responses_stream"]

Event = tuple[str | None, Any]


def _pieces(text: str, size: int = 24) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def encode(events: list[Event]) -> bytes:
    """The events as an SSE body."""
    out: list[str] = []
    for name, data in events:
        line = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {line}\n\n")
    return "".join(out).encode()


def chat_stream(answer: dict[str, Any], include_usage: bool) -> list[Event]:
    choice = answer["choices"][0]
    message = choice["message"]
    head = {k: answer[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
        return None, head | {
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
        }

    events = [chunk({"role": "assistant", "content": ""})]
    for piece in _pieces(message["content"]) if message.get("content") else []:
        events.append(chunk({"content": piece}))
    for index, call in enumerate(message.get("tool_calls") or []):
        start = {"id": call["id"], "type": "function"}
        function = {"name": call["function"]["name"], "arguments": ""}
        events.append(chunk({"tool_calls": [{"index": index, **start, "function": function}]}))
        for piece in _pieces(call["function"]["arguments"]):
            part = {"index": index, "function": {"arguments": piece}}
            events.append(chunk({"tool_calls": [part]}))
    events.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        events.append((None, head | {"choices": [], "usage": answer["usage"]}))
    events.append((None, "[DONE]"))
    return events


def responses_stream(answer: dict[str, Any]) -> list[Event]:
    events: list[Event] = []

    def add(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **fields}))

    opening = copy.deepcopy(answer) | {"status": "in_progress", "output": [], "usage": None}
    opening.pop("prompt_cache_diagnostics", None)
    add("response.created", response=opening)
    for at, item in enumerate(answer["output"]):
        ids = {"item_id": item["id"], "output_index": at}
        if item["type"] == "message":
            empty = item | {"status": "in_progress", "content": []}
            add("response.output_item.added", output_index=at, item=empty)
            for k, part in enumerate(item["content"]):
                blank = part | {"text": ""}
                add("response.content_part.added", **ids, content_index=k, part=blank)
                for piece in _pieces(part["text"]):
                    add(
                        "response.output_text.delta",
                        **ids,
                        content_index=k,
                        delta=piece,
                        logprobs=[],
                    )
                add(
                    "response.output_text.done",
                    **ids,
                    content_index=k,
                    text=part["text"],
                    logprobs=[],
                )
                add("response.content_part.done", **ids, content_index=k, part=part)
        elif item["type"] == "tool_search_call":  # no argument deltas: added, then done
            add("response.output_item.added", output_index=at, item=item)
        else:
            empty = item | {"status": "in_progress", "arguments": ""}
            add("response.output_item.added", output_index=at, item=empty)
            for piece in _pieces(item["arguments"]):
                add("response.function_call_arguments.delta", **ids, delta=piece)
            add("response.function_call_arguments.done", **ids, arguments=item["arguments"])
        add("response.output_item.done", output_index=at, item=item)
    add("response.completed", response=answer)
    return events


def anthropic_stream(answer: dict[str, Any]) -> list[Event]:
    usage = answer["usage"]
    opening = copy.deepcopy(answer) | {"content": [], "stop_reason": None, "stop_sequence": None}
    opening["usage"] = usage | {"output_tokens": 1}
    events: list[Event] = [("message_start", {"type": "message_start", "message": opening})]
    for index, block in enumerate(answer["content"]):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        elif block["type"] == "compaction":
            # The summary arrives whole in one delta; the signature with the block's start.
            carried = ("content", "encrypted_content")
            start = {k: v for k, v in block.items() if k not in carried}
            deltas = [{"type": "compaction_delta"} | {k: block[k] for k in carried if k in block}]
        else:
            start = block | {"input": {}}
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(raw)]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        for delta in deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": answer["stop_reason"], "stop_sequence": None}
    events.append(("message_delta", {"type": "message_delta", "delta": stop, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events
