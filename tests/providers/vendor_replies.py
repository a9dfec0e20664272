"""Recorded-shape replies of the four vendors, complete and streamed, for the loopback server.

A plain module shared by the provider client tests (the name is unique in the test tree).
Every stream here is whole: it ends with the vendor's finish reason or terminator.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from provider_fakes import LocalServer, sse

from agentsession.providers import ModelDone, get_model
from agentsession.request import Request, ToolSpec, UserMessage

SYSTEM = (("core.identity", "You are careful."), ("core.date", "Today is 2026-01-01."))
TOOLS = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}}),)
REQUEST = Request(SYSTEM, (UserMessage("Read a.txt"),), TOOLS)
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")

CHAT_FULL: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4.1",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Hello there",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'},
                    }
                ],
            },
        }
    ],
    "usage": {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "total_tokens": 105,
        "prompt_tokens_details": {"cached_tokens": 64},
    },
}


def chat_chunk(
    delta: dict[str, Any] | None, usage: dict[str, Any] | None = None, finish: str | None = None
) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1",
        "choices": choices,
        "usage": usage,
    }
    return sse(body)


CHAT_STREAM: list[str] = [
    chat_chunk({"role": "assistant", "content": "Hello"}),
    chat_chunk({"content": " there"}),
    chat_chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": ""},
                }
            ]
        }
    ),
    chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}),
    chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.txt"}'}}]}),
    chat_chunk({}, finish="tool_calls"),
    chat_chunk(None, CHAT_FULL["usage"]),
    "data: [DONE]\n\n",
]

RESP_FULL: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "gpt-4.1",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hello there", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_a",
            "name": "read_file",
            "arguments": '{"path":"a.txt"}',
            "status": "completed",
        },
    ],
    "usage": {
        "input_tokens": 100,
        "output_tokens": 5,
        "total_tokens": 105,
        "input_tokens_details": {"cached_tokens": 64},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}
RESP_STREAM: list[str] = [
    sse(
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {**RESP_FULL, "status": "in_progress", "output": []},
        },
        "response.created",
    ),
    sse(
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "Hello",
            "sequence_number": 1,
            "logprobs": [],
        },
        "response.output_text.delta",
    ),
    sse(
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": " there",
            "sequence_number": 2,
            "logprobs": [],
        },
        "response.output_text.delta",
    ),
    sse(
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "sequence_number": 3,
            "item": RESP_FULL["output"][1],
        },
        "response.output_item.done",
    ),
    sse(
        {"type": "response.completed", "sequence_number": 4, "response": RESP_FULL},
        "response.completed",
    ),
]

ANTHROPIC_USAGE: dict[str, Any] = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_read_input_tokens": 80,
    "cache_creation_input_tokens": 10,
}
ANTHROPIC_FULL: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-8",
    "content": [
        {"type": "text", "text": "Hello there"},
        {"type": "tool_use", "id": "call_a", "name": "read_file", "input": {"path": "a.txt"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": ANTHROPIC_USAGE,
}
ANTHROPIC_STREAM: list[str] = [
    sse(
        {
            "type": "message_start",
            "message": {**ANTHROPIC_FULL, "content": [], "stop_reason": None},
        },
        "message_start",
    ),
    sse(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        "content_block_start",
    ),
    sse(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Hello"},
        },
        "content_block_delta",
    ),
    sse(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": " there"},
        },
        "content_block_delta",
    ),
    sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
    sse(
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "call_a", "name": "read_file", "input": {}},
        },
        "content_block_start",
    ),
    sse(
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": '},
        },
        "content_block_delta",
    ),
    sse(
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '"a.txt"}'},
        },
        "content_block_delta",
    ),
    sse({"type": "content_block_stop", "index": 1}, "content_block_stop"),
    sse(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        "message_delta",
    ),
    sse({"type": "message_stop"}, "message_stop"),
]

GEMINI_USAGE: dict[str, Any] = {
    "promptTokenCount": 100,
    "candidatesTokenCount": 5,
    "cachedContentTokenCount": 64,
    "totalTokenCount": 105,
}
GEMINI_FULL: dict[str, Any] = {
    "candidates": [
        {
            "index": 0,
            "finishReason": "STOP",
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Hello there"},
                    {
                        "functionCall": {
                            "id": "call_a",
                            "name": "read_file",
                            "args": {"path": "a.txt"},
                        }
                    },
                ],
            },
        }
    ],
    "usageMetadata": GEMINI_USAGE,
    "modelVersion": "gemini-2.5-pro",
    "responseId": "r1",
}


def anthropic_text_stream(text: str, message_id: str = "msg_1") -> list[str]:
    """A whole Anthropic stream of one text block ``text``, ending with ``end_turn``."""
    start: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    block = {"type": "text", "text": ""}
    delta = {"type": "text_delta", "text": text}
    return [
        sse({"type": "message_start", "message": start}, "message_start"),
        sse(
            {"type": "content_block_start", "index": 0, "content_block": block},
            "content_block_start",
        ),
        sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"),
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]


def gem_chunk(
    parts: list[dict[str, Any]], usage: dict[str, Any] | None = None, finish: str | None = None
) -> str:
    candidate: dict[str, Any] = {"index": 0, "content": {"role": "model", "parts": parts}}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-2.5-pro",
        "responseId": "r1",
    }
    if usage:
        body["usageMetadata"] = usage
    return f"data: {json.dumps(body)}\r\n\r\n"


GEMINI_STREAM: list[str] = [
    gem_chunk([{"text": "Hello"}]),
    gem_chunk([{"text": " there"}]),
    gem_chunk(
        [{"functionCall": {"id": "call_a", "name": "read_file", "args": {"path": "a.txt"}}}],
        GEMINI_USAGE,
        "STOP",
    ),
]


@dataclass
class Vendor:
    spec: str
    full: dict[str, Any]
    stream: list[str]
    path: str
    stream_path: str
    cached: int

    def model(self, server: LocalServer, **kw: Any) -> Any:
        if self.spec.startswith("openai-compatible:"):
            return get_model(f"openai-compatible:{server.url}/v1#local-model", **kw)
        base = server.url + "/v1" if self.spec.startswith("openai") else server.url
        return get_model(self.spec, base_url=base, **kw)


VENDORS = {
    "openai-chat": Vendor(
        "openai-chat:gpt-4.1",
        CHAT_FULL,
        CHAT_STREAM,
        "/v1/chat/completions",
        "/v1/chat/completions",
        64,
    ),
    "openai-compatible": Vendor(
        "openai-compatible:x",
        CHAT_FULL,
        CHAT_STREAM,
        "/v1/chat/completions",
        "/v1/chat/completions",
        64,
    ),
    "openai-responses": Vendor(
        "openai:gpt-4.1", RESP_FULL, RESP_STREAM, "/v1/responses", "/v1/responses", 64
    ),
    "anthropic": Vendor(
        "anthropic:claude-opus-4-8",
        ANTHROPIC_FULL,
        ANTHROPIC_STREAM,
        "/v1/messages",
        "/v1/messages",
        80,
    ),
    "gemini": Vendor(
        "gemini:gemini-2.5-pro",
        GEMINI_FULL,
        GEMINI_STREAM,
        "/v1beta/models/gemini-2.5-pro:generateContent",
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        64,
    ),
}


async def run(model: Any, request: Request = REQUEST) -> tuple[list[Any], ModelDone]:
    """All events of one call (the client closed after it); exactly one ``ModelDone``, last."""
    try:
        events = [event async for event in model.stream(request)]
    finally:
        await model.aclose()
    assert isinstance(events[-1], ModelDone)
    assert sum(isinstance(e, ModelDone) for e in events) == 1
    return events, events[-1]
