"""Real SDK clients against a loopback server that misbehaves on purpose.

A broken reply is never a finished one: a 200 that is not a stream, a stream without its finish
reason or terminator, a stream cut mid-way (transient) all raise; a reply cut by the output
limit is a ``ModelDone`` whose ``stop_reason`` says so. Rate limits carry ``Retry-After``; a
"context too long" body, from a vendor or a local server, is a ``ContextOverflowError``.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from provider_fakes import LocalServer, Reply, sse
from vendor_replies import (
    ANTHROPIC_FULL,
    ANTHROPIC_STREAM,
    CHAT_FULL,
    GEMINI_FULL,
    KEYS,
    REQUEST,
    RESP_FULL,
    VENDORS,
    chat_chunk,
    gem_chunk,
    run,
)

from agentsession.errors import (
    ContextOverflowError,
    CredentialsError,
    ProviderError,
    TransientProviderError,
)
from agentsession.providers import ModelDone, ModelTextDelta, ModelToolCall

MAIN = ["openai-chat", "openai-responses", "anthropic", "gemini"]


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


def _no_terminator(vendor: str) -> list[str]:
    """The vendor's whole stream minus the events that prove it finished."""
    match vendor:
        case "openai-chat" | "openai-compatible":
            return [
                chat_chunk({"role": "assistant", "content": "Hello"}),
                chat_chunk({"content": " the"}),
            ]  # no finish_reason, no [DONE]
        case "openai-responses":
            return VENDORS[vendor].stream[:-1]  # no response.completed
        case "anthropic":
            return ANTHROPIC_STREAM[:-2]  # no message_delta, no message_stop
        case _:
            return [gem_chunk([{"text": "Hello"}]), gem_chunk([{"text": " the"}])]


@pytest.mark.parametrize("vendor", [*MAIN, "openai-compatible"])
async def test_a_complete_reply_where_a_stream_was_asked_is_refused(
    vendor: str, server: LocalServer
) -> None:
    server.reply(Reply(body=VENDORS[vendor].full))
    with pytest.raises(ProviderError, match="asked for a stream") as info:
        await run(VENDORS[vendor].model(server))
    assert not isinstance(info.value, TransientProviderError)


@pytest.mark.parametrize("vendor", [*MAIN, "openai-compatible"])
async def test_a_stream_without_its_end_is_refused(vendor: str, server: LocalServer) -> None:
    server.reply(Reply(sse=_no_terminator(vendor)))
    model = VENDORS[vendor].model(server)
    events: list[Any] = []
    with pytest.raises(ProviderError, match="incomplete") as info:
        async for event in model.stream(REQUEST):
            events.append(event)
    await model.aclose()
    assert not isinstance(info.value, TransientProviderError)
    assert not any(isinstance(e, ModelDone) for e in events)


@pytest.mark.parametrize("vendor", [*MAIN, "openai-compatible"])
async def test_a_stream_cut_mid_way_is_transient(vendor: str, server: LocalServer) -> None:
    server.reply(Reply(sse=VENDORS[vendor].stream[:3], cut=True))
    model = VENDORS[vendor].model(server)
    events: list[Any] = []
    with pytest.raises(TransientProviderError) as info:
        async for event in model.stream(REQUEST):
            events.append(event)
    await model.aclose()
    assert info.value.__cause__ is not None
    assert not any(isinstance(e, ModelDone) for e in events)


def _chat_stream(finish: str, *, content: str = "Hello", calls: bool = False) -> list[str]:
    chunks = [chat_chunk({"role": "assistant", "content": content})]
    if calls:
        call = {"index": 0, "type": "function", "function": {"name": "read_file", "arguments": ""}}
        chunks.append(chat_chunk({"tool_calls": [{**call, "id": "call_1"}]}))
    chunks += [chat_chunk({}, finish=finish), "data: [DONE]\n\n"]
    return chunks


@pytest.mark.parametrize(
    ("finish", "calls", "expected"),
    [
        ("stop", False, "end_turn"),
        ("length", False, "max_tokens"),
        ("content_filter", False, "content_filter"),
        ("tool_calls", True, "tool_calls"),
        ("stop", True, "tool_calls"),  # some servers say "stop" for a tool-call turn
        ("eos", False, "other"),
    ],
)
@pytest.mark.parametrize("streaming", [True, False])
async def test_chat_finish_reasons_become_stop_reasons(
    finish: str, calls: bool, expected: str, streaming: bool, server: LocalServer
) -> None:
    if streaming:
        server.reply(Reply(sse=_chat_stream(finish, calls=calls)))
    else:
        full = copy.deepcopy(CHAT_FULL)
        full["choices"][0]["finish_reason"] = finish
        full["choices"][0]["message"]["content"] = "Hello"
        if not calls:
            del full["choices"][0]["message"]["tool_calls"]
        server.reply(Reply(body=full))
    _, done = await run(VENDORS["openai-chat"].model(server, streaming=streaming))
    assert done.stop_reason == expected
    assert done.message.content == "Hello"  # cut text stays visible, marked by its reason
    assert len(done.message.tool_calls) == (1 if calls else 0)


