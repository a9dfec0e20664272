"""Property: any valid neutral history lowers, for every format and profile, to a body that
passes the format's validator and the official SDK's request types; an orphaned tool result is
always reported before sending; an openai-chat profile that wraps system text never sends two
user messages in a row (strict chat templates)."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_fakes import check_sdk_types

from agentsession.errors import RequestValidationError
from agentsession.providers import FORMATS, default_profile, lower, profile_for
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

NAMES = ("read_file", "write_file", "pdf_extract", "search")
TOOLS = tuple(ToolSpec(n, f"The {n} tool.", {"type": "object", "properties": {}}) for n in NAMES)
PROFILES: dict[str, list[ModelProfile]] = {
    "openai-chat": [
        default_profile("openai-chat"),
        replace(default_profile("openai-chat"), system_placement="none"),
    ],
    "openai-responses": [
        profile_for("openai", "gpt-5"),
        replace(profile_for("openai", "gpt-4.1"), system_placement="none"),
    ],
    "anthropic-messages": [
        profile_for("anthropic", "claude-opus-4-8"),
        profile_for("anthropic", "claude-sonnet-4-5"),
    ],
    "gemini": [profile_for("gemini", "gemini-2.5-pro")],
}

text = st.text(min_size=1, max_size=30).filter(lambda s: s.strip() != "")
tagged = st.one_of(text, st.just("see </system-message> and <system-message>"))
image = st.builds(ImagePart, st.sampled_from(["image/png", "image/jpeg"]), data=st.just("AAAA"))


@st.composite
def user_message(draw: st.DrawFn) -> UserMessage:
    if draw(st.booleans()):
        return UserMessage(draw(tagged))
    parts = draw(st.lists(st.one_of(st.builds(TextPart, text), image), min_size=1, max_size=3))
    return UserMessage(tuple(parts))


@st.composite
def system_message(draw: st.DrawFn) -> SystemMessage:
    added = tuple(draw(st.lists(st.sampled_from(NAMES), max_size=2, unique=True)))
    removed = tuple(
        draw(st.lists(st.sampled_from([n for n in NAMES if n not in added]), max_size=1))
    )
    return SystemMessage(draw(tagged), tools_added=added, tools_removed=removed)


@st.composite
def histories(draw: st.DrawFn) -> tuple[Message, ...]:
    messages: list[Message] = []
    counter = 0
    if draw(st.integers(0, 9)) == 0:
        messages.append(draw(system_message()))
    for _ in range(draw(st.integers(1, 4))):
        messages.append(draw(user_message()))
        if draw(st.integers(0, 4)) == 0:
            messages.append(draw(user_message()))  # input sent again after a failed call
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.integers(0, 2)) == 0:
                messages.append(draw(system_message()))
            n = draw(st.integers(0, 3))
            calls = []
            for _ in range(n):
                counter += 1
                name = draw(st.sampled_from(NAMES))
                args = draw(st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=2))
                calls.append(ToolCall(name, args, id=f"call_{counter}"))
            content = draw(st.one_of(st.just(""), text)) if calls else draw(text)
            messages.append(AssistantMessage(content, tool_calls=tuple(calls)))
            order = draw(st.permutations(calls)) if calls else []
            for call in order:
                result = draw(st.one_of(text, st.just("")))
                error = draw(st.booleans())
                messages.append(ToolResultMessage(call.id, call.name, result, is_error=error))
            if not calls:
                break
        if draw(st.integers(0, 2)) == 0:
            messages.append(draw(system_message()))
    return tuple(messages)


def _lower_all(request: Request) -> None:
    for fmt in FORMATS:
        for profile in PROFILES[fmt]:
            body = lower(request, fmt, profile=profile, model="m")
            check_sdk_types(fmt, body)
            if fmt == "openai-chat" and profile.system_placement == "none":
                roles = [m["role"] for m in body["messages"]]
                assert ("user", "user") not in set(pairwise(roles)), roles


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(histories(), st.lists(st.tuples(st.sampled_from(["a", "b"]), text), max_size=2))
def test_every_valid_history_lowers_and_validates(
    messages: tuple[Message, ...], system: list[tuple[str, str]]
) -> None:
    _lower_all(Request(tuple(system), messages, TOOLS))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.data())
def test_orphaned_result_is_reported(messages: tuple[Message, ...], data: Any) -> None:
    # an orphan can only stand where a result group may not continue: after a non-tool message
    spots = [i + 1 for i, m in enumerate(messages) if not isinstance(m, AssistantMessage)]
    spot = data.draw(st.sampled_from(spots))
    orphan = ToolResultMessage("orphan", "read_file", "x")
    broken = (*messages[:spot], orphan, *messages[spot:])
    for fmt in FORMATS:
        with pytest.raises(RequestValidationError) as info:
            lower(Request((), broken, TOOLS), fmt)
        assert info.value.position == spot
