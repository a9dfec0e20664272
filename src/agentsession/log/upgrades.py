"""Upgrades of stored payloads, one step per version, so every version ever written keeps loading.

``log.stored`` applies them in order: a payload of version ``v`` goes through ``(kind, v)``,
``(kind, v + 1)``… up to the version written today. A step adds what the newer version holds
with the value the older one meant; it never reads the database or the clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

from .entries import CacheDiagnosis

__all__ = ["UPGRADES"]


def _epoch_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 1 epochs were never opened by a compaction summary.
    return {**payload, "summary_seq": None}


def _epoch_v2_to_v3(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 2 epochs did not record their tools: they declared the application's tools.
    return {**payload, "tools": None}


def _epoch_v3_to_v4(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 4 may keep long baseline texts by reference (log.texts); inline ones are the same.
    return payload


def _dispatch_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 1 stored the diagnosis as free text and no part digests: a value outside the
    # diagnosis type says nothing we can use, and the next request cannot be compared with it.
    cache = payload.get("cache")
    known = get_args(CacheDiagnosis)
    return {**payload, "cache": cache if cache in known else "unknown"}


def _dispatch_v2_to_v3(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 3 holds the same fields, packed (see log.packed): nothing to add.
    return payload


def _assistant_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 2 may add the provider's response id and cache diagnosis, long-lived cache
    # writes in the usage and an estimated-usage flag; a version 1 response had none of them.
    return payload


def _assistant_v2_to_v3(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 3 may record lone surrogates replaced on arrival and the cache controls asked
    # for; a version 2 response was stored as it came (one holding a surrogate is repaired
    # where it leaves: lowering, display) and its controls are not known.
    return payload


def _assistant_v3_to_v4(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 4 may record when the first event of the answer arrived; a version 3 response
    # did not, and its time to first token is not known.
    return payload


def _tool_result_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 2 may record when the tool began to run; a version 1 result did not, and its
    # duration is not known.
    return payload


def _side_call_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 2 may say why the call was made (``reason``) and has the purpose ``keep_warm``;
    # a version 1 call was a title or a summary, made for no recorded reason.
    return payload


def _summary_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    # Version 2 may hold the provider's compaction block; a version 1 summary was written here.
    return {**payload, "block": None}


#: Upgrades of stored payloads: (kind, version) -> function returning the version + 1 payload.
UPGRADES: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("epoch", 1): _epoch_v1_to_v2,
    ("epoch", 2): _epoch_v2_to_v3,
    ("epoch", 3): _epoch_v3_to_v4,
    ("dispatch", 1): _dispatch_v1_to_v2,
    ("dispatch", 2): _dispatch_v2_to_v3,
    ("assistant", 1): _assistant_v1_to_v2,
    ("assistant", 2): _assistant_v2_to_v3,
    ("assistant", 3): _assistant_v3_to_v4,
    ("tool_result", 1): _tool_result_v1_to_v2,
    ("side_call", 1): _side_call_v1_to_v2,
    ("summary", 1): _summary_v1_to_v2,
}
