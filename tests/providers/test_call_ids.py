"""Tool-call ids follow each wire format's rules, whoever made them.

A history whose ids came from another provider (``functions.add:0`` from a Kimi-style server,
a 100-character gateway id) lowers for every format to ids that format accepts, the same bytes
every time, and ``lower()`` refuses a body whose ids break the rules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_fakes import LocalServer, Reply
from vendor_replies import KEYS, anthropic_text_stream, chat_chunk

import agentsession as ags
from agentsession.errors import RequestValidationError
from agentsession.providers import FORMATS, lower, validate
from agentsession.request import (
    AssistantMessage,
    Message,
    Request,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

# The rules as the vendors document them, written out here independently of the package.
RULES = {
    "openai-chat": re.compile(r"[\x21-\x7e]{1,40}"),
    "openai-responses": re.compile(r"[\x21-\x7e]{1,64}"),
    "anthropic-messages": re.compile(r"[A-Za-z0-9_-]{1,64}"),
    "gemini": re.compile(r"[A-Za-z0-9_-]{1,64}"),
}
TOOLS = (ToolSpec("add", "Add.", {"type": "object", "properties": {}}),)


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


def wire_ids(body: dict[str, Any], fmt: str) -> list[str]:
    """Every tool-call id in a lowered body, calls and results alike, in order."""
    found: list[str] = []
    match fmt:
        case "openai-chat":
            for m in body["messages"]:
                found += [c["id"] for c in m.get("tool_calls") or []]
                if m["role"] == "tool":
                    found.append(m["tool_call_id"])
        case "openai-responses":
            found = [i["call_id"] for i in body["input"] if "call_id" in i]
        case "anthropic-messages":
            for m in body["messages"]:
                for b in m["content"] if isinstance(m["content"], list) else []:
                    if b["type"] == "tool_use":
                        found.append(b["id"])
                    elif b["type"] == "tool_result":
                        found.append(b["tool_use_id"])
        case _:
            for c in body["contents"]:
                for p in c["parts"]:
                    for key in ("function_call", "function_response"):
                        if key in p:
                            found.append(p[key]["id"])
    return found


ids = st.one_of(
    st.sampled_from(["functions.add:0", "call_1", "toolu_01ABC", "x" * 100, "a b", "é:ü/≈"]),
    st.text(min_size=1, max_size=120),
)


@st.composite
def histories(draw: st.DrawFn) -> tuple[tuple[Message, ...], int]:
    """A valid history with arbitrary unique call ids; and where its last turn starts."""
    used = draw(st.lists(ids, min_size=1, max_size=8, unique=True))
    messages: list[Message] = []
    last_turn = 0
    while used:
        last_turn = len(messages)
        messages.append(UserMessage(draw(st.sampled_from(["add", "more", "again"]))))
        take = draw(st.integers(1, 3))
        batch, used = used[:take], used[take:]
        calls = tuple(ToolCall("add", {"n": i}, id=call_id) for i, call_id in enumerate(batch))
        messages.append(AssistantMessage("", tool_calls=calls))
        messages += [ToolResultMessage(c.id, "add", "ok") for c in calls]
        messages.append(AssistantMessage("done"))
    return tuple(messages), last_turn


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_any_history_lowers_to_legal_ids_byte_identically(
    history: tuple[tuple[Message, ...], int],
) -> None:
    messages, last_turn = history
    request = Request((("core.agent", "Be brief."),), messages, TOOLS)
    earlier = Request((("core.agent", "Be brief."),), messages[:last_turn], TOOLS)
    originals = [i for m in messages for i in _ids_of(m)]
    for fmt in FORMATS:
        body = lower(request, fmt)
        assert json.dumps(body) == json.dumps(lower(request, fmt))  # byte-identical twice
        found = wire_ids(body, fmt)
        assert len(found) == len(originals)
        for wire in found:
            assert RULES[fmt].fullmatch(wire), (fmt, wire)
        # each call keeps its own id: pairs stay pairs, two calls stay two
        assert len(set(found)) == len(set(originals))
        pairs = {(o, w) for o, w in zip(originals, found, strict=True)}
        assert len(pairs) == len(set(originals))
        if last_turn:  # the cache holds: an earlier request lowers its calls the same way
            before = wire_ids(lower(earlier, fmt), fmt)
            assert found[: len(before)] == before


def _ids_of(message: Message) -> list[str]:
    if isinstance(message, AssistantMessage):
        return [c.id for c in message.tool_calls]
    if isinstance(message, ToolResultMessage):
        return [message.call_id]
    return []


def test_validation_refuses_ids_that_break_the_rules() -> None:
    call = {"type": "tool_use", "id": "functions.add:0", "name": "add", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "functions.add:0", "content": "ok"}
    body = {
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "add"}]},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ],
    }
    with pytest.raises(RequestValidationError, match=r"functions\.add:0"):
        validate(body, "anthropic-messages")
    chat = {
        "messages": [
            {"role": "user", "content": "add"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c" * 41,
                        "type": "function",
                        "function": {"name": "add", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c" * 41, "content": "ok"},
        ]
    }
    with pytest.raises(RequestValidationError, match="40"):
        validate(chat, "openai-chat")


async def test_a_switch_to_anthropic_maps_another_servers_call_ids(
    server: LocalServer, tmp_path: Path
) -> None:
    @ags.tool
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    local = ags.get_model(f"openai-compatible:{server.url}/v1#kimi")
    claude = ags.get_model("anthropic:claude-opus-4-8", base_url=server.url)
    call = {
        "index": 0,
        "id": "functions.add:0",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
    }
    server.reply(
        Reply(
            sse=[
                chat_chunk({"role": "assistant", "tool_calls": [call]}),
                chat_chunk({}, finish="tool_calls"),
                "data: [DONE]\n\n",
            ]
        ),
        Reply(
            sse=[
                chat_chunk({"role": "assistant", "content": "3"}),
                chat_chunk({}, finish="stop"),
                "data: [DONE]\n\n",
            ]
        ),
    )
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=local,
        tools=[add],
        config=ags.Config(titles=False, retry_base_delay=0, provider_retries=0),
    )
    try:
        session = await runtime.create_session()
        assert (await session.prompt("1+2?")).text == "3"
        await session.switch_model(claude)
        for turn in range(2):  # every later prompt still goes through
            server.reply(Reply(sse=anthropic_text_stream(f"answer {turn}")))
            assert (await session.prompt(f"again {turn}")).text == f"answer {turn}"
        sent = [r.json for r in server.requests if r.path == "/v1/messages"]
        assert len(sent) == 2 and sent[0]["messages"][:3] == sent[1]["messages"][:3]
        ids = wire_ids(sent[1], "anthropic-messages")
        assert len(ids) == 2 and ids[0] == ids[1]  # the call and its result still pair
        assert RULES["anthropic-messages"].fullmatch(ids[0])
        # the log keeps what the provider said
        stored = [
            c.id for m in session.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
        ]
        assert stored == ["functions.add:0"]
    finally:
        await runtime.close()
        await local.aclose()
        await claude.aclose()
