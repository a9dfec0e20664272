"""The cache controls each request went out with, rebuilt from the log.

A provider call carries the session's cache controls beside the lowered request (see
``providers.cache_controls``): its cache key (derived from the session id), the response it asks
the provider to compare with (the newest response before it), whether diagnostics were asked
and the lifetime asked for, both recorded on the response entry. With them the request display
shows the body as the SDK sent it (``providers.wire.sent_body``). A request whose response is
missing (it failed) or was stored before controls were recorded shows what ``Config`` asks for
(``cache_ttl`` without measured gaps, ``provider_cache_diagnostics``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..config import Config
from ..log import AssistantEntry, Record
from ..providers.cache_controls import CacheControls, cache_key_for
from ..providers.cache_policy import choose_ttl

__all__ = ["next_controls", "sent_controls"]


def _controls(
    session_id: str, config: Config, previous: str, answer: AssistantEntry | None
) -> CacheControls:
    ttl: Literal["5m", "1h"] = choose_ttl(config.cache_ttl, ())
    diagnose = config.provider_cache_diagnostics
    if answer is not None and answer.cache_ttl in ("5m", "1h"):  # recorded with the response
        ttl = "1h" if answer.cache_ttl == "1h" else "5m"
        diagnose = answer.cache_diagnose
    return CacheControls(
        key=cache_key_for(session_id),
        ttl=ttl,
        diagnose=diagnose,
        compare_with=previous or None,
    )


def sent_controls(
    session_id: str, records: Sequence[Record], config: Config
) -> dict[int, CacheControls]:
    """Each dispatch record's seq → the cache controls its request was sent with."""
    out: dict[int, CacheControls] = {}
    previous = before = ""  # the newest response id so far, and before the pending dispatch
    pending: int | None = None  # a dispatch whose response has not been seen yet
    for record in records:
        entry = record.entry
        if entry.kind == "dispatch":
            if pending is not None:
                out[pending] = _controls(session_id, config, previous, None)
            pending = record.seq
            before = previous
        elif isinstance(entry, AssistantEntry):
            if pending is not None:
                out[pending] = _controls(session_id, config, before, entry)
                pending = None
            previous = entry.response_id
    if pending is not None:
        out[pending] = _controls(session_id, config, before, None)
    return out


def next_controls(session_id: str, records: Sequence[Record], config: Config) -> CacheControls:
    """The cache controls of the next request (gaps measured by a live session aside)."""
    previous = next(
        (r.entry.response_id for r in reversed(records) if isinstance(r.entry, AssistantEntry)),
        "",
    )
    return _controls(session_id, config, previous, None)
