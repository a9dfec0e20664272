"""Checks of an ``MCPServer``'s fields: each gives the field's stored form or ``UsageError``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import UsageError

__all__ = ["check_mapping", "check_resources", "check_strings"]


def check_resources(
    value: Any, where: str, key: Callable[[str, str], str]
) -> tuple[tuple[str, str], ...]:
    pairs = tuple(value)
    keys: set[str] = set()
    for pair in pairs:
        if not (
            isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            raise UsageError(f"{where}: resources must pair names with URIs, got {pair!r}")
        name, uri = pair
        if not uri or not name:
            raise UsageError(f"{where}: a resource needs a name and a URI, got {pair!r}")
        key_of = key("s", name)
        if key_of in keys:
            raise UsageError(f"{where}: two resources are named like {name!r}")
        keys.add(key_of)
    return pairs


def check_strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise UsageError(f"{where} must be a list of strings")
    items = tuple(value)
    if not all(isinstance(v, str) for v in items):
        raise UsageError(f"{where} must be a list of strings")
    return items


def check_mapping(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise UsageError(f"{where} must map names to strings")
    items = dict(value)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in items.items()):
        raise UsageError(f"{where} must map names to strings")
    return items
