"""Provider cache controls: what a session adds to a lowered body so the provider's cache holds.

Lowering stays a pure function of the request; the session's own cache settings (a stable
cache key, the lifetime asked for, the response to compare against) are added afterwards by
``apply_cache_controls``, also a pure function, and only the fields the model's profile
supports are added (see ``ModelProfile.cache_key``, ``cache_breakpoints``, ``cache_ttl``,
``cache_diagnostics``):

- OpenAI (chat and responses): ``prompt_cache_key``, derived from the session id by a hash so
  it reveals nothing else. With explicit breakpoints (GPT-5.6 and later), the baseline is sent
  as text parts with a ``prompt_cache_breakpoint`` at the end of the application's own
  instructions (which survive a re-baseline; tools come before them in the provider's prefix)
  and at the end of the epoch baseline; the provider's implicit breakpoint covers the newest
  message. Responses ``instructions`` cannot carry a breakpoint, so such a body carries the
  baseline as a leading ``developer`` input message instead.
- OpenAI responses: ``prompt_cache_options.comparison_response_id`` asks for the provider's
  diagnosis against the previous response; with explicit breakpoints (GPT-5.6 and later),
  ``prompt_cache_options.prewarm`` on a keep-warm call (``CacheControls.prewarm``): the
  provider prepares the cache of the request without generating output, so the refresh is
  the live request itself, read from the cache, and nothing else is billed; a lift
  (``CacheControls.lift``) asks there for ``prompt_cache_options.ttl`` ``"12h"``, the longer
  of the two retentions Responses offers (Chat Completions: ``"30m"`` only).
- Anthropic: the lowering's breakpoints (last tool, last baseline block, newest user turn)
  plus one at the end of the application's instructions, all with the lifetime asked for
  (``ttl: "1h"``; the 5-minute default is left implicit), and ``diagnostics.previous_message_id``.
  Where the profile offers provider compaction and ``compact_at`` is set, the threshold edit
  (``context_management``, beta ``compact-2026-01-12``): the server compacts a request whose
  input passes that many tokens, the safety net above the session's own compaction point.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Literal

from .._frozen import frozen
from ..request import Request
from .anthropic_messages import THRESHOLD_BETA, threshold_edit
from .base import ModelProfile

__all__ = [
    "STABLE_KEYS",
    "CacheControls",
    "apply_cache_controls",
    "cache_key_for",
    "offers_prewarm",
]

STABLE_KEYS: frozenset[str] = frozenset({"core.agent"})
"""Baseline sections that survive a re-baseline: the application's own instructions."""

_BREAKPOINT = {"mode": "explicit"}


@frozen
class CacheControls:
    """The cache settings of one request.

    ``key``: the provider's cache routing key (``""``: none). ``ttl``: the lifetime asked for
    where the provider offers a choice. ``diagnose``: ask for the provider's diagnosis;
    ``compare_with`` is the previous response's id (``None`` on the first call).
    ``compact_at``: the input tokens past which the provider compacts by itself (Anthropic's
    threshold mode; ``None``: never). ``lift``: the request is a keep-warm call that lifts
    the live prefix to ``ttl``: the newest breakpoint goes on the end of the message before
    the last (the live prefix, whose last reply is written at that lifetime, so the entry the
    next prompt reads lives as long) instead of on the keep-warm question; on OpenAI Responses
    with explicit breakpoints, a prewarm asking for the 12-hour retention. ``prewarm``: the
    request is a keep-warm call the provider answers without generating output, where it
    offers that (``offers_prewarm``; elsewhere it is ignored).
    """

    key: str = ""
    ttl: Literal["5m", "1h"] = "5m"
    diagnose: bool = False
    compare_with: str | None = None
    compact_at: int | None = None
    lift: bool = False
    prewarm: bool = False
    kind: Literal["cache_controls"] = "cache_controls"


def offers_prewarm(fmt: str, profile: ModelProfile) -> bool:
    """Whether ``fmt`` and ``profile`` take a keep-warm request that generates nothing.

    OpenAI's Responses API on models with explicit cache breakpoints (GPT-5.6 and later):
    ``prompt_cache_options.prewarm`` "prepares the prompt cache without generating output".
    Chat Completions has no such option.
    """
    return fmt == "openai-responses" and profile.cache_breakpoints


def cache_key_for(session_id: str) -> str:
    """A stable cache key for a session that reveals nothing but its own identity."""
    return "ags-" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


def _stable_count(request: Request) -> int:
    """How many leading non-empty baseline sections survive a re-baseline."""
    count = 0
    for key, text in request.system:
        if key not in STABLE_KEYS:
            break
        count += bool(text)
    return count


