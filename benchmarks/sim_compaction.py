"""The providers' own compaction, as the provider simulator answers it.

OpenAI's ``/responses/compact`` is ``OpenAICompactions`` (below); Anthropic's server-side
compaction is ``Compactions``:

A request with the ``compaction`` parameter (``{"type": "summarize"}``, beta
``compact-2026-09-04``) is a compaction request: the answer holds one ``compaction`` block
alone (``stop_reason`` ``"compaction"``) — a summary text (``null`` when told to fail), an
opaque ``encrypted_content`` and a ``signature`` over both — and its usage sits in one
``compaction`` entry of ``usage.iterations``, not in the top-level figures (as the SDK's
``BetaIterationsUsage`` documents). Its input is accounted against the prompt cache like any
request's.

A request with the threshold edit (``context_management.edits`` holding ``compact_20260112``
with an ``input_tokens`` trigger, beta ``compact-2026-01-12``) whose input reaches the trigger
is compacted inside the request: the answer opens with the block, then the reply written from
the block alone; ``usage.iterations`` holds the ``compaction`` iteration (the whole input) and
the ``message`` iteration (the compacted input), and the top-level figures are the latter's.

Every later request may send the block back; the simulator drops everything before the last
compaction block it finds in ``messages`` (as the API does) and refuses, with a 400, a block it
did not issue or one changed in any field: replay must be byte for byte.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

__all__ = [
    "Compactions",
    "OpenAICompactions",
    "SimulatedRefusal",
    "openai_compaction_answer",
    "threshold_of",
]

DEFAULT_TRIGGER = 150_000  # the edit's documented default


def threshold_of(body: dict[str, Any]) -> int | None:
    """The trigger of a request's ``compact_20260112`` edit, or ``None`` without one."""
    edits = (body.get("context_management") or {}).get("edits") or ()
    for edit in edits:
        if edit.get("type") == "compact_20260112":
            trigger = edit.get("trigger") or {}
            if trigger and trigger.get("type") != "input_tokens":
                raise SimulatedRefusal("compact_20260112: the trigger type must be input_tokens")
            value = int(trigger.get("value", DEFAULT_TRIGGER))
            if value < 50_000:
                raise SimulatedRefusal("compact_20260112: the trigger must be at least 50000")
            if body.get("compaction"):
                raise SimulatedRefusal("compaction cannot be combined with context_management")
            return value
    return None


class SimulatedRefusal(ValueError):
    """A request the simulated provider refuses (answered with HTTP 400)."""


class Compactions:
    """The compaction blocks the simulator issued, by signature."""

    def __init__(self) -> None:
        self.issued: dict[str, dict[str, Any]] = {}
        self.replayed = 0  # requests that sent an issued block back
        self.fail_next = False  # the next compaction fails: a block with null content

    def block(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """A new compaction block summarising ``messages``."""
        said = [m for m in messages if m.get("role") != "system"]
        text = (
            "## Goal\nContinue the work.\n## Facts and decisions\n"
            f"{len(said)} messages summarised by the provider.\n"
            "## Open items and next steps\nAnswer the next prompt."
        )
        opaque = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        signature = "sig_" + hashlib.sha256((text + opaque).encode()).hexdigest()[:32]
        found = {
            "type": "compaction",
            "content": text,
            "encrypted_content": "enc_" + opaque,
            "signature": signature,
        }
        if self.fail_next:
            self.fail_next = False
            found["content"] = None
        self.issued[signature] = copy.deepcopy(found)
        return found

    def effective(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as the provider reads it: from the last compaction block on.

        Raises ``SimulatedRefusal`` for a block not issued here exactly as it is sent.
        """
        messages = body.get("messages", [])
        at: tuple[int, int] | None = None
        for i, message in enumerate(messages):
            content = message.get("content")
            for k, block in enumerate(content if isinstance(content, list) else ()):
                if isinstance(block, dict) and block.get("type") == "compaction":
                    self._check(block)
                    at = (i, k)
        if at is None:
            return body
        self.replayed += 1
        i, k = at
        first = {**messages[i], "content": messages[i]["content"][k:]}
        return {**body, "messages": [first, *messages[i + 1 :]]}

    def _check(self, block: dict[str, Any]) -> None:
        sent = {key: value for key, value in block.items() if key != "cache_control"}
        issued = self.issued.get(str(sent.get("signature")))
        if issued is None or json.dumps(issued) != json.dumps(sent):
            raise SimulatedRefusal("compaction block: not as issued (signature mismatch)")


def iteration(kind: str, usage: dict[str, Any]) -> dict[str, Any]:
    """One entry of ``usage.iterations``: ``kind`` is ``compaction`` or ``message``."""
    return {"type": kind, **usage}


def compaction_answer(
    message_id: str,
    model: str,
    block: dict[str, Any],
    usage: dict[str, Any],
    out: int,
) -> dict[str, Any]:
    """The Messages answer to a compaction request: the block alone, usage per iteration."""
    iteration = {**usage, "type": "compaction", "output_tokens": out}
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": "compaction",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "iterations": [iteration],
        },
    }


class OpenAICompactions:
    """OpenAI's standalone compaction (``POST /responses/compact``) as the simulator answers it.

    The answer's ``output`` is the input's user messages (as input message items, with ids)
    followed by one ``compaction`` item whose ``encrypted_content`` is a digest of what was
    compacted: the same input gives the same items. A later ``/responses`` request may send
    the items back; one ``compaction`` item that differs from the one issued in any field is
    refused with a 400, so replay must be byte for byte.
    """

    def __init__(self) -> None:
        self.issued: dict[str, dict[str, Any]] = {}
        self.replayed = 0  # requests that sent an issued compaction item back
        self.fail_next = False  # the next compaction returns no compaction item

    def output(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The compacted output items for a ``/responses/compact`` body."""
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        said = {"instructions": body.get("instructions"), "input": items}
        digest = hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()
        kept: list[dict[str, Any]] = []
        for item in items:
            if item.get("type", "message") != "message" or item.get("role") != "user":
                continue
            content = item.get("content")
            parts = (
                [{"type": "input_text", "text": content}] if isinstance(content, str) else content
            )
            kept.append(
                {
                    "id": f"msg_{digest[:16]}_{len(kept)}",
                    "type": "message",
                    "status": "completed",
                    "role": "user",
                    "content": parts,
                }
            )
        if self.fail_next:
            self.fail_next = False
            return kept
        found = {
            "id": "cmp_" + digest[:24],
            "type": "compaction",
            "encrypted_content": "enc_" + digest,
        }
        self.issued[found["id"]] = copy.deepcopy(found)
        return [*kept, found]

    def check(self, body: dict[str, Any]) -> None:
        """Refuse (``SimulatedRefusal``) a compaction item in ``input`` not as issued."""
        items = body.get("input")
        found = [i for i in items or () if isinstance(i, dict) and i.get("type") == "compaction"]
        for item in found:
            issued = self.issued.get(str(item.get("id")))
            if issued is None or json.dumps(issued) != json.dumps(item):
                raise SimulatedRefusal("compaction item: not as issued (encrypted content differs)")
        if found:
            self.replayed += 1


def openai_compaction_answer(
    answer_id: str, output: list[dict[str, Any]], total: int, read: int, written: int, out: int
) -> dict[str, Any]:
    """The ``CompactedResponse`` body: the output items and the call's usage."""
    return {
        "id": answer_id,
        "object": "response.compaction",
        "created_at": 1_772_000_000,
        "output": output,
        "usage": {
            "input_tokens": total,
            "input_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": total + out,
        },
    }
