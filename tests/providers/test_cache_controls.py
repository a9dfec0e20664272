"""Provider cache controls: the new fields for the models that support them, none for others.

Every body is checked against the official SDK's own request types (a key the SDK does not
know fails), and a whole session over the real SDKs shows the key, the lifetime and the
diagnosis request travelling with each call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from provider_fakes import LocalServer, Reply

import agentsession as ags
from agentsession.ledger import GapCounts, Ledger
from agentsession.log import AssistantEntry, Dispatch, Record
from agentsession.providers import lower, profile_for
from agentsession.providers.cache_controls import (
    CacheControls,
    apply_cache_controls,
    cache_key_for,
)
from agentsession.providers.cache_policy import MIN_GAPS, choose_ttl, expected_cost
from agentsession.providers.profiles import default_profile
from agentsession.request import Request, ToolSpec, Usage, UserMessage

SYSTEM = (
    ("core.agent", "You are a careful coding agent."),
    ("core.date", "Today is 2026-01-01."),
    ("project.agents_md", "Use tabs."),
)
TOOLS = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}}),)
REQUEST = Request(SYSTEM, (UserMessage("Read a.txt"),), TOOLS)
CONTROLS = CacheControls(key=cache_key_for("s1"), ttl="1h", diagnose=True, compare_with="r0")
SdkTypes = Callable[[str, dict[str, Any]], None]


def controlled(provider: str, model: str, fmt: str) -> tuple[dict[str, Any], dict[str, Any]]:
    profile = profile_for(provider, model, wire_format=fmt)
    body = lower(REQUEST, fmt, profile=profile, model=model)
    return body, apply_cache_controls(body, fmt, profile, CONTROLS, REQUEST)


def breakpoints(value: Any) -> int:
    text = json.dumps(value)
    return text.count('"prompt_cache_breakpoint"')


def test_openai_responses_with_explicit_breakpoints(sdk_types: SdkTypes) -> None:
    plain, body = controlled("openai", "gpt-5.6-terra", "openai-responses")
    sdk_types("openai-responses", body)
    assert body["prompt_cache_key"] == CONTROLS.key
    assert body["prompt_cache_options"] == {"comparison_response_id": "r0"}
    assert "instructions" in plain and "instructions" not in body
    head = body["input"][0]
    assert head["role"] == "developer"
    assert [p["text"] for p in head["content"]] == [
        "You are a careful coding agent.",
        "\n\nToday is 2026-01-01.\n\nUse tabs.",
    ]
    assert "".join(p["text"] for p in head["content"]) == plain["instructions"]
    assert breakpoints(body) == 2
    assert body["input"][1:] == plain["input"]


def test_openai_chat_with_explicit_breakpoints(sdk_types: SdkTypes) -> None:
    plain, body = controlled("openai", "gpt-5.6-terra", "openai-chat")
    sdk_types("openai-chat", body)
    assert body["prompt_cache_key"] == CONTROLS.key
    assert "prompt_cache_options" not in body  # Chat Completions has no cache diagnosis
    parts = body["messages"][0]["content"]
    assert "".join(p["text"] for p in parts) == plain["messages"][0]["content"]
    assert breakpoints(body) == 2
    assert body["messages"][1:] == plain["messages"][1:]


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses"])
def test_older_openai_models_get_the_key_only(fmt: str, sdk_types: SdkTypes) -> None:
    plain, body = controlled("openai", "gpt-4.1", fmt)
    sdk_types(fmt, body)
    assert body == {**plain, "prompt_cache_key": CONTROLS.key}


def test_anthropic_gets_a_stable_breakpoint_ttl_and_diagnostics(sdk_types: SdkTypes) -> None:
    plain, body = controlled("anthropic", "claude-opus-4-8", "anthropic-messages")
    sdk_types("anthropic-messages", body)
    assert body["diagnostics"] == {"previous_message_id": "r0"}
    marked = [b for b in body["system"] if "cache_control" in b]
    assert [b["text"] for b in marked] == ["You are a careful coding agent.", "Use tabs."]
    controls = json.dumps(body).count('"cache_control"')
    assert controls == json.dumps(plain).count('"cache_control"') + 1 <= 4
    assert json.dumps(body).count('"ttl": "1h"') == controls


def test_anthropic_short_lifetime_is_left_implicit(sdk_types: SdkTypes) -> None:
    profile = profile_for("anthropic", "claude-opus-4-8")
    body = lower(REQUEST, "anthropic-messages", profile=profile, model="claude-opus-4-8")
    short = CacheControls(key="k", ttl="5m", diagnose=True, compare_with=None)
    out = apply_cache_controls(body, "anthropic-messages", profile, short, REQUEST)
    sdk_types("anthropic-messages", out)
    assert '"ttl"' not in json.dumps(out)
    assert out["diagnostics"] == {"previous_message_id": None}


@pytest.mark.parametrize(
    ("provider", "model", "fmt"),
    [
        ("openai-compatible", "qwen3", "openai-chat"),
        ("gemini", "gemini-2.5-pro", "gemini"),
    ],
)
def test_models_without_the_features_get_none_of_the_fields(
    provider: str, model: str, fmt: str, sdk_types: SdkTypes
) -> None:
    plain, body = controlled(provider, model, fmt)
    sdk_types(fmt, body)
    assert body == plain


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic-messages"])
def test_default_profiles_get_none_of_the_fields(fmt: str) -> None:
    profile = default_profile(fmt)
    body = lower(REQUEST, fmt, profile=profile)
    assert apply_cache_controls(body, fmt, profile, CONTROLS, REQUEST) == body


def test_diagnostics_can_be_turned_off() -> None:
    quiet = CacheControls(key="k", ttl="5m", diagnose=False, compare_with="r0")
    for provider, model, fmt in [
        ("anthropic", "claude-opus-4-8", "anthropic-messages"),
        ("openai", "gpt-5.6-terra", "openai-responses"),
    ]:
        profile = profile_for(provider, model, wire_format=fmt)
        body = lower(REQUEST, fmt, profile=profile, model=model)
        out = apply_cache_controls(body, fmt, profile, quiet, REQUEST)
        assert "diagnostics" not in out and "prompt_cache_options" not in out


def test_the_cache_key_reveals_nothing_but_identity() -> None:
    key = cache_key_for("session-abc")
    assert "session-abc" not in key and "abc" not in key
    assert key == cache_key_for("session-abc") != cache_key_for("session-abd")


def test_ttl_policy_prefers_the_long_lifetime_only_for_long_gaps() -> None:
    assert choose_ttl("auto", [20.0] * 10) == "5m"
    assert choose_ttl("auto", [1200.0] * 10) == "1h"
    assert choose_ttl("auto", [1200.0] * (MIN_GAPS - 1)) == "5m"  # too little measured
    assert choose_ttl("auto", [20.0] * 10 + [7200.0] * 10) == "5m"  # past an hour either way
    assert choose_ttl("5m", [1200.0] * 10) == "5m"
    assert choose_ttl("1h", []) == "1h"
    # the choice follows the cost model it states
    gaps = [30.0, 400.0, 900.0, 60.0]
    cheaper = "1h" if expected_cost("1h", gaps, 0.1) < expected_cost("5m", gaps, 0.1) else "5m"
    assert choose_ttl("auto", gaps, 0.1) == cheaper


def mean_cost(ttl: str, gaps: list[float], ratio: float) -> float:
    """The cost model spelled out gap by gap: read within the lifetime, else write it all."""
    write, life = {"5m": (1.25, 300.0), "1h": (2.0, 3600.0)}[ttl]
    costs = [0.1 + write * ratio if gap <= life else write * (1 + ratio) for gap in gaps]
    return sum(costs) / len(costs) if costs else 0.0


@given(
    st.lists(st.integers(0, 7200), max_size=40),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=20),
)
def test_the_ledger_keeps_the_policy_figures_as_requests_go(
    gaps: list[int], usages: list[tuple[int, int]]
) -> None:
    # The ledger counts each gap and response once, as it comes; the figures must be the ones
    # the whole history gives.
    ledger = Ledger()
    moment = datetime(2026, 1, 1)
    ledger.note(moment)
    for gap in gaps:
        moment += timedelta(seconds=gap)
        ledger.note(moment)
    assert ledger.gaps() == GapCounts.of([float(g) for g in gaps])
    assert ledger.last_noted() == moment
    for ttl in ("5m", "1h"):
        assert expected_cost(ttl, ledger.gaps(), 0.2) == pytest.approx(
            mean_cost(ttl, [float(g) for g in gaps], 0.2)
        )
    seq = 0
    for read, written in usages:
        ledger.take(Record(seq, Dispatch("m", 1, "d")))
        usage = Usage(
            input_tokens=read + written, cached_input_tokens=read, cache_write_tokens=written
        )
        ledger.take(Record(seq + 1, AssistantEntry("ok", usage=usage)))
        ledger.take(Record(seq + 2, AssistantEntry("a second answer is no new response")))
        seq += 3
    read = sum(r for r, _ in usages)
    written = sum(w for _, w in usages)
    assert ledger.write_ratio() == (written / read if read else 0.1)


def anthropic_reply(n: int, diagnostics: dict[str, Any] | None = None) -> Reply:
    body: dict[str, Any] = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [{"type": "text", "text": f"answer {n}"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_input_tokens": 100 * n,
            "cache_creation_input_tokens": 50,
            "cache_creation": {"ephemeral_5m_input_tokens": 20, "ephemeral_1h_input_tokens": 30},
        },
    }
    if diagnostics is not None:
        body["diagnostics"] = diagnostics
    return Reply(body=body)


async def test_a_session_sends_controls_and_keeps_the_diagnosis(
    server: LocalServer, tmp_path: Path
) -> None:
    moment = [datetime(2026, 1, 1, 9, 0).astimezone()]
    model = ags.get_model(
        "anthropic:claude-opus-4-8", base_url=server.url, api_key="test", streaming=False
    )
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        clock=lambda: moment[0],
        config=ags.Config(titles=False, environment=()),
    ) as runtime:
        session = await runtime.create_session()
        miss = {"cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 7}}
        turns = MIN_GAPS + 2
        server.reply(anthropic_reply(1), anthropic_reply(2, miss))
        server.reply(*(anthropic_reply(n) for n in range(3, turns + 1)))
        for n in range(1, turns + 1):
            await session.prompt(f"question {n}")
            moment[0] += timedelta(minutes=20)  # gaps past 5 minutes, within an hour
        bodies = [r.json for r in server.requests]
        assert [b["diagnostics"]["previous_message_id"] for b in bodies] == [
            None,
            *(f"msg_{n}" for n in range(1, turns)),
        ]
        ttls = ['"ttl": "1h"' in json.dumps(b) for b in bodies]
        # a request sent after MIN_GAPS measured gaps asks for the long lifetime
        assert ttls == [False] * MIN_GAPS + [True] * (turns - MIN_GAPS)
        entries = [r.entry for r in await session.log() if isinstance(r.entry, AssistantEntry)]
        assert [e.response_id for e in entries] == [f"msg_{n}" for n in range(1, turns + 1)]
        assert entries[1].provider_cache == "system_changed"
        assert entries[0].usage.cache_write_long_tokens == 30
        assert entries[0].usage.cache_write_tokens == 50


async def test_reopened_session_compares_with_the_stored_response(
    server: LocalServer, tmp_path: Path
) -> None:
    def runtime() -> ags.Runtime:
        model = ags.get_model(
            "anthropic:claude-opus-4-8", base_url=server.url, api_key="test", streaming=False
        )
        return ags.Runtime(
            store=ags.SQLiteStore(tmp_path / "s.db"),
            model=model,
            project_dir=tmp_path,
            config=ags.Config(titles=False),
        )

    server.reply(anthropic_reply(1), anthropic_reply(2))
    async with runtime() as first:
        session = await first.create_session()
        await session.prompt("one")
    async with runtime() as second:
        again = await second.open_session(session.id)
        await again.prompt("two")
    assert server.requests[1].json["diagnostics"] == {"previous_message_id": "msg_1"}


async def test_openai_session_key_is_stable_per_session(
    server: LocalServer, tmp_path: Path
) -> None:
    reply = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }
    model = ags.get_model(
        "openai-chat:gpt-4.1", base_url=server.url, api_key="test", streaming=False
    )
    async with ags.Runtime(
        store=ags.MemoryStore(), model=model, project_dir=tmp_path, config=ags.Config(titles=False)
    ) as runtime:
        one, two = await runtime.create_session(), await runtime.create_session()
        server.reply(*(Reply(body=reply) for _ in range(3)))
        await one.prompt("a")
        await one.prompt("b")
        await two.prompt("c")
    keys = [r.json["prompt_cache_key"] for r in server.requests]
    assert keys[0] == keys[1] == cache_key_for(one.id) != keys[2] == cache_key_for(two.id)
    assert all(one.id not in k for k in keys)


SNAPSHOTS = Path(__file__).parent / "snapshots"
SNAPSHOT_CASES = [
    ("openai", "gpt-5.6-terra", "openai-chat"),
    ("openai", "gpt-5.6-terra", "openai-responses"),
    ("openai", "gpt-4.1", "openai-chat"),
    ("openai", "gpt-4.1", "openai-responses"),
    ("anthropic", "claude-opus-4-8", "anthropic-messages"),
    ("anthropic", "claude-sonnet-4-6", "anthropic-messages"),
    ("openai-compatible", "qwen3", "openai-chat"),
    ("gemini", "gemini-2.5-pro", "gemini"),
]


@pytest.mark.parametrize(("provider", "model", "fmt"), SNAPSHOT_CASES)
def test_cache_control_snapshots(provider: str, model: str, fmt: str, sdk_types: SdkTypes) -> None:
    """Each body with the controls, as a reviewed file (``UPDATE_SNAPSHOTS=1`` rewrites them)."""
    _, body = controlled(provider, model, fmt)
    sdk_types(fmt, body)
    path = SNAPSHOTS / f"cache_controls.{fmt}.{model}.json"
    text = json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing snapshot {path.name}; run with UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8"), f"cache controls changed: {path.name}"


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ("anthropic:claude-opus-4-8", "/v1/messages/count_tokens"),
        ("openai:gpt-5.6-terra", "/responses/input_tokens"),
    ],
)
async def test_the_provider_counts_a_request_where_it_can(
    server: LocalServer, spec: str, path: str
) -> None:
    model = ags.get_model(spec, base_url=server.url, api_key="test")
    answer = {"input_tokens": 4321, "object": "response.input_tokens"}
    server.reply(Reply(body=answer), Reply(status=500, body={"error": {"message": "down"}}))
    controls = CacheControls(key="k", diagnose=True, compare_with="r0")
    assert await model.count_input_tokens(REQUEST, controls) == 4321
    sent = server.requests[0]
    assert sent.path.endswith(path)
    # only what the counting endpoint takes: no output cap, cache key, diagnosis or storage
    assert not {"max_tokens", "prompt_cache_key", "diagnostics", "store"} & set(sent.json)
    assert "Read a.txt" in json.dumps(sent.json)
    with pytest.raises(ags.ProviderError):
        await model.count_input_tokens(REQUEST, controls)
    await model.aclose()


async def test_chat_completions_has_no_count(server: LocalServer) -> None:
    model = ags.get_model("openai-chat:gpt-5.6-terra", base_url=server.url, api_key="test")
    assert await model.count_input_tokens(REQUEST) is None
    assert server.requests == []


async def test_preview_cost_uses_the_providers_count_and_survives_its_failure(
    server: LocalServer, tmp_path: Path
) -> None:
    model = ags.get_model(
        "anthropic:claude-opus-4-8", base_url=server.url, api_key="test", streaming=False
    )
    async with ags.Runtime(
        store=ags.MemoryStore(), model=model, project_dir=tmp_path, config=ags.Config(titles=False)
    ) as runtime:
        session = await runtime.create_session()
        server.reply(anthropic_reply(1))
        await session.prompt("one")
        server.reply(Reply(body={"input_tokens": 500}))
        counted = await session.preview_cost("two")
        assert server.requests[-1].path.endswith("/count_tokens")
        assert (counted.cached_tokens, counted.uncached_tokens) == (160, 340)  # 10 + 100 + 50 sent
        assert counted.reason == ""
        price = ags.ModelPrice(input=5.0, cached_input=0.5, cache_write=6.25, output=25.0)
        assert counted.input_usd == pytest.approx((160 * 0.5 + 340 * price.write) / 1e6)
        server.reply(Reply(status=500, body={"error": {"message": "down"}}))
        local = await session.preview_cost("two")
        assert local.reason.startswith("counted locally: the provider's count failed")
        assert local.cached_tokens == 160 and local.uncached_tokens > 0
