"""Usage figures checked where they arrive: the log stores plain, consistent token counts.

Whatever a provider or a proxy reports is checked here before it is stored.
A reported figure must be a non-negative integer no larger than ``MAX_TOKENS``, and the parts
of the input must fit in it (cached + written ≤ input; long writes ≤ writes). A figure that is
missing counts as 0 and is no fault. Anything else — negative, fractional, not a number at
all, infinite, beyond any context window, or inconsistent — is clamped into range, and the
reply's usage is marked estimated with a reason naming each correction, so ``cost()`` counts it
as a guess and no sum or price downstream can overflow or turn negative.
"""

from __future__ import annotations

import math
from typing import Any

from ..request import Usage

__all__ = ["MAX_TOKENS", "checked_usage", "token_sum"]

MAX_TOKENS = 100_000_000
"""Tokens: far above any context window or reply; a figure beyond it is no real count."""

_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "cache_write_long_tokens",
)


def _figure(name: str, value: Any, notes: list[str]) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        notes.append(f"{name} {_shown(value)} is not a number")
        return 0
    if isinstance(value, float):
        if not math.isfinite(value):
            notes.append(f"{name} {value} is not finite")
            return 0
        whole = math.floor(value)
        if whole != value:
            notes.append(f"{name} {value} is not an integer")
        value = int(whole)
    if value < 0:
        notes.append(f"{name} {_shown(value)} is negative")
        return 0
    if value > MAX_TOKENS:
        notes.append(f"{name} {_shown(value)} is beyond {MAX_TOKENS:,}")
        return MAX_TOKENS
    return int(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def token_sum(*values: Any) -> Any:
    """The sum of reported figures when every one is a plain count; else the first that is not.

    A provider that reports input in parts (Anthropic: fresh, read, written) is summed with this,
    so a bad part reaches ``checked_usage`` as itself and is named there.
    """
    total = 0
    for value in values:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return value
        total += value
    return total


def checked_usage(usage: Usage) -> tuple[Usage, str]:
    """``usage`` with every figure in range and its parts consistent, and why it had to change.

    The reason is ``""`` when nothing changed (then ``usage`` itself is returned).
    """
    i, o, c = usage.input_tokens, usage.output_tokens, usage.cached_input_tokens
    w, long = usage.cache_write_tokens, usage.cache_write_long_tokens
    if (
        type(i) is int
        and type(o) is int
        and type(c) is int
        and type(w) is int
        and type(long) is int
        and 0 <= c <= i <= MAX_TOKENS
        and 0 <= o <= MAX_TOKENS
        and 0 <= long <= w <= i - c
    ):
        return usage, ""  # the common case, checked without building anything
    notes: list[str] = []
    raw: dict[str, Any] = {name: getattr(usage, name) for name in _FIELDS}
    fixed = {name: _figure(name, raw[name], notes) for name in _FIELDS}
    inp, cached = fixed["input_tokens"], fixed["cached_input_tokens"]
    if cached > inp:
        notes.append(f"cached_input_tokens {cached} exceed input_tokens {inp}")
        fixed["cached_input_tokens"] = cached = inp
    written = fixed["cache_write_tokens"]
    if written > inp - cached:
        notes.append(f"cache_write_tokens {written} exceed the uncached input {inp - cached}")
        fixed["cache_write_tokens"] = written = inp - cached
    if fixed["cache_write_long_tokens"] > written:
        notes.append(
            f"cache_write_long_tokens {fixed['cache_write_long_tokens']} exceed"
            f" cache_write_tokens {written}"
        )
        fixed["cache_write_long_tokens"] = written
    if not notes and all(type(raw[name]) is int for name in _FIELDS):
        return usage, ""
    return Usage(**fixed), "; ".join(notes)
