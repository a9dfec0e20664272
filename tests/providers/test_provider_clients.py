"""The official SDK clients against a loopback server: exact request bodies, streamed and complete
responses parsed back into the neutral form, and vendor failures mapped onto the error tree."""

from __future__ import annotations

import pytest
from provider_fakes import LocalServer, Reply
from vendor_replies import CHAT_FULL, KEYS, REQUEST, SYSTEM, TOOLS, VENDORS, run

from agentsession.errors import (
    CredentialsError,
    ProviderError,
    RequestValidationError,
    TransientProviderError,
    UnknownModelError,
)
from agentsession.providers import ModelTextDelta, ModelToolCall, get_model
from agentsession.request import Request, ToolResultMessage, UserMessage


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


@pytest.mark.parametrize("vendor", VENDORS)
async def test_streamed_and_complete_agree(vendor: str, server: LocalServer) -> None:
    v = VENDORS[vendor]
    server.reply(Reply(body=v.full), Reply(sse=v.stream))
    complete_model = v.model(server, streaming=False)
    _, done_full = await run(complete_model)
    events, done_stream = await run(v.model(server))

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
    assert done_full.stop_reason == done_stream.stop_reason == "tool_calls"
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
    _, done = await run(model)
    follow = Request(
        SYSTEM,
        (*REQUEST.messages, done.message, ToolResultMessage("call_a", "read_file", "alpha")),
        TOOLS,
    )
    await run(model, follow)
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
        await run(VENDORS[vendor].model(server, streaming=False))
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
        await run(VENDORS[vendor].model(server, streaming=streaming))
    assert not isinstance(info.value, TransientProviderError)


@pytest.mark.parametrize("vendor", VENDORS)
async def test_timeout_is_transient(vendor: str, server: LocalServer) -> None:
    server.reply(Reply(body=VENDORS[vendor].full, delay=1.5))
    with pytest.raises(TransientProviderError):
        await run(VENDORS[vendor].model(server, streaming=False, timeout=0.3))


@pytest.mark.parametrize("vendor", ["openai-chat", "openai-responses", "anthropic", "gemini"])
async def test_missing_credentials(
    vendor: str, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    model = VENDORS[vendor].model(server)
    assert model.profile.wire_format  # building and inspecting needs no key
    with pytest.raises(CredentialsError, match="API key"):
        await run(model)
    assert server.requests == []


async def test_compatible_server_needs_no_key(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    server.reply(Reply(body=CHAT_FULL))
    model = get_model(f"openai-compatible:{server.url}/v1#qwen3", streaming=False)
    assert model.base_url == f"{server.url}/v1" and model.model == "qwen3"
    await run(model)
    assert server.requests[0].json["model"] == "qwen3"


async def test_invalid_history_is_never_sent(server: LocalServer) -> None:
    bad = Request(SYSTEM, (UserMessage("hi"), ToolResultMessage("ghost", "read_file", "x")))
    for v in VENDORS.values():
        with pytest.raises(RequestValidationError):
            await run(v.model(server), bad)
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