def _cut_by_limit(vendor: str) -> Reply:
    """A complete reply of ``vendor`` that ended at the output limit."""
    match vendor:
        case "openai-responses":
            body = {
                **RESP_FULL,
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
            }
        case "anthropic":
            body = {**ANTHROPIC_FULL, "stop_reason": "max_tokens"}
            body["content"] = body["content"][:1]
        case _:
            body = copy.deepcopy(GEMINI_FULL)
            body["candidates"][0]["finishReason"] = "MAX_TOKENS"
    return Reply(body=body)


@pytest.mark.parametrize("vendor", ["openai-responses", "anthropic", "gemini"])
async def test_output_limit_is_visible_as_max_tokens(vendor: str, server: LocalServer) -> None:
    server.reply(_cut_by_limit(vendor))
    _, done = await run(VENDORS[vendor].model(server, streaming=False))
    assert done.stop_reason == "max_tokens"
    assert done.message.content == "Hello there"


async def test_responses_stream_ending_incomplete_reports_the_limit(server: LocalServer) -> None:
    stream = VENDORS["openai-responses"].stream[:-1]
    incomplete = {
        **RESP_FULL,
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
    }
    event = {"type": "response.incomplete", "sequence_number": 4, "response": incomplete}
    server.reply(Reply(sse=[*stream, sse(event, "response.incomplete")]))
    events, done = await run(VENDORS["openai-responses"].model(server))
    assert done.stop_reason == "max_tokens"
    assert "".join(e.text for e in events if isinstance(e, ModelTextDelta)) == "Hello there"


async def test_filters_and_refusals_are_named(server: LocalServer) -> None:
    gemini = copy.deepcopy(GEMINI_FULL)
    gemini["candidates"][0]["finishReason"] = "SAFETY"
    refusal = {**ANTHROPIC_FULL, "stop_reason": "refusal", "content": []}
    server.reply(Reply(body=gemini), Reply(body=refusal))
    _, filtered = await run(VENDORS["gemini"].model(server, streaming=False))
    _, refused = await run(VENDORS["anthropic"].model(server, streaming=False))
    assert (filtered.stop_reason, refused.stop_reason) == ("content_filter", "refusal")


def _without_call_id(vendor: str) -> dict[str, Any]:
    match vendor:
        case "openai-chat":
            body = copy.deepcopy(CHAT_FULL)
            del body["choices"][0]["message"]["tool_calls"][0]["id"]
        case "openai-responses":
            body = copy.deepcopy(RESP_FULL)
            body["output"][1]["call_id"] = ""
        case _:
            body = copy.deepcopy(ANTHROPIC_FULL)
            body["content"][1]["id"] = ""
    return body


@pytest.mark.parametrize("vendor", ["openai-chat", "openai-responses", "anthropic"])
async def test_a_tool_call_without_id_gets_one(vendor: str, server: LocalServer) -> None:
    server.reply(Reply(body=_without_call_id(vendor)), Reply(body=_without_call_id(vendor)))
    model = VENDORS[vendor].model(server, streaming=False)
    events, first = await run(model)
    _, second = await run(model)
    (call,) = first.message.tool_calls
    assert call.id and call.name == "read_file" and call.arguments == {"path": "a.txt"}
    assert [e.call for e in events if isinstance(e, ModelToolCall)] == [call]
    assert second.message.tool_calls[0].id != call.id


