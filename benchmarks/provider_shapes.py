"""The provider shapes the simulator answers in: responses and cache diagnoses.

Split from ``provider_sim`` (the caches, the billing, the server), which imports these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reply", "anthropic_diagnosis", "chat_answer", "openai_diagnosis", "responses_answer"]


@dataclass(frozen=True)
class Reply:
    """What the simulated model answers: text, or one tool call."""

    text: str = ""
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


def anthropic_diagnosis(
    before: dict[str, Any] | None, now: dict[str, Any]
) -> dict[str, Any] | None:
    if before is None:
        return {"cache_miss_reason": {"type": "previous_message_not_found"}}
    for key, reason in (
        ("model", "model_changed"),
        ("tools", "tools_changed"),
        ("system", "system_changed"),
    ):
        if before[key] != now[key]:
            return {
                "cache_miss_reason": {"type": reason, "cache_missed_input_tokens": now["tokens"]}
            }
    old, new = before["messages"], now["messages"]
    if len(old) > len(new) or old != new[: len(old)]:
        return {
            "cache_miss_reason": {
                "type": "messages_changed",
                "cache_missed_input_tokens": now["tokens"],
            }
        }
    return None


def openai_diagnosis(before: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
    if before is None:
        return {"type": "comparison_response_not_found"}
    for key, reason in (
        ("model", "model_changed"),
        ("key", "prompt_cache_key_changed"),
        ("tools", "tools_changed"),
    ):
        if before[key] != now[key]:
            return {"type": "cache_miss", "reason": reason, "cache_missed_tokens": 0}
    old, new = before["chain"], now["chain"]
    if len(old) > len(new) or new[len(old) - 1] != old[-1]:
        return {"type": "cache_miss", "reason": "input_changed", "cache_missed_tokens": 0}
    return {"type": "cache_hit"}


def chat_answer(
    answer_id: str, model: str, reply: Reply, total: int, read: int, written: int, out: int
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool:
        message["tool_calls"] = [
            {
                "id": f"call_{answer_id}",
                "type": "function",
                "function": {"name": reply.tool, "arguments": json.dumps(reply.arguments)},
            }
        ]
    return {
        "id": answer_id,
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls" if reply.tool else "stop",
                "message": message,
            }
        ],
        "usage": {
            "prompt_tokens": total,
            "completion_tokens": out,
            "total_tokens": total + out,
            "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
        },
    }


def responses_answer(
    answer_id: str,
    model: str,
    reply: Reply,
    total: int,
    read: int,
    written: int,
    out: int,
    long: int = 0,
) -> dict[str, Any]:
    """A Responses answer; ``long``: the part of ``written`` written with 12-hour retention."""
    if reply.tool:
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{answer_id}",
            "call_id": f"call_{answer_id}",
            "name": reply.tool,
            "arguments": json.dumps(reply.arguments),
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"m_{answer_id}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }
    return {
        "id": answer_id,
        "object": "response",
        "created_at": 1,
        "model": model,
        "status": "completed",
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": total,
            "input_tokens_details": {
                "cached_tokens": read,
                "cache_write_tokens": written,
                "cache_write_tokens_details": {
                    "ttl_30m_tokens": written - long,
                    "ttl_12h_tokens": long,
                },
            },
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": total + out,
        },
    }
