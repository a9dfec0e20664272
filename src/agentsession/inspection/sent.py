"""The cache controls each request went out with, rebuilt from the log.

A provider call carries the session's cache controls beside the lowered request (see
``providers.cache_controls``): its cache key (derived from the session id), the response it asks
the provider to compare with (the newest response before it), whether diagnostics were asked
and the lifetime asked for, both recorded on the response entry. With them the request display
shows the body as the SDK sent it (``providers.wire.sent_body``). A request whose response is
missing (it failed) or was stored before controls were recorded shows what ``Config`` asks for
(``cache_ttl`` without measured gaps, ``provider_cache_diagnostics``). The provider's
threshold-compaction trigger follows from ``Config`` and the model's profile (``limit_of``:
the budget's limit for a profile); ``"auto"`` is taken to pick the provider, as it does with
the session's own model summarising.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal

from ..codec import builder
from ..compaction import threshold_trigger
from ..config import Config
from ..log import AssistantEntry, Dispatch, Record
from ..providers.base import ModelProfile
from ..providers.cache_controls import CacheControls, apply_cache_controls, cache_key_for
from ..providers.cache_policy import choose_ttl
from ..providers.lower import lower
from ..providers.profiles import profile_for
from ..request import Request, ToolSpec, UserMessage

__all__ = ["cache_fields", "next_controls", "sent_controls"]


LimitOf = Callable[[ModelProfile], int]


def _trigger(config: Config, model_name: str, limit_of: LimitOf | None) -> int | None:
    """The threshold edit's trigger a request of ``model_name`` carried (``None``: none)."""
    if limit_of is None or not config.auto_compact or config.compaction == "local":
        return None
    found = _profile(model_name)
    if found is None or not found[1].provider_compaction:
        return None
    return threshold_trigger(limit_of(found[1]), config.compact_threshold)


def _controls(
    key: str,
    config: Config,
    previous: str,
    answer: AssistantEntry | None,
    compact_at: int | None = None,
) -> CacheControls:
    """The controls of one request; ``key`` is the session's cache key (``cache_key_for``)."""
    ttl: Literal["5m", "1h"]
    if answer is not None and answer.cache_ttl in ("5m", "1h"):  # recorded with the response
        ttl = "1h" if answer.cache_ttl == "1h" else "5m"
        diagnose = answer.cache_diagnose
    else:  # what Config asks for (no gaps measured): found only when nothing was recorded
        ttl = choose_ttl(config.cache_ttl, ())
        diagnose = config.provider_cache_diagnostics
    return builder(CacheControls)(  # one per request of a whole log: its fields stored at once
        key=key,
        ttl=ttl,
        diagnose=diagnose,
        compare_with=previous or None,
        compact_at=compact_at,
    )


def sent_controls(
    session_id: str, records: Sequence[Record], config: Config, limit_of: LimitOf | None = None
) -> dict[int, CacheControls]:
    """Each dispatch record's seq → the cache controls its request was sent with."""
    out: dict[int, CacheControls] = {}
    key = cache_key_for(session_id)  # a digest: made once, not once per request
    previous = before = ""  # the newest response id so far, and before the pending dispatch
    pending: int | None = None  # a dispatch whose response has not been seen yet
    trigger: int | None = None  # the pending dispatch's threshold trigger
    for record in records:
        entry = record.entry
        if isinstance(entry, Dispatch):
            if pending is not None:
                out[pending] = _controls(key, config, previous, None, trigger)
            pending = record.seq
            before = previous
            trigger = _trigger(config, entry.model, limit_of)
        elif isinstance(entry, AssistantEntry):
            if pending is not None:
                out[pending] = _controls(key, config, before, entry, trigger)
                pending = None
            previous = entry.response_id
    if pending is not None:
        out[pending] = _controls(key, config, before, None, trigger)
    return out


