"""What the rest of the package relies on from providers: the error fields, one failure policy,
stop reasons, capabilities on the profile, the tokenizer table, readiness without a network
call, and which key goes to which server."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from provider_fakes import LocalServer, Reply
from vendor_replies import CHAT_FULL, KEYS, run

import agentsession as ags
from agentsession.errors import (
    CredentialsError,
    ProviderError,
    TransientProviderError,
    UsageError,
)
from agentsession.providers import (
    OPENAI_ENCODINGS,
    ModelDone,
    ModelProfile,
    Preparable,
    ScriptedModel,
    complete,
    get_model,
    profile_for,
    provider_failure,
)
from agentsession.request import AssistantMessage, Request, ToolCall, UserMessage

REQUEST = Request((), (UserMessage("hi"),))


# --- ProviderError -------------------------------------------------------------------------------


def _date(delta: timedelta) -> str:
    return format_datetime(datetime.now(UTC) + delta, usegmt=True)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "0"}, 0.0),
        ({"RETRY-AFTER": " 2.5 "}, 2.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": _date(timedelta(hours=-1))}, 0.0),
        ({}, None),
    ],
)
def test_retry_after_is_read_from_the_headers(
    headers: dict[str, str], expected: float | None
) -> None:
    error = ProviderError("x", status=429, headers=headers)
    assert error.retry_after == expected


def test_retry_after_as_http_date_counts_from_now() -> None:
    error = TransientProviderError("x", headers={"Retry-After": _date(timedelta(minutes=5))})
    assert error.retry_after is not None and 240 < error.retry_after <= 300


def test_provider_error_keeps_status_body_and_headers() -> None:
    body = {"error": {"message": "nope"}}
    error = ProviderError("x", status=400, body=body, headers={"X-Request-Id": "r1"})
    assert (error.status, error.body, dict(error.headers)) == (400, body, {"x-request-id": "r1"})
    bare = ProviderError("x")
    assert (bare.status, bare.body, dict(bare.headers), bare.retry_after) == (None, None, {}, None)
    assert issubclass(ags.ContextOverflowError, ProviderError)
    assert not issubclass(ags.ContextOverflowError, TransientProviderError)


# --- one failure policy -------------------------------------------------------------------------


def test_provider_failure_keeps_package_errors_and_wraps_the_rest() -> None:
    ours = UsageError("misuse")
    assert provider_failure(ours, "m") is ours
    original = ConnectionResetError("the socket closed")
    wrapped = provider_failure(original, "openai:gpt-4.1")
    assert type(wrapped) is ProviderError
    assert "openai:gpt-4.1" in str(wrapped) and "ConnectionResetError" in str(wrapped)
    assert wrapped.__cause__ is original


async def test_complete_applies_the_policy() -> None:
    ours = TransientProviderError("busy", status=503)
    with pytest.raises(TransientProviderError) as kept:
        await complete(ScriptedModel([ours]), REQUEST)
    assert kept.value is ours
    with pytest.raises(ProviderError, match="summariser: KeyError") as wrapped:
        await complete(ScriptedModel([KeyError("x")], name="summariser"), REQUEST)
    assert isinstance(wrapped.value.__cause__, KeyError)
    assert not isinstance(wrapped.value, TransientProviderError)
    done = await complete(ScriptedModel(["fine"]), REQUEST)
    assert (done.message.content, done.stop_reason) == ("fine", "end_turn")


# --- stop reasons and capabilities --------------------------------------------------------------


async def test_scripted_model_reports_stop_reasons() -> None:
    call = ToolCall("read_file", {"path": "a"})
    model = ScriptedModel(["text", [call]])
    first = await complete(model, REQUEST)
    second = await complete(model, REQUEST)
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "tool_calls")


async def test_a_scripted_reply_can_hold_text_and_tool_calls(tmp_path: Path) -> None:
    said = AssistantMessage("Let me look.", (ToolCall("peek", {"x": 1}),))

    @ags.tool
    def peek(x: int) -> str:
        """Look."""
        return f"saw {x}"

    model = ScriptedModel([said, "done"])
    runtime = ags.Runtime(store=ags.SQLiteStore(tmp_path / "s.db"), model=model, tools=[peek])
    async with runtime:
        session = await runtime.create_session()
        kinds: list[str] = []
        async for event in session.stream("go"):
            kinds.append(event.kind)
        assert kinds.index("text_delta") < kinds.index("tool_call_started")
        first = session.messages[1]
        assert isinstance(first, AssistantMessage)
        assert first.content == "Let me look." and [c.name for c in first.tool_calls] == ["peek"]
        assert first.tool_calls[0].id  # an id is made for a call scripted without one
        assert session.messages[-1] == AssistantMessage("done", provider="scripted")
    with pytest.raises(ags.UsageError, match="an AssistantMessage"):
        await complete(ScriptedModel([["not a call"]]), REQUEST)  # type: ignore[list-item]


def test_a_done_with_tool_calls_never_claims_a_plain_end() -> None:
    calls = (ToolCall("read_file", {}, id="c1"),)
    assert ModelDone(AssistantMessage(tool_calls=calls)).stop_reason == "tool_calls"
    cut = ModelDone(AssistantMessage(tool_calls=calls), stop_reason="max_tokens")
    assert cut.stop_reason == "max_tokens"
    assert ModelDone(AssistantMessage("hi")).stop_reason == "end_turn"


def test_profiles_have_neutral_capabilities() -> None:
    neutral = ModelProfile()
    assert (neutral.provider, neutral.reports_usage, neutral.writes_titles) == ("", True, True)
    assert neutral.tokenizer is None
    fake = ScriptedModel().profile
    assert not fake.reports_usage and not fake.writes_titles
    given = ModelProfile(provider="anthropic")
    assert ScriptedModel(profile=given).profile is given  # an explicit profile is used as given
    for spec in ("openai:gpt-4.1", "anthropic:claude-opus-4-8", "gemini:gemini-2.5-pro"):
        profile = get_model(spec).profile
        assert profile.reports_usage and profile.writes_titles


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4.1", "o200k_base"),
        ("gpt-4.1-mini", "o200k_base"),
        ("gpt-4o-2024-08-06", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4.5-preview", "o200k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-oss-120b", "o200k_base"),
        ("o1-preview", "o200k_base"),
        ("o3", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("GPT-4o", "o200k_base"),
        ("o10", None),
        ("gpt-40", None),
        ("davinci-002", None),
    ],
)
def test_openai_models_name_their_tokenizer(model: str, encoding: str | None) -> None:
    assert profile_for("openai", model).tokenizer == encoding
    assert profile_for("openai", model, wire_format="openai-chat").tokenizer == encoding


def test_only_openai_models_have_a_known_tokenizer() -> None:
    assert {encoding for _, encoding in OPENAI_ENCODINGS} == {"o200k_base", "cl100k_base"}
    assert profile_for("anthropic", "claude-opus-4-8").tokenizer is None
    assert profile_for("gemini", "gemini-2.5-pro").tokenizer is None
    # a local server may serve anything under any name: no exact tokenizer is claimed
    assert profile_for("openai-compatible", "gpt-oss-20b").tokenizer is None


# --- readiness and credentials ------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec", ["openai:gpt-4.1", "anthropic:claude-opus-4-8", "gemini:gemini-2.5-pro"]
)
def test_readiness_is_checked_without_the_network(
    spec: str, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    model = get_model(spec, base_url=server.url)
    assert isinstance(model, Preparable)
    with pytest.raises(CredentialsError, match="API key"):
        model.ensure_ready()
    get_model(spec, base_url=server.url, api_key="k").ensure_ready()
    sdk = {"openai": "openai", "anthropic": "anthropic", "gemini": "google.genai"}[
        spec.split(":")[0]
    ]
    monkeypatch.setitem(sys.modules, sdk, None)  # the SDK is not importable
    with pytest.raises(UsageError, match="not installed"):
        get_model(spec, api_key="k").ensure_ready()
    assert server.requests == []


async def test_openai_key_never_goes_to_a_compatible_server_unnamed(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-openai")
    monkeypatch.setenv("LOCAL_LLM_KEY", "local-secret")
    server.reply(*(Reply(body=CHAT_FULL) for _ in range(4)))
    url = f"openai-compatible:{server.url}/v1#qwen3"
    await run(get_model(url, streaming=False))
    await run(get_model(url, streaming=False, api_key_env="LOCAL_LLM_KEY"))
    await run(get_model(url, streaming=False, api_key="explicit"))
    await run(get_model(url, streaming=False, api_key_env="OPENAI_API_KEY"))  # named: allowed
    sent = [r.headers["authorization"] for r in server.requests]
    assert sent[:3] == ["Bearer no-key", "Bearer local-secret", "Bearer explicit"]
    assert sent[3] == "Bearer sk-secret-openai"
    assert not any("sk-secret-openai" in r.raw.decode() for r in server.requests)
    monkeypatch.delenv("LOCAL_LLM_KEY")
    with pytest.raises(CredentialsError, match="LOCAL_LLM_KEY"):
        get_model(url, api_key_env="LOCAL_LLM_KEY").ensure_ready()


async def test_openai_chat_with_a_base_url_still_uses_the_openai_key(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    server.reply(Reply(body=CHAT_FULL))
    await run(get_model("openai-chat:gpt-4.1", base_url=server.url, streaming=False))
    assert server.requests[0].headers["authorization"] == "Bearer sk-openai"
