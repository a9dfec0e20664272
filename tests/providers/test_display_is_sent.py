"""The request display is the body the SDK sent, cache fields included, on every wire format.

Sessions run through the real SDKs against a loopback server that records each HTTP body. The
body ``agentsession request ID --step N`` prints, the server's ``/request?step=N`` answers and
``session.preview_body()`` gave before the call are each compared with the recorded body, for
the default settings, a ``prompt_cache_key``, the one-hour lifetime and explicit breakpoints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from provider_fakes import LocalServer, Reply
from test_cut_tool_calls import text_reply
from tests.cli_inprocess import run_cli
from vendor_replies import KEYS

import agentsession as ags
from agentsession.inspection._report_data import report_data
from agentsession.server import create_app

# (format, variant) -> (model string, Config fields)
CASES: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("openai-chat", "default"): ("openai-compatible:", {}),
    ("openai-chat", "prompt_cache_key"): ("openai-chat:gpt-4.1", {}),
    ("openai-chat", "1h"): ("openai-chat:gpt-4.1", {"cache_ttl": "1h"}),
    ("openai-chat", "breakpoints"): ("openai-chat:gpt-5.6", {}),
    ("openai-responses", "default"): ("openai:gpt-4.1", {"provider_cache_diagnostics": False}),
    ("openai-responses", "prompt_cache_key"): ("openai:gpt-4.1", {}),
    ("openai-responses", "1h"): ("openai:gpt-4.1", {"cache_ttl": "1h"}),
    ("openai-responses", "breakpoints"): ("openai:gpt-5.6", {}),
    ("anthropic", "default"): ("anthropic:claude-opus-4-8", {}),
    ("anthropic", "prompt_cache_key"): ("anthropic:claude-opus-4-8", {"cache_ttl": "5m"}),
    ("anthropic", "1h"): ("anthropic:claude-opus-4-8", {"cache_ttl": "1h"}),
    ("anthropic", "breakpoints"): (
        "anthropic:claude-opus-4-8",
        {"provider_cache_diagnostics": False},
    ),
    ("gemini", "default"): ("gemini:gemini-2.5-pro", {}),
    ("gemini", "prompt_cache_key"): ("gemini:gemini-2.5-pro", {}),
    ("gemini", "1h"): ("gemini:gemini-2.5-pro", {"cache_ttl": "1h"}),
    ("gemini", "breakpoints"): ("gemini:gemini-2.5-pro", {"provider_cache_diagnostics": False}),
}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


def _model(spec: str, server: LocalServer) -> Any:
    if spec == "openai-compatible:":
        return ags.get_model(f"openai-compatible:{server.url}/v1#local-model")
    base = server.url + "/v1" if spec.startswith("openai") else server.url
    return ags.get_model(spec, base_url=base)


@pytest.mark.parametrize(("fmt", "variant"), sorted(CASES))
async def test_the_request_display_is_the_body_the_sdk_sent(
    fmt: str, variant: str, server: LocalServer, tmp_path: Path
) -> None:
    spec, config = CASES[(fmt, variant)]
    model = _model(spec, server)
    db = tmp_path / "s.db"
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=model,
        instructions="You are careful.",
        config=ags.Config(titles=False, retry_base_delay=0, **config),
    )
    try:
        session = await runtime.create_session()
        server.reply(Reply(sse=text_reply(fmt, "one")))
        await session.prompt("first")
        previewed = await session.preview_body("second")
        server.reply(Reply(sse=text_reply(fmt, "two")))
        await session.prompt("second")
    finally:
        await model.aclose()
        await runtime.close()
    sent = [captured.json for captured in server.requests]
    assert len(sent) == 2
    assert previewed == sent[1]
    if variant == "prompt_cache_key" and fmt.startswith("openai"):
        assert sent[1]["prompt_cache_key"].startswith("ags-")
    if variant == "1h" and fmt == "anthropic":
        assert '"ttl": "1h"' in json.dumps(sent[1])
    await _server_shows(spec, server, db, session.id, fmt, sent, config)
    env = {name: "test-key" for name in KEYS}
    for step, body in enumerate(sent, start=1):
        shown = run_cli(
            tmp_path, "--db", str(db), "--json", "request", session.id, "--step", str(step), env=env
        )
        assert shown.code == 0, shown.err
        assert json.loads(shown.out)["body"] == body, f"step {step}"


WIRE = {"anthropic": "anthropic-messages"}


async def _server_shows(
    spec: str,
    server: LocalServer,
    db: Path,
    session_id: str,
    fmt: str,
    sent: list[dict[str, Any]],
    config: dict[str, Any],
) -> None:
    """The server's ``/request?step=N`` in the model's format answers each body as sent."""
    model = _model(spec, server)
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=model,
        instructions="You are careful.",
        config=ags.Config(titles=False, **config),
    )
    app = create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            for step, body in enumerate(sent, start=1):
                params = {"step": str(step), "format": WIRE.get(fmt, fmt)}
                answer = await client.get(f"/sessions/{session_id}/request", params=params)
                assert answer.status_code == 200, answer.text
                assert answer.json()["request"] == body, f"server, step {step}"
    finally:
        await model.aclose()
        await runtime.close()


async def test_the_report_names_the_cache_fields_each_call_carried(
    server: LocalServer, tmp_path: Path
) -> None:
    model = _model("anthropic:claude-opus-4-8", server)
    runtime = ags.Runtime(
        store=ags.MemoryStore(),
        model=model,
        instructions="You are careful.",
        config=ags.Config(titles=False, cache_ttl="1h"),
    )
    try:
        session = await runtime.create_session()
        for text in ("one", "two"):
            server.reply(Reply(sse=text_reply("anthropic", text)))
            await session.prompt(text)
        data = report_data(await session.inspect())
    finally:
        await model.aclose()
        await runtime.close()
    first, second = (json.loads(data["strings"][row[17]]) for row in data["requests"])
    assert first["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert first["diagnostics"] == {"previous_message_id": None}
    assert second["diagnostics"] == {"previous_message_id": "msg_2"}


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic", "gemini"])
async def test_a_call_without_streaming_is_shown_without_streaming_flags(
    fmt: str, server: LocalServer, tmp_path: Path
) -> None:
    spec, _ = CASES[(fmt, "prompt_cache_key")]
    base = server.url + "/v1" if spec.startswith("openai") else server.url
    model = ags.get_model(spec, base_url=base, streaming=False)
    db = tmp_path / "s.db"
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=model,
        config=ags.Config(titles=False, provider_retries=0),
    )
    try:
        session = await runtime.create_session()
        previewed = await session.preview_body("first")
        server.reply(Reply(400, {"error": {"message": "refused", "type": "invalid"}}))
        with pytest.raises(ags.ProviderError):
            await session.prompt("first")  # the body was sent all the same
    finally:
        await model.aclose()
        await runtime.close()
    sent = server.requests[0].json
    assert previewed == sent and "stream" not in sent
