"""Inspection: why a request would or would not hit the provider's prompt cache.

A provider caches a request's prefix: tools, then system, then messages. A request is compared
with the one dispatched before it in the session and the first thing that breaks the prefix is
named, with the reasons Anthropic reports (``model_changed``, ``tools_changed``,
``system_changed``, ``messages_changed``), or ``hit`` when the new request extends the old one.

The comparison needs only digests, which every ``Dispatch`` record carries: one for the tools,
one for the system part and a chain over the messages (each link hashes the previous link and one
message), so "the old messages are a prefix of the new ones" is one chain value compared at the
old length. The diagnosis is therefore the same in a new process as in the one that sent the
previous request, and it is stored on each dispatch record beside the usage the provider reports.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from .codec import encode
from .log import CacheDiagnosis, Dispatch
from .request import Request

__all__ = ["CacheDiagnosis", "diagnose", "fingerprinted", "what_changed"]


def _digest(value: object) -> str:
    text = json.dumps(encode(value), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _chain(request: Request) -> list[str]:
    """``links[i]`` identifies the first ``i`` messages of ``request``."""
    links = [""]
    for message in request.messages:
        links.append(hashlib.sha256((links[-1] + _digest(message)).encode()).hexdigest()[:32])
    return links


def fingerprinted(dispatch: Dispatch, request: Request, previous: Dispatch | None) -> Dispatch:
    """``dispatch`` with the digests of ``request`` and its diagnosis against ``previous``."""
    links = _chain(request)
    current = replace(
        dispatch,
        tools_digest=_digest(request.tools),
        system_digest=_digest(request.system),
        messages_digest=links[-1],
        message_count=len(request.messages),
    )
    return replace(current, cache=diagnose(previous, current, links))


def diagnose(previous: Dispatch | None, current: Dispatch, links: list[str]) -> CacheDiagnosis:
    """The cache outcome to expect for the request fingerprinted as ``current``.

    ``links`` is that request's message chain; ``previous`` is the session's last dispatch
    record (``None``: there was none); one written by an older version, without digests, gives
    ``unknown``.
    """
    if previous is None:
        return "first"
    if previous.model != current.model:
        return "model_changed"
    if not previous.tools_digest:
        return "unknown"
    if previous.tools_digest != current.tools_digest:
        return "tools_changed"
    if previous.system_digest != current.system_digest:
        return "system_changed"
    if previous.message_count >= len(links):
        return "messages_changed"
    if links[previous.message_count] != previous.messages_digest:
        return "messages_changed"
    return "hit"


def what_changed(dispatch: Dispatch, request: Request) -> str:
    """In words, which part of ``request`` differs from what ``dispatch`` recorded."""
    current = fingerprinted(dispatch, request, None)
    if not dispatch.tools_digest:
        return "the request differs"
    if current.tools_digest != dispatch.tools_digest:
        return "the tools differ"
    if current.system_digest != dispatch.system_digest:
        return "the system context differs"
    return "the messages differ (another window or history)"