def _baseline_parts(request: Request, part_type: str) -> list[dict[str, Any]]:
    """The baseline as at most two text parts (stable head, the rest), joined as lowered."""
    texts = [text for _, text in request.system if text]
    stable = _stable_count(request)
    head, tail = "\n\n".join(texts[:stable]), "\n\n".join(texts[stable:])
    parts: list[dict[str, Any]] = []
    if head:
        parts.append({"type": part_type, "text": head})
    if tail:
        parts.append({"type": part_type, "text": ("\n\n" + tail) if head else tail})
    for part in parts:
        part["prompt_cache_breakpoint"] = dict(_BREAKPOINT)
    return parts


def apply_cache_controls(
    body: dict[str, Any],
    fmt: str,
    profile: ModelProfile,
    controls: CacheControls,
    request: Request,
) -> dict[str, Any]:
    """``body`` (lowered from ``request`` for ``fmt``) with the controls ``profile`` supports."""
    out = copy.deepcopy(body)
    if fmt in ("openai-chat", "openai-responses"):
        _openai(out, fmt, profile, controls, request)
    elif fmt == "anthropic-messages":
        _anthropic(out, profile, controls, request)
    return out


def _openai(
    body: dict[str, Any],
    fmt: str,
    profile: ModelProfile,
    controls: CacheControls,
    request: Request,
) -> None:
    if profile.cache_key and controls.key:
        body["prompt_cache_key"] = controls.key
    if profile.cache_breakpoints and request.system_text:
        if fmt == "openai-chat":
            first = body["messages"][0]
            if first.get("role") in ("system", "developer") and isinstance(first["content"], str):
                first["content"] = _baseline_parts(request, "text")
        elif body.pop("instructions", None) is not None:
            parts = _baseline_parts(request, "input_text")
            head = {"type": "message", "role": "developer", "content": parts}
            body["input"] = [head, *body["input"]]
    if (
        fmt == "openai-responses"
        and profile.cache_diagnostics
        and controls.diagnose
        and controls.compare_with
    ):
        options = body.setdefault("prompt_cache_options", {})
        options["comparison_response_id"] = controls.compare_with
    if controls.prewarm and offers_prewarm(fmt, profile):
        body.setdefault("prompt_cache_options", {})["prewarm"] = True
    if controls.lift and offers_prewarm(fmt, profile):
        # the 12-hour retention: the live prefix read is retained 12 hours, not billed again
        body.setdefault("prompt_cache_options", {})["ttl"] = "12h"


def _anthropic(
    body: dict[str, Any], profile: ModelProfile, controls: CacheControls, request: Request
) -> None:
    system = body.get("system")
    if profile.cache_markers and profile.cache_ttl and isinstance(system, list) and len(system) > 1:
        stable = _stable_count(request)
        if 0 < stable < len(system):
            system[stable - 1]["cache_control"] = {"type": "ephemeral"}
    if profile.cache_markers and controls.lift:
        _mark_live_prefix(body.get("messages", []))
    if profile.cache_ttl and controls.ttl == "1h":
        # every breakpoint at the long lifetime: Anthropic refuses a long one after a short one
        for block in _marked(body):
            block["cache_control"]["ttl"] = "1h"
    if profile.cache_diagnostics and controls.diagnose:
        body["diagnostics"] = {"previous_message_id": controls.compare_with}
    if profile.provider_compaction and controls.compact_at is not None:
        body["context_management"] = threshold_edit(controls.compact_at)
        body["betas"] = [*body.get("betas", ()), THRESHOLD_BETA]


def _mark_live_prefix(messages: list[dict[str, Any]]) -> None:
    """Move the newest breakpoint from the last message to the end of the one before it."""
    if len(messages) < 2:
        return
    last, before = messages[-1].get("content"), messages[-2].get("content")
    if not isinstance(last, list) or not isinstance(before, list) or not before:
        return
    end = before[-1]
    if not isinstance(end, dict) or end.get("type") not in ("text", "tool_use", "tool_result"):
        return  # thinking blocks cannot carry a breakpoint
    marked = [b for b in last if isinstance(b, dict) and "cache_control" in b]
    if not marked:
        return
    for block in marked:
        del block["cache_control"]
    end["cache_control"] = {"type": "ephemeral"}


def _marked(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [*body.get("tools", []), *body.get("system", [])]
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            blocks += [b for b in content if isinstance(b, dict)]
    return [b for b in blocks if isinstance(b.get("cache_control"), dict)]
