"""Local validators: each wire format's pairing and placement rules, checked before sending.

A validator reads a lowered body (the dict ``lower()`` returns) and raises
``RequestValidationError`` with the index of the offending wire message. The rules are the
providers' documented ones: every tool call answered exactly once in the right place, no result
without its call, role alternation where the format demands it, and where a system message may
stand. ``lower()`` runs the matching validator on every body it produces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._lowering import reject
from .base import ModelProfile
from .call_ids import id_breach
from .openai_chat import strict_alternation
from .profiles import default_profile

__all__ = [
    "VALIDATORS",
    "validate",
    "validate_anthropic",
    "validate_gemini",
    "validate_openai_chat",
    "validate_openai_responses",
]

_MAX_CACHE_BREAKPOINTS = 4


def _check_answers(
    fmt: str, expected: list[str], got: list[str], position: int, what: str = "tool call"
) -> None:
    for call_id in got:
        if call_id not in expected:
            reject(fmt, f"result for {call_id!r} answers no {what} of the turn before it", position)
    for call_id in expected:
        count = got.count(call_id)
        if count == 0:
            reject(fmt, f"{what} {call_id!r} has no result in the next turn", position)
        if count > 1:
            reject(fmt, f"{what} {call_id!r} has {count} results", position)


def _check_ids(fmt: str, ids: list[Any], position: int) -> None:
    """Each tool-call id must follow the format's id rule (else every later request fails)."""
    for call_id in ids:
        if not isinstance(call_id, str):
            reject(fmt, "a tool call has no id", position)
        breach = id_breach(call_id, fmt)
        if breach is not None:
            reject(fmt, breach, position)


def _anthropic_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] | str = message.get("content") or []
    return [{"type": "text", "text": blocks}] if isinstance(blocks, str) else blocks


def _anthropic_system(
    messages: list[dict[str, Any]],
    i: int,
    last_turn: str | None,
    declared: set[str],
    profile: ModelProfile | None,
) -> None:
    """A native system entry: where it may stand and which blocks it may carry."""
    fmt = "anthropic-messages"
    if profile is not None and profile.system_placement == "none":
        reject(fmt, "this model takes no system message inside messages", i)
    if last_turn != "user" or messages[i - 1]["role"] not in ("user", "system"):
        reject(fmt, "a system message must directly follow a user turn", i)
    following = next((m["role"] for m in messages[i + 1 :] if m["role"] != "system"), None)
    if following not in (None, "assistant"):
        reject(fmt, "a system message must be followed by an assistant turn or end", i)
    for block in _anthropic_blocks(messages[i]):
        kind = block.get("type")
        if kind in ("tool_addition", "tool_removal"):
            tool = block["tool"]
            if tool["type"] == "tool_definition":
                declared.add(tool["definition"]["name"])
            elif tool["name"] not in declared:
                reject(fmt, f"{kind} names undeclared tool {tool['name']!r}", i)
        elif kind != "text":
            reject(fmt, f"a system message cannot carry {kind!r} blocks", i)


def _anthropic_user(messages: list[dict[str, Any]], i: int) -> None:
    """A user turn: its tool results come first and answer the assistant turn just before it."""
    fmt = "anthropic-messages"
    blocks = _anthropic_blocks(messages[i])
    results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
    _check_ids(fmt, results, i)
    if results and any(b.get("type") != "tool_result" for b in blocks[: len(results)]):
        reject(fmt, "tool_result blocks must come first in a user turn", i)
    previous = messages[i - 1] if i else None
    calls = []
    if previous is not None and previous["role"] == "assistant":
        calls = [b["id"] for b in previous["content"] if b.get("type") == "tool_use"]
    elif results:
        reject(fmt, "tool results must directly follow the assistant turn", i)
    _check_answers(fmt, calls, results, i)


def _anthropic_assistant(messages: list[dict[str, Any]], i: int) -> None:
    """An assistant turn's tool_use blocks are answered by the very next (user) turn."""
    calls = [b for b in _anthropic_blocks(messages[i]) if b.get("type") == "tool_use"]
    _check_ids("anthropic-messages", [b.get("id") for b in calls], i)
    following_turn = messages[i + 1] if i + 1 < len(messages) else None
    if calls and (following_turn is None or following_turn["role"] != "user"):
        reject("anthropic-messages", "tool_use blocks must be answered by the next user turn", i)


