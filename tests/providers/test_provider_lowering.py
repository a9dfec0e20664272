"""Snapshot tests of the lowered body per wire format, plus the SDK's own type check.

Regenerate after an intended change with ``UPDATE_SNAPSHOTS=1 pytest tests/providers``; the JSON
files under ``snapshots/`` make every change to what a model receives visible in review.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentsession.errors import RequestValidationError, UnknownFormatError
from agentsession.providers import (
    FORMATS,
    default_profile,
    lower,
    lower_traced,
    profile_for,
    validate,
)
from agentsession.providers.base import ModelProfile
from agentsession.request import (
    AssistantMessage,
    ImagePart,
    Message,
    Request,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"

SYSTEM = (("core.identity", "You are a careful agent."), ("core.date", "Today is 2026-01-01."))
TOOLS = (
    ToolSpec(
        "read_file",
        "Read a file.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec("pdf_extract", "Extract PDF text.", {"type": "object", "properties": {}}),
)
PNG = "iVBORw0KGgo="


def _calls() -> tuple[Message, ...]:
    return (
        UserMessage("Read a.txt and b.txt"),
        AssistantMessage(
            "Reading both.",
            tool_calls=(
                ToolCall("read_file", {"path": "a.txt"}, id="call_a"),
                ToolCall("read_file", {"path": "b.txt"}, id="call_b"),
            ),
        ),
        ToolResultMessage("call_a", "read_file", "alpha"),
        ToolResultMessage("call_b", "read_file", "beta"),
    )


SCENARIOS: dict[str, tuple[Message, ...]] = {
    "plain_chat": (
        UserMessage("Hello"),
        AssistantMessage("Hi! How can I help?"),
        UserMessage("Tell me a joke."),
    ),
    "parallel_tool_calls": _calls(),
    "tool_error": (
        UserMessage("Open missing.txt"),
        AssistantMessage(tool_calls=(ToolCall("read_file", {"path": "missing.txt"}, id="c1"),)),
        ToolResultMessage("c1", "read_file", "No such file: missing.txt", is_error=True),
    ),
    "image": (
        UserMessage((TextPart("What is in this picture?"), ImagePart("image/png", data=PNG))),
        AssistantMessage("A cat."),
        UserMessage((ImagePart("image/jpeg", url="https://example.com/dog.jpg"),)),
    ),
    "system_after_user_text": (
        UserMessage("Hello"),
        AssistantMessage("Hi."),
        UserMessage("What day is it?"),
        SystemMessage("Today is now 2026-01-02. Ignore </system-message> in text."),
    ),
    "system_after_tool_results": (
        *_calls(),
        SystemMessage("The permission preset is now read-only."),
    ),
    "system_at_end_after_assistant": (
        UserMessage("Hello"),
        AssistantMessage("Hi."),
        SystemMessage("AGENTS.md changed: use tabs."),
    ),
    "system_mid_history": (
        UserMessage("Hello"),
        SystemMessage("The date is 2026-01-02."),
        AssistantMessage("Hi."),
        UserMessage("Bye"),
    ),
    "system_before_new_user_input": (
        UserMessage("Hello"),
        SystemMessage("The date is 2026-01-02."),
        UserMessage("Are you there?"),
    ),
    "tool_changes": (
        UserMessage("Load the pdf skill"),
        AssistantMessage(tool_calls=(ToolCall("load_skill", {"name": "pdf"}, id="c1"),)),
        ToolResultMessage("c1", "load_skill", "contextChanged: pdf loaded"),
        SystemMessage("Skill pdf loaded: use pdf_extract.", tools_added=("pdf_extract",)),
        AssistantMessage("Loaded."),
        UserMessage("Unload it"),
        SystemMessage("Skill pdf unloaded.", tools_removed=("pdf_extract",)),
    ),
}

PROFILES: dict[str, dict[str, ModelProfile]] = {
    "openai-chat": {
        "native": default_profile("openai-chat"),
        "wrapped": replace(default_profile("openai-chat"), system_placement="none"),
    },
    "openai-responses": {
        "native": profile_for("openai", "gpt-4.1"),
        "wrapped": replace(profile_for("openai", "gpt-4.1"), system_placement="none"),
    },
    "anthropic-messages": {
        "native": profile_for("anthropic", "claude-opus-4-8"),
        "wrapped": profile_for("anthropic", "claude-sonnet-4-5"),
    },
    "gemini": {"wrapped": profile_for("gemini", "gemini-2.5-pro")},
}

CASES = [
    (scenario, fmt, variant)
    for scenario in SCENARIOS
    for fmt in FORMATS
    for variant in PROFILES[fmt]
]


def _request(scenario: str) -> Request:
    messages = SCENARIOS[scenario]
    sources = tuple((i,) for i in range(len(messages)))
    return Request(system=SYSTEM, messages=messages, tools=TOOLS, sources=sources)


def _compare(name: str, body: dict[str, Any]) -> None:
    path = SNAPSHOTS / f"{name}.json"
    text = json.dumps(body, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"missing snapshot {path.name}; run with UPDATE_SNAPSHOTS=1")
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert text == path.read_text(encoding="utf-8"), f"lowering changed: {path.name}"


@pytest.mark.parametrize(("scenario", "fmt", "variant"), CASES)
def test_snapshot(scenario: str, fmt: str, variant: str, sdk_types: Any) -> None:
    request = _request(scenario)
    body = lower(request, fmt, profile=PROFILES[fmt][variant], model="test-model")
    _compare(f"{scenario}.{fmt}.{variant}", body)
    sdk_types(fmt, body)
    # the inspection mapping never reaches the wire, and lowering is pure
    assert body == lower(
        replace(request, sources=()), fmt, profile=PROFILES[fmt][variant], model="test-model"
    )
    assert "sources" not in json.dumps(body)


def test_native_anthropic_system_placement() -> None:
    profile = PROFILES["anthropic-messages"]["native"]
    body = lower(_request("system_after_tool_results"), "anthropic-messages", profile=profile)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "system"]
    # before new user input the native role is not allowed: wrapped into that user turn instead
    body = lower(_request("system_before_new_user_input"), "anthropic-messages", profile=profile)
    assert [m["role"] for m in body["messages"]] == ["user"]
    texts = [b["text"] for b in body["messages"][0]["content"]]
    assert texts[1].startswith("<system-message>")


def test_wrapping_escapes_its_own_tags() -> None:
    body = lower(_request("system_after_user_text"), "gemini")
    text = body["contents"][-1]["parts"][-1]["text"]
    assert text.count("</system-message>") == 1
    assert "&lt;/system-message>" in text


def test_cache_markers_on_stable_content_only() -> None:
    body = lower(_request("parallel_tool_calls"), "anthropic-messages")
    assert "cache_control" in body["tools"][-1]
    assert "cache_control" in body["system"][-1]
    assert "cache_control" in body["messages"][-1]["content"][-1]
    marked = json.dumps(body).count("cache_control")
    assert marked == 3


def test_tool_changes_keep_tools_stable() -> None:
    profile = PROFILES["anthropic-messages"]["native"]
    before = Request(SYSTEM, SCENARIOS["tool_changes"][:3], TOOLS[:1])
    after = Request(SYSTEM, SCENARIOS["tool_changes"], TOOLS)
    b1 = lower(before, "anthropic-messages", profile=profile)
    b2 = lower(after, "anthropic-messages", profile=profile)
    assert b1["tools"] == b2["tools"]
    assert b2["betas"] == ["inline-tools-2026-09-15"]
    # a wrapped profile does not lower tool changes as blocks: the tools list differs instead
    wrapped = lower(after, "anthropic-messages", profile=PROFILES["anthropic-messages"]["wrapped"])
    assert "tool_addition" not in json.dumps(wrapped)
    assert [t["name"] for t in wrapped["tools"]] == ["read_file", "pdf_extract"]


def test_provider_data_only_for_same_format() -> None:
    raw = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Hi."},
    ]
    reply = AssistantMessage(
        "Hi.", provider="anthropic", provider_data={"anthropic-messages": {"content": raw}}
    )
    request = Request(SYSTEM, (UserMessage("Hello"), reply, UserMessage("Again")))
    assert lower(request, "anthropic-messages")["messages"][1]["content"] == raw
    for fmt in ("openai-chat", "openai-responses", "gemini"):
        assert "signature" not in json.dumps(lower(request, fmt))


def test_unknown_format() -> None:
    with pytest.raises(UnknownFormatError, match="known formats"):
        lower(_request("plain_chat"), "cohere")
    with pytest.raises(UnknownFormatError):
        validate({}, "cohere")


@pytest.mark.parametrize("fmt", FORMATS)
def test_orphaned_tool_result_is_reported(fmt: str) -> None:
    messages = (UserMessage("hi"), ToolResultMessage("ghost", "read_file", "x"))
    with pytest.raises(RequestValidationError) as info:
        lower(Request(SYSTEM, messages, TOOLS), fmt)
    assert info.value.position == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_missing_result_and_system_inside_result_group(fmt: str) -> None:
    calls = _calls()
    with pytest.raises(RequestValidationError, match="no result"):
        lower(Request(SYSTEM, calls[:3], TOOLS), fmt)
    broken = (*calls[:3], SystemMessage("x"), calls[3])
    with pytest.raises(RequestValidationError) as info:
        lower(Request(SYSTEM, broken, TOOLS), fmt)
    assert info.value.position == 3


def test_validators_catch_wire_breaches() -> None:
    with pytest.raises(RequestValidationError, match="directly follow a user turn"):
        validate({"messages": [{"role": "system", "content": "x"}]}, "anthropic-messages")
    body = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}]},
            {"role": "system", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": "b"}]},
        ]
    }
    with pytest.raises(RequestValidationError, match="followed by an assistant") as info:
        validate(body, "anthropic-messages")
    assert info.value.position == 1
    chat = {
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "tool", "tool_call_id": "x", "content": "r"},
        ]
    }
    with pytest.raises(RequestValidationError, match="answers no open"):
        validate(chat, "openai-chat")
    gem = {
        "contents": [
            {"role": "user", "parts": [{"text": "a"}]},
            {"role": "user", "parts": [{"text": "b"}]},
        ]
    }
    with pytest.raises(RequestValidationError, match="in a row"):
        validate(gem, "gemini")
    resp = {"input": [{"type": "function_call_output", "call_id": "x", "output": "r"}]}
    with pytest.raises(RequestValidationError, match="answers no open"):
        validate(resp, "openai-responses")


def test_images_refused_without_vision() -> None:
    blind = replace(default_profile("openai-chat"), supports_images=False)
    with pytest.raises(RequestValidationError, match="images"):
        lower(_request("image"), "openai-chat", profile=blind)
    with pytest.raises(RequestValidationError, match="cannot carry images"):
        result = ToolResultMessage("c1", "read_file", (ImagePart("image/png", data=PNG),))
        messages = (*SCENARIOS["tool_error"][:2], result)
        lower(Request(SYSTEM, messages, TOOLS), "openai-chat")


def test_strict_chat_templates_get_alternation() -> None:
    """A wrapping openai-chat profile joins user-side content into one user message; its
    validator refuses two user messages in a row, which a native profile allows."""
    strict = PROFILES["openai-chat"]["wrapped"]
    native = PROFILES["openai-chat"]["native"]
    two_users = {
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
        ]
    }
    validate(two_users, "openai-chat", native)
    with pytest.raises(RequestValidationError, match="two user messages in a row") as info:
        validate(two_users, "openai-chat", strict)
    assert info.value.position == 2

    image_then_wrapped = (
        UserMessage((TextPart("Look:"), ImagePart("image/png", data=PNG))),
        SystemMessage("The date is 2026-01-02."),
        UserMessage("And now?"),
    )
    body = lower(Request(SYSTEM, image_then_wrapped, TOOLS), "openai-chat", profile=strict)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Look:"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "text", "text": "<system-message>\nThe date is 2026-01-02.\n</system-message>"},
        {"type": "text", "text": "And now?"},
    ]
    traced = lower_traced(Request(SYSTEM, image_then_wrapped, TOOLS), "openai-chat", profile=strict)
    assert traced.origins == [-1, 0]
    native_body = lower(Request(SYSTEM, image_then_wrapped, TOOLS), "openai-chat", profile=native)
    assert [m["role"] for m in native_body["messages"]] == ["system", "user", "system", "user"]
