"""The official SDK clients against a loopback server: exact request bodies, streamed and complete
responses parsed back into the neutral form, and vendor failures mapped onto the error tree."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from provider_fakes import LocalServer, Reply, sse

from agentsession.errors import (
    CredentialsError,
    ProviderError,
    RequestValidationError,
    TransientProviderError,
    UnknownModelError,
)
from agentsession.providers import (
    ModelDone,
    ModelTextDelta,
    ModelToolCall,
    get_model,
)
from agentsession.request import Request, ToolResultMessage, ToolSpec, UserMessage

SYSTEM = (("core.identity", "You are careful."), ("core.date", "Today is 2026-01-01."))
TOOLS = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}}),)
REQUEST = Request(SYSTEM, (UserMessage("Read a.txt"),), TOOLS)
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")

# --- recorded-shape responses ----------------------------------------------------------------

CHAT_FULL = {
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


def _chunk(
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


CHAT_STREAM = [
    _chunk({"role": "assistant", "content": "Hello"}),
    _chunk({"content": " there"}),
    _chunk(
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
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.txt"}'}}]}),
    _chunk({}, finish="tool_calls"),
    _chunk(None, CHAT_FULL["usage"]),  # type: ignore[arg-type]
    "data: [DONE]\n\n",
]

RESP_FULL = {
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
RESP_STREAM = [
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
    ),  # type: ignore[index]
    sse(
        {"type": "response.completed", "sequence_number": 4, "response": RESP_FULL},
        "response.completed",
    ),
]

ANTHROPIC_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_read_input_tokens": 80,
    "cache_creation_input_tokens": 10,
}
ANTHROPIC_FULL = {
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
ANTHROPIC_STREAM = [
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

GEMINI_USAGE = {
    "promptTokenCount": 100,
    "candidatesTokenCount": 5,
    "cachedContentTokenCount": 64,
    "totalTokenCount": 105,
}
GEMINI_FULL = {
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


def _gem_chunk(
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


GEMINI_STREAM = [
    _gem_chunk([{"text": "Hello"}]),
    _gem_chunk([{"text": " there"}]),
    _gem_chunk(
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


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


async def _run(model: Any, request: Request = REQUEST) -> tuple[list[Any], ModelDone]:
    try:
        events = [event async for event in model.stream(request)]
    finally:
        await model.aclose()
    assert isinstance(events[-1], ModelDone)
    assert sum(isinstance(e, ModelDone) for e in events) == 1
    return events, events[-1]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_streamed_and_complete_agree(vendor: str, server: LocalServer) -> None:
    v = VENDORS[vendor]
    server.reply(Reply(body=v.full), Reply(sse=v.stream))
    complete_model = v.model(server, streaming=False)
    _, done_full = await _run(complete_model)
    events, done_stream = await _run(v.model(server))

    assert done_full.message == done_stream.message
    message = done_stream.message
    assert message.content == "Hello there"
    assert [(c.name, c.arguments, c.id) for c in message.tool_calls] == [
        ("read_file", {"path": "a.txt"}, "call_a")
    ]
    deltas = "".join(e.text for e in events if isinstance(e, ModelTextDelta))
    assert deltas == "Hello there"
    assert [e.call for e in events if isinstance(e, ModelToolCall)] == list(message.tool_calls)
    assert done_full.usage == done_stream.usage
    assert done_stream.usage.cached_input_tokens == v.cached
    assert done_stream.usage.output_tokens == 5
    if vendor == "anthropic":
        assert done_stream.usage.cache_write_tokens == 10
        assert done_stream.usage.input_tokens == 100

    # exactly what the SDK sent: the lowered body (plus the SDK's stream flags)
    sent_full, sent_stream = server.requests
    if vendor == "gemini":  # the SDK picks the API version segment itself
        assert sent_full.path.endswith(v.path.split("/models")[1])
        assert sent_stream.path.endswith(v.stream_path.split("/models")[1])
    else:
        assert sent_full.path == v.path and sent_stream.path == v.stream_path
    lowered = complete_model.lower(REQUEST)
    if vendor == "gemini":
        raw = sent_full.json
        assert raw["contents"] == [{"role": "user", "parts": [{"text": "Read a.txt"}]}]
        assert raw["systemInstruction"]["parts"] == [{"text": t} for _, t in SYSTEM]
        declared = raw["tools"][0]["functionDeclarations"][0]
        assert declared["name"] == "read_file"
        assert sent_full.headers["x-goog-api-key"] == "test-key"
    else:
        assert sent_full.json == lowered
        streamed = dict(sent_stream.json)
        assert streamed.pop("stream") is True
        streamed.pop("stream_options", None)
        assert streamed == lowered


async def test_reply_continues_the_conversation(server: LocalServer) -> None:
    """A parsed reply goes back into history and lowers again, paired with its result."""
    v = VENDORS["anthropic"]
    server.reply(Reply(sse=v.stream), Reply(sse=v.stream))
    model = v.model(server)
    _, done = await _run(model)
    follow = Request(
        SYSTEM,
        (*REQUEST.messages, done.message, ToolResultMessage("call_a", "read_file", "alpha")),
        TOOLS,
    )
    await _run(model, follow)
    sent = server.requests[-1].json
    assert sent["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "call_a",
        "name": "read_file",
        "input": {"path": "a.txt"},
    }
    assert sent["messages"][2]["content"][0]["tool_use_id"] == "call_a"


FAILURES = [
    (
        Reply(400, {"error": {"type": "invalid_request_error", "message": "bad"}}),
        ProviderError,
        400,
    ),
    (Reply(404, {"error": {"message": "no such model"}}), ProviderError, 404),
    (Reply(401, {"error": {"message": "invalid key"}}), CredentialsError, 401),
    (Reply(429, {"error": {"message": "slow down"}}), TransientProviderError, 429),
    (Reply(500, {"error": {"message": "boom"}}), TransientProviderError, 500),
    (Reply(503, {"error": {"message": "overloaded"}}), TransientProviderError, 503),
]


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize(("reply", "error", "status"), FAILURES)
async def test_http_failures_are_typed(
    vendor: str, reply: Reply, error: type[Exception], status: int, server: LocalServer
) -> None:
    server.reply(reply)
    with pytest.raises(error) as info:
        await _run(VENDORS[vendor].model(server, streaming=False))
    assert isinstance(info.value, ProviderError)
    assert info.value.status == status
    assert info.value.__cause__ is not None
    if error is ProviderError:
        assert not isinstance(info.value, TransientProviderError)


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_malformed_response(vendor: str, streaming: bool, server: LocalServer) -> None:
    if streaming:
        server.reply(Reply(sse=["data: {not json\n\n"]))
    else:
        server.reply(Reply(body=b"<html>not json</html>"))
    with pytest.raises(ProviderError) as info:
        await _run(VENDORS[vendor].model(server, streaming=streaming))
    assert not isinstance(info.value, TransientProviderError)


@pytest.mark.parametrize("vendor", VENDORS)
async def test_timeout_is_transient(vendor: str, server: LocalServer) -> None:
    server.reply(Reply(body=VENDORS[vendor].full, delay=1.5))
    with pytest.raises(TransientProviderError):
        await _run(VENDORS[vendor].model(server, streaming=False, timeout=0.3))


@pytest.mark.parametrize("vendor", ["openai-chat", "openai-responses", "anthropic", "gemini"])
async def test_missing_credentials(
    vendor: str, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    model = VENDORS[vendor].model(server)
    assert model.profile.wire_format  # building and inspecting needs no key
    with pytest.raises(CredentialsError, match="API key"):
        await _run(model)
    assert server.requests == []


async def test_compatible_server_needs_no_key(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    server.reply(Reply(body=CHAT_FULL))
    model = get_model(f"openai-compatible:{server.url}/v1#qwen3", streaming=False)
    assert model.base_url == f"{server.url}/v1" and model.model == "qwen3"
    await _run(model)
    assert server.requests[0].json["model"] == "qwen3"


async def test_invalid_history_is_never_sent(server: LocalServer) -> None:
    bad = Request(SYSTEM, (UserMessage("hi"), ToolResultMessage("ghost", "read_file", "x")))
    for v in VENDORS.values():
        with pytest.raises(RequestValidationError):
            await _run(v.model(server), bad)
    assert server.requests == []


@pytest.mark.parametrize(
    "spec", ["mistral:large", "openai", "openai:", "openai-compatible:http://x/v1", "gpt-4.1"]
)
def test_unknown_model_strings(spec: str) -> None:
    with pytest.raises(UnknownModelError):
        get_model(spec)


def test_profiles_follow_the_model() -> None:
    assert get_model("anthropic:claude-opus-4-8").profile.system_placement == "after_user"
    assert get_model("anthropic:claude-sonnet-5").profile.system_placement == "none"
    assert get_model("anthropic:claude-sonnet-5-5").profile.native_tool_changes
    assert get_model("gemini:gemini-2.5-pro").profile.system_placement == "none"
    assert get_model("openai:gpt-4.1").profile.wire_format == "openai-responses"
    assert get_model("openai-chat:gpt-4.1").profile.system_role == "developer"