def validate_anthropic(body: dict[str, Any], profile: ModelProfile | None = None) -> None:
    """Messages API rules: user first, alternation, tool_result pairing, system placement."""
    fmt = "anthropic-messages"
    messages: list[dict[str, Any]] = body.get("messages") or []
    if not messages:
        reject(fmt, "messages is empty", None)
    declared = {tool["name"] for tool in body.get("tools", [])}
    breakpoints = sum(1 for b in body.get("tools", []) if "cache_control" in b)
    breakpoints += sum(1 for b in body.get("system", []) if "cache_control" in b)
    last_turn: str | None = None
    for i, message in enumerate(messages):
        role = message.get("role")
        blocks = _anthropic_blocks(message)
        breakpoints += sum(1 for b in blocks if "cache_control" in b)
        if role == "system":
            _anthropic_system(messages, i, last_turn, declared, profile)
            continue
        if role not in ("user", "assistant"):
            reject(fmt, f"unknown role {role!r}", i)
        # A compaction block the provider returned opens what follows it, as an assistant turn.
        opens = role == "assistant" and blocks[:1] and blocks[0].get("type") == "compaction"
        if last_turn is None and role != "user" and not opens:
            reject(fmt, "the first message must be a user turn", i)
        if role == last_turn:
            reject(fmt, f"two {role} turns in a row", i)
        if not blocks:
            reject(fmt, f"an empty {role} turn", i)
        if role == "user":
            _anthropic_user(messages, i)
        else:
            _anthropic_assistant(messages, i)
        last_turn = role
    if breakpoints > _MAX_CACHE_BREAKPOINTS:
        reject(fmt, f"{breakpoints} cache breakpoints; the API allows 4", None)


def validate_openai_chat(body: dict[str, Any], profile: ModelProfile | None = None) -> None:
    """Chat Completions rules: tool messages directly answer the preceding tool calls.

    For a profile that wraps system text (strict chat templates), also no two user messages in
    a row.
    """
    fmt = "openai-chat"
    messages: list[dict[str, Any]] = body.get("messages") or []
    if not messages:
        reject(fmt, "messages is empty", None)
    strict = profile is not None and strict_alternation(profile)
    pending: list[str] = []
    answered: list[str] = []
    call_at = 0
    for i, message in enumerate(messages):
        role = message.get("role")
        if strict and role == "user" and i and messages[i - 1].get("role") == "user":
            reject(fmt, "two user messages in a row; this model's template needs alternation", i)
        if role == "tool":
            call_id = message.get("tool_call_id")
            _check_ids(fmt, [call_id], i)
            if call_id not in pending or call_id in answered:
                reject(fmt, f"tool message {call_id!r} answers no open tool call", i)
            answered.append(call_id)
            continue
        if len(answered) != len(pending):
            missing = [c for c in pending if c not in answered]
            reject(fmt, f"tool call {missing[0]!r} has no tool message", call_at)
        pending, answered = [], []
        if role in ("system", "developer"):
            leading = all(m.get("role") in ("system", "developer") for m in messages[:i])
            if not leading and profile is not None and profile.system_placement == "none":
                reject(fmt, "this model takes system messages only at the start", i)
        elif role == "assistant":
            pending = [c.get("id") for c in message.get("tool_calls") or []]
            _check_ids(fmt, pending, i)
            call_at = i
        elif role != "user":
            reject(fmt, f"unknown role {role!r}", i)
    if len(answered) != len(pending):
        reject(fmt, "the last tool calls have no tool messages", call_at)


_SEARCH_ITEMS = {"tool_search_call": "function_call", "tool_search_output": "function_call_output"}