async def test_a_streamed_chat_tool_call_without_id_gets_one(server: LocalServer) -> None:
    piece = {"index": 0, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    chunks = [chat_chunk({"tool_calls": [piece]}), chat_chunk({}, finish="tool_calls")]
    server.reply(Reply(sse=[*chunks, "data: [DONE]\n\n"]))
    events, done = await run(VENDORS["openai-chat"].model(server))
    (call,) = done.message.tool_calls
    assert call.id.startswith("call_") and len(call.id) > len("call_")
    assert [e.call for e in events if isinstance(e, ModelToolCall)] == [call]


@pytest.mark.parametrize("streaming", [True, False])
async def test_a_server_repeating_call_1_does_not_break_the_client(
    streaming: bool, server: LocalServer
) -> None:
    """Some local servers number calls per response; the client keeps the ids as sent (making
    them unique across the history is the session's job) and never fails on them."""
    full = copy.deepcopy(CHAT_FULL)
    full["choices"][0]["message"]["tool_calls"][0]["id"] = "call_1"
    reply = Reply(sse=_chat_stream("tool_calls", calls=True)) if streaming else Reply(body=full)
    server.reply(reply, copy.deepcopy(reply))
    model = VENDORS["openai-compatible"].model(server, streaming=streaming)
    dones = [(await run(model))[1] for _ in range(2)]
    assert [d.message.tool_calls[0].id for d in dones] == ["call_1", "call_1"]
    assert all(d.stop_reason == "tool_calls" for d in dones)


def _http_date(delta: timedelta) -> str:
    return format_datetime(datetime.now(UTC) + delta, usegmt=True)


@pytest.mark.parametrize("vendor", MAIN)
@pytest.mark.parametrize("streaming", [True, False])
async def test_rate_limit_carries_retry_after(
    vendor: str, streaming: bool, server: LocalServer
) -> None:
    body = {"error": {"message": "slow down", "type": "rate_limit_error"}}
    server.reply(
        Reply(429, body, headers={"Retry-After": "7"}),
        Reply(429, body, headers={"Retry-After": _http_date(timedelta(seconds=120))}),
    )
    model = VENDORS[vendor].model(server, streaming=streaming)
    with pytest.raises(TransientProviderError) as seconds:
        await run(model)
    with pytest.raises(TransientProviderError) as date:
        await run(model)
    assert seconds.value.status == 429 and seconds.value.retry_after == 7.0
    assert seconds.value.headers["retry-after"] == "7"
    assert seconds.value.body is not None
    assert date.value.retry_after is not None and 60 < date.value.retry_after <= 120


@pytest.mark.parametrize("streaming", [True, False])
@pytest.mark.parametrize(
    ("status", "error"),
    [(401, CredentialsError), (403, CredentialsError), (500, TransientProviderError)],
)
async def test_chat_status_failures_while_streaming_or_not(
    streaming: bool, status: int, error: type[Exception], server: LocalServer
) -> None:
    server.reply(Reply(status, {"error": {"message": "no"}}))
    with pytest.raises(error) as info:
        await run(VENDORS["openai-chat"].model(server, streaming=streaming))
    assert isinstance(info.value, ProviderError) and info.value.status == status


OVERFLOWS = [
    (
        "openai-chat",
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, your"
                " messages resulted in 130000 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    (
        "openai-responses",
        {
            "error": {
                "message": "Your input exceeds the context window of this model.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        },
    ),
    (
        "anthropic",
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 210000 tokens > 200000 maximum",
            },
        },
    ),
    (
        "gemini",
        {
            "error": {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of"
                " tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        },
    ),
    (  # llama.cpp server
        "openai-compatible",
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 5000,
                "n_ctx": 4096,
            }
        },
    ),
    (  # vLLM
        "openai-compatible",
        {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you"
            " requested 5000 tokens (4000 in the messages, 1000 in the completion).",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
]


@pytest.mark.parametrize(("vendor", "body"), OVERFLOWS)
async def test_context_overflow_is_typed(
    vendor: str, body: dict[str, Any], server: LocalServer
) -> None:
    server.reply(Reply(400, body))
    with pytest.raises(ContextOverflowError) as info:
        await run(VENDORS[vendor].model(server, streaming=False))
    assert info.value.status == 400 and info.value.body
    assert not isinstance(info.value, TransientProviderError)


async def test_an_error_inside_a_stream_is_classified(server: LocalServer) -> None:
    overflow = {"error": {"message": "too long", "code": "context_length_exceeded"}}
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.reply(
        Reply(sse=[chat_chunk({"content": "Hel"}), sse(overflow)]),
        Reply(sse=[*ANTHROPIC_STREAM[:3], sse(overloaded, "error")]),
    )
    with pytest.raises(ContextOverflowError):
        await run(VENDORS["openai-chat"].model(server))
    with pytest.raises(TransientProviderError, match="Overloaded"):
        await run(VENDORS["anthropic"].model(server))


async def test_a_failed_responses_stream_is_classified(server: LocalServer) -> None:
    stream = VENDORS["openai-responses"].stream[:-1]
    failed = {
        **RESP_FULL,
        "status": "failed",
        "error": {"code": "server_error", "message": "The server had an error"},
    }
    event = {"type": "response.failed", "sequence_number": 4, "response": failed}
    error_event = {
        "type": "error",
        "sequence_number": 4,
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model.",
        "param": None,
    }
    server.reply(
        Reply(sse=[*stream, sse(event, "response.failed")]),
        Reply(sse=[*stream, sse(error_event, "error")]),
    )
    with pytest.raises(TransientProviderError, match="The server had an error"):
        await run(VENDORS["openai-responses"].model(server))
    with pytest.raises(ContextOverflowError):
        await run(VENDORS["openai-responses"].model(server))


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_one_table_translates_both_sdks_of_the_shared_shape(name: str) -> None:
    import importlib

    from agentsession.providers._errors import SHARED_SHAPE

    sdk = importlib.import_module(name)
    classes = [getattr(sdk, cls) for cls, _ in SHARED_SHAPE]
    assert all(isinstance(c, type) and issubclass(c, Exception) for c in classes)
    # Subclasses come before their bases, or a base would take their exceptions.
    for i, earlier in enumerate(classes):
        for later in classes[i + 1 :]:
            assert not issubclass(later, earlier), (later, earlier)
