"""Inspection: why a request would or would not hit the provider's prompt cache.

A provider caches a request's prefix: tools, then system, then messages. ``diagnose`` compares a
request with the previous one sent in this session and names the first thing that breaks the
prefix, with the reasons Anthropic reports (``model_changed``, ``tools_changed``,
``system_changed``, ``messages_changed``), or ``hit`` when the new request extends the old one.
The diagnosis is stored on each dispatch record beside the usage the provider reports.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .request import Request

__all__ = ["CacheDiagnosis", "diagnose"]

CacheDiagnosis: TypeAlias = Literal[
    "first",
    "unknown",
    "hit",
    "model_changed",
    "tools_changed",
    "system_changed",
    "messages_changed",
]


def diagnose(
    previous: Request | None, previous_model: str | None, current: Request, model: str
) -> CacheDiagnosis:
    """The cache outcome to expect for ``current`` after ``previous`` (``None``: not known)."""
    if previous is None:
        return "unknown"
    if previous_model != model:
        return "model_changed"
    if previous.tools != current.tools:
        return "tools_changed"
    if previous.system != current.system:
        return "system_changed"
    if current.messages[: len(previous.messages)] != previous.messages:
        return "messages_changed"
    return "hit"