def validate_openai_responses(body: dict[str, Any], profile: ModelProfile | None = None) -> None:
    """Responses rules: every function_call answered once by a later function_call_output.

    A client ``tool_search_call`` is answered the same way, by a ``tool_search_output``.
    """
    fmt = "openai-responses"
    items: list[dict[str, Any]] = body.get("input") or []
    if not items:
        reject(fmt, "input is empty", None)
    pending: dict[str, int] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        kind = _SEARCH_ITEMS.get(kind, kind)  # a client tool search pairs like a function call
        if kind in ("function_call", "function_call_output"):
            _check_ids(fmt, [item.get("call_id")], i)
        if kind == "function_call":
            call_id = item["call_id"]
            if call_id in pending or call_id in answered:
                reject(fmt, f"function call id {call_id!r} is used twice", i)
            pending[call_id] = i
        elif kind == "function_call_output":
            call_id = item["call_id"]
            if call_id not in pending:
                reject(fmt, f"function_call_output {call_id!r} answers no open call", i)
            del pending[call_id]
            answered.add(call_id)
        elif kind == "message":
            role = item.get("role")
            if pending and role != "assistant":
                call_id, at = next(iter(pending.items()))
                reject(fmt, f"function call {call_id!r} has no output before this message", at)
            if role in ("system", "developer"):
                if profile is not None and profile.system_placement == "none":
                    reject(fmt, "this model takes instructions only, no system messages", i)
            elif role not in ("user", "assistant"):
                reject(fmt, f"unknown role {role!r}", i)
        elif kind not in ("reasoning", "additional_tools", "compaction"):
            reject(fmt, f"unknown input item type {kind!r}", i)
    if pending:
        call_id, at = next(iter(pending.items()))
        reject(fmt, f"function call {call_id!r} has no output", at)


def validate_gemini(body: dict[str, Any], profile: ModelProfile | None = None) -> None:
    """Gemini rules: user first, strict user/model alternation, function call/response pairs."""
    fmt = "gemini"
    contents: list[dict[str, Any]] = body.get("contents") or []
    if not contents:
        reject(fmt, "contents is empty", None)
    for i, content in enumerate(contents):
        role = content.get("role")
        parts: list[dict[str, Any]] = content.get("parts") or []
        if role not in ("user", "model"):
            reject(fmt, f"role {role!r}: Gemini turns are user or model", i)
        if i == 0 and role != "user":
            reject(fmt, "the first turn must be a user turn", i)
        if i and contents[i - 1].get("role") == role:
            reject(fmt, f"two {role} turns in a row", i)
        if not parts:
            reject(fmt, f"an empty {role} turn", i)
        if role == "user":
            responses = [p["function_response"] for p in parts if "function_response" in p]
            if any("function_response" not in p for p in parts[: len(responses)]):
                reject(fmt, "function responses must come first in a user turn", i)
            calls: list[dict[str, Any]] = []
            if i:
                previous = contents[i - 1]["parts"]
                calls = [p["function_call"] for p in previous if "function_call" in p]
            # Gemini may leave ids out; an id that is there must follow the rule
            _check_ids(fmt, [r["id"] for r in responses if "id" in r], i)
            keys = [f"{c.get('id')}:{c['name']}" for c in calls]
            got = [f"{r.get('id')}:{r['name']}" for r in responses]
            _check_answers(fmt, keys, got, i, what="function call")
        else:
            has_calls = any("function_call" in p for p in parts)
            ids = [p["function_call"]["id"] for p in parts if "id" in p.get("function_call", {})]
            _check_ids(fmt, ids, i)
            if has_calls and i + 1 == len(contents):
                reject(fmt, "function calls must be answered by the next user turn", i)


VALIDATORS: dict[str, Callable[[dict[str, Any], ModelProfile | None], None]] = {
    "openai-chat": validate_openai_chat,
    "openai-responses": validate_openai_responses,
    "anthropic-messages": validate_anthropic,
    "gemini": validate_gemini,
}


def validate(body: dict[str, Any], fmt: str, profile: ModelProfile | None = None) -> None:
    """Check ``body`` against the rules of wire format ``fmt`` (raises on the first breach)."""
    default_profile(fmt)  # raises UnknownFormatError for an unknown name
    VALIDATORS[fmt](body, profile)
