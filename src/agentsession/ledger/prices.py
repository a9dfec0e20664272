"""Model prices: USD per million tokens, shipped per model with the page and date they come from.

A price belongs to a provider and a model. The shipped table holds each first-party vendor's
list prices, keyed by bare model name; it prices a model string of that vendor
(``"anthropic:claude-opus-4-8"``, ``"openai:gpt-4.1"``, ``"openai-chat:…"``,
``"openai-responses:…"``) or a bare name (``"claude-opus-4-8"``), and a dated or suffixed
variant (``"claude-opus-4-8-20261001"``, ``"gpt-4.1-2025-04-14"``) finds the entry of its base
name. A model reached any other way — ``openai-compatible:…``, a provider of the command
line's configuration file (``"local:gpt-4.1"``), any other prefix — has no list price, whatever
its name: a local server's ``gpt-4.1`` is not OpenAI's. Given prices (``Config(prices=...)``,
the command line's ``[prices."PROVIDER:MODEL"]`` tables) win over the shipped table: a key
``"PROVIDER:MODEL"`` prices that provider's model (``"openai-compatible:MODEL"`` a local
server's), a bare key that name at any provider. A model without an entry has no price: costs
are ``None`` and say so, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..config import ModelPrice

__all__ = ["PRICES", "ModelPrice", "price_for"]


_ANTHROPIC = "https://platform.claude.com/docs/en/about-claude/pricing"
_OPENAI = "https://platform.openai.com/docs/pricing"


def _claude(inp: float, date: str) -> ModelPrice:
    # Anthropic's published multipliers: reads 0.1x, 5-minute writes 1.25x, 1-hour writes 2x,
    # output 5x input for every model listed here.
    return ModelPrice(
        input=inp,
        cached_input=round(inp * 0.1, 6),
        cache_write=round(inp * 1.25, 6),
        cache_write_long=inp * 2,
        output=inp * 5,
        source=_ANTHROPIC,
        date=date,
    )


PRICES: Mapping[str, ModelPrice] = {
    "claude-opus-4-8": _claude(5.0, "2026-06-17"),
    "claude-opus-4-5": _claude(5.0, "2026-06-17"),
    "claude-opus-4-1": _claude(15.0, "2026-06-17"),
    "claude-opus-4": _claude(15.0, "2026-06-17"),
    "claude-sonnet-4-6": _claude(3.0, "2026-06-17"),
    "claude-sonnet-4-5": _claude(3.0, "2026-06-17"),
    "claude-sonnet-4": _claude(3.0, "2026-06-17"),
    "claude-haiku-4-5": _claude(1.0, "2026-06-17"),
    "gpt-5.6-terra": ModelPrice(
        input=2.0, cached_input=0.2, cache_write=2.5, output=12.0, source=_OPENAI, date="2026-08-02"
    ),
    "gpt-5.6-luna": ModelPrice(
        input=0.2,
        cached_input=0.02,
        cache_write=0.25,
        output=1.2,
        source=_OPENAI,
        date="2026-08-02",
    ),
    "gpt-5": ModelPrice(
        input=1.25, cached_input=0.125, output=10.0, source=_OPENAI, date="2025-08-07"
    ),
    "gpt-5-mini": ModelPrice(
        input=0.25, cached_input=0.025, output=2.0, source=_OPENAI, date="2025-08-07"
    ),
    "gpt-4.1": ModelPrice(
        input=2.0, cached_input=0.5, output=8.0, source=_OPENAI, date="2025-04-14"
    ),
    "gpt-4.1-mini": ModelPrice(
        input=0.4, cached_input=0.1, output=1.6, source=_OPENAI, date="2025-04-14"
    ),
    "gpt-4o": ModelPrice(
        input=2.5, cached_input=1.25, output=10.0, source=_OPENAI, date="2024-10-01"
    ),
}
"""The shipped table, keyed by bare model name; every entry names its source page and date."""

_SUFFIX = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")


_VENDOR_OF_PREFIX = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-chat": "openai",
    "openai-responses": "openai",
    "gemini": "google",
}
"""The first-party prefixes and whose list prices they are billed at."""

_VENDOR_OF_SOURCE = {_ANTHROPIC: "anthropic", _OPENAI: "openai"}


def _split(model: str) -> tuple[str, str]:
    """A model string's provider prefix (``""``: none) and its bare model name.

    ``"openai:gpt-4.1"`` → ``("openai", "gpt-4.1")``; ``"gpt-4.1"`` → ``("", "gpt-4.1")``;
    ``"openai-compatible:http://h/v1#m"`` → ``("openai-compatible", "m")``.
    """
    provider, sep, rest = model.partition(":")
    if not sep:
        return "", model
    return provider, rest.rsplit("#", 1)[1] if "#" in rest else rest


def _variants(key: str) -> tuple[str, str]:
    return key, _SUFFIX.sub("", key)


def price_for(model: str, prices: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``model`` (a ``get_model`` string or a bare name); ``None``: no price.

    ``prices`` (``Config.prices``) is consulted first: by the whole string, by
    ``PROVIDER:MODEL``, then by the bare name (the caller's own table: a bare key is the
    caller's word for that name at any provider); then the shipped table by the bare name, for
    a model of the vendor whose list it is. Each key is also tried with its date or
    ``-latest`` suffix removed.
    """
    given = prices or {}
    provider, bare = _split(model)
    vendor = _VENDOR_OF_PREFIX.get(provider, "") if provider else ""
    keys = [model, f"{provider}:{bare}", bare] if provider else [model]
    for key in keys:
        for name in _variants(key):
            found = given.get(name)
            if found is not None:
                return found
    if provider and not vendor:
        return None  # another server's model of the same name is not the vendor's
    for name in _variants(bare):
        found = PRICES.get(name)
        if found is not None and (not vendor or _VENDOR_OF_SOURCE.get(found.source) == vendor):
            return found
    return None