def next_controls(
    session_id: str, records: Sequence[Record], config: Config, limit_of: LimitOf | None = None
) -> CacheControls:
    """The cache controls of the next request, as the newest response recorded them.

    The lifetime and diagnosis the session asked for last are the best account of what it asks
    next from outside the process that runs it (a live session's measured gaps aside).
    """
    last = next((r.entry for r in reversed(records) if isinstance(r.entry, AssistantEntry)), None)
    sent = next((r.entry for r in reversed(records) if isinstance(r.entry, Dispatch)), None)
    trigger = _trigger(config, sent.model, limit_of) if sent is not None else None
    previous = last.response_id if last is not None else ""
    return _controls(cache_key_for(session_id), config, previous, last, trigger)


_PREVIOUS = "\x00previous-response"  # stands for the compared response id in a memoised probe
_PREVIOUS_JSON = json.dumps(_PREVIOUS)


def cache_fields(model_name: str, controls: CacheControls | None) -> str:
    """What the SDK call of ``model_name`` carried for the cache beyond the neutral request.

    As JSON text (``""``: nothing, or a model whose profile is not known from its name): the
    fields the cache controls add, with their values, and where breakpoints and lifetimes were
    marked. Found by applying ``controls`` to a small probe request with the model's profile,
    so it follows ``apply_cache_controls`` rather than repeating it.
    """
    if controls is None:
        return ""
    previous = controls.compare_with
    # Memoised by the controls without the compared id, which changes at every request (a
    # report asks once per request: no dataclass copied for each).
    probe = (
        model_name,
        controls.key,
        controls.ttl,
        controls.diagnose,
        controls.compact_at,
        previous is not None,
    )
    text = _PROBED.get(probe)
    if text is None:
        if len(_PROBED) >= 64:
            _PROBED.clear()
        text = _PROBED[probe] = _probe_fields(
            model_name, replace(controls, compare_with=_PREVIOUS if previous is not None else None)
        )
    return text.replace(_PREVIOUS_JSON, json.dumps(previous)) if text else text


#: ``_probe_fields`` by model and the controls' fields but the compared id.
_PROBED: dict[tuple[str, str, str, bool, int | None, bool], str] = {}


@functools.lru_cache(maxsize=64)
def _probe_fields(model_name: str, controls: CacheControls) -> str:
    found = _profile(model_name)
    if found is None:
        return ""
    fmt, profile = found
    request = Request(
        (("core.agent", "a"), ("core.date", "b")), (UserMessage("u"),), (_PROBE_TOOL,)
    )
    plain = lower(request, fmt, profile=profile)
    sent = apply_cache_controls(plain, fmt, profile, controls, request)
    fields: dict[str, Any] = {k: v for k, v in sent.items() if k not in plain}
    marked = json.dumps(sent)
    if '"ttl": "1h"' in marked:
        fields["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    if "prompt_cache_breakpoint" in marked:
        fields["prompt_cache_breakpoint"] = {"mode": "explicit"}
    if "instructions" in plain and "instructions" not in sent:
        fields["instructions"] = "sent as a leading developer input message instead"
    return json.dumps(fields, indent=2, ensure_ascii=False) if fields else ""


_PROBE_TOOL = ToolSpec("t", "t", {"type": "object", "properties": {}})


def _profile(model_name: str) -> tuple[str, ModelProfile] | None:
    """The wire format and profile a model string names, without making a client."""
    prefix, _, model = model_name.partition(":")
    match prefix:
        case "anthropic":
            profile = profile_for("anthropic", model)
        case "gemini":
            profile = profile_for("gemini", model)
        case "openai-compatible":
            profile = profile_for("openai-compatible", model.rpartition("#")[2])
        case "openai-chat":
            profile = profile_for("openai", model, wire_format="openai-chat")
        case "openai":
            profile = profile_for("openai", model, wire_format="openai-responses")
        case _:
            return None
    return profile.wire_format, profile
