"""The lean stored form of a value: ``codec.encode`` without the fields at their defaults.

Every entry a session commits is encoded this way (five commits a turn, most of them a user,
an assistant or a tool-result entry). ``lean`` walks a class's table of fields and defaults;
after ``COMPILE_AFTER`` values of one class it compiles that class's encoder written out field
by field (each field read as an attribute, each default compared the cheapest way that gives
the same answer), which then encodes every value of the class. ``lean_text`` writes an entry's
stored JSON the same way, straight from its fields: no payload dict is built, a field's key is
written once when compiling, and only a nested value goes through the JSON encoder. All give
what the walk and ``json.dumps`` of its payload give (property tests); a process that commits
a handful of entries never pays for compiling.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from typing import Any

from ._generate import Counter, generate
from ._json import one_shot
from ._shape import SCALARS, field_names

__all__ = ["compiled", "compiled_text", "lean", "lean_text"]

_NO_DEFAULT = object()

Encoder = Callable[[Any], dict[str, Any]]
TextEncoder = Callable[[Any], str]

#: The stored JSON of a value (``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``);
#: no circle check: what it gets is built afresh at every depth by ``lean``.
_JSON = one_shot(json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False))
_STRING: Callable[[str], str] = json.encoder.encode_basestring


@functools.cache
def _defaults(cls: type[Any]) -> tuple[tuple[str, Any], ...]:
    """Each field of ``cls`` in order, with the lean encoding of its default (tags excepted).

    A field without a default, and a tag (it tells union members apart: always written), gets
    ``_NO_DEFAULT``.
    """
    found: list[tuple[str, Any]] = []
    for f in dataclasses.fields(cls):
        default: Any = _NO_DEFAULT
        if f.name in ("kind", "role"):
            pass
        elif f.default is not dataclasses.MISSING:
            default = lean(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = lean(f.default_factory())
        found.append((f.name, default))
    return tuple(found)


#: Each class's encoder once compiled; the walk counts the values of the others.
_COMPILED: dict[type, Encoder] = {}
_WALKED = Counter()


def lean(value: Any) -> Any:
    """``codec.encode(value)`` without the fields at their defaults, at every depth.

    A value equal to its default but of another JSON type is kept (``False`` is not ``0``).
    """
    cls: type = type(value)
    if cls in SCALARS:
        return value
    encoder = _COMPILED.get(cls)
    if encoder is not None:
        return encoder(value)
    if field_names(cls) is not None:
        if _WALKED.often(cls):
            return compiled(cls)(value)
        return _walk(value, cls)
    if isinstance(value, tuple | list):
        return [lean(v) for v in value]
    if isinstance(value, dict):
        return {str(k): lean(v) for k, v in value.items()}
    return value


def _walk(value: Any, cls: type) -> dict[str, Any]:
    walked: dict[str, Any] = {}
    for name, default in _defaults(cls):
        item = getattr(value, name)
        if type(item) not in SCALARS:  # most fields are scalars: no call for them
            item = lean(item)
        if item != default or type(item) is not type(default):
            walked[name] = item
    return walked


def compiled(cls: type) -> Encoder:
    """The encoder of dataclass ``cls`` written out field by field (compiled once, then kept)."""
    found = _COMPILED.get(cls)
    if found is not None:
        return found
    scope: dict[str, Any] = {"lean": lean, "SCALARS": SCALARS}
    lines = ["def encode(value):", "    found = {}"]
    for i, (name, default) in enumerate(_defaults(cls)):
        lines.append(f"    item = value.{name}")
        lines.append("    if type(item) not in SCALARS:")
        lines.append("        item = lean(item)")
        lines.append(f"    if {_differs(default, i, scope)}:")
        lines.append(f"        found[{name!r}] = item")
    lines.append("    return found")
    encoder: Encoder = generate(f"lean encoder for {cls.__qualname__}", lines, scope, __name__)
    _COMPILED[cls] = encoder
    return encoder


def _differs(default: Any, index: int, scope: dict[str, Any]) -> str:
    """The test ``item != default or type(item) is not type(default)``, as cheap as it comes.

    The same answer for every ``item``: ``None`` and ``False`` are the only values of their
    type equal to them, and an empty string, number, list or dict is the only falsy one.
    """
    if default is _NO_DEFAULT:
        return "True"
    if default is None:
        return "item is not None"
    if default is False or default is True:
        return f"item is not {default}"
    kind = type(default)
    if kind in (str, int, float, list, dict) and not default:
        return f"type(item) is not {kind.__name__} or item"
    scope[f"default{index}"] = default
    scope[f"kind{index}"] = kind
    return f"item != default{index} or type(item) is not kind{index}"


_TEXTS: dict[type, TextEncoder] = {}
_TEXTS_SEEN = Counter()


def lean_text(value: Any) -> str | None:
    """The compact JSON of ``lean(value)`` (a dataclass); ``None`` for a text with no UTF-8 form.

    ``json.dumps(lean(value), ensure_ascii=False, separators=(",", ":"))``: walked for a class
    met rarely, written by its compiled encoder once met often. A text with no UTF-8 form (a
    lone surrogate) gives ``None``: the caller's general path escapes it.
    """
    cls = type(value)
    encoder = _TEXTS.get(cls)
    if encoder is None:
        encoder = compiled_text(cls) if _TEXTS_SEEN.often(cls) else _walked_text
    text = encoder(value)
    if not text.isascii():  # a C check of the string's kind: ASCII always has a UTF-8 form
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return text


def _walked_text(value: Any) -> str:
    return _JSON(lean(value))


def compiled_text(cls: type) -> TextEncoder:
    """``lean_text``'s encoder of dataclass ``cls``, written out field by field (then kept).

    A text field is escaped directly; any other value is made lean and then encoded as JSON.
    """
    found = _TEXTS.get(cls)
    if found is not None:
        return found
    scope: dict[str, Any] = {"lean": lean, "SCALARS": SCALARS, "JSON": _JSON, "STRING": _STRING}
    lines = ["def encode(value):", "    parts = []"]
    for i, (name, default) in enumerate(_defaults(cls)):
        key = json.dumps(name, ensure_ascii=False) + ":"
        lines.append(f"    item = value.{name}")
        if default is _NO_DEFAULT or type(default) is str:  # a text field: escaped directly
            lines.append("    if type(item) is str:")
            lines.append(f"        if {_text_differs(default)}:")
            lines.append(f"            parts.append({key!r} + STRING(item))")
            lines.append("    elif type(item) not in SCALARS:")
        else:  # compiling costs about 15 µs a line: no text branch where none is expected
            lines.append("    if type(item) not in SCALARS:")
        lines.append("        item = lean(item)")
        if default is _NO_DEFAULT or type(default) is str:
            lines.append(f"    if type(item) is not str and ({_differs(default, i, scope)}):")
        else:
            lines.append(f"    if {_differs(default, i, scope)}:")
        lines.append(f"        parts.append({key!r} + JSON(item))")
    lines.append('    return "{" + ",".join(parts) + "}"')
    encoder: TextEncoder = generate(f"stored text for {cls.__qualname__}", lines, scope, __name__)
    _TEXTS[cls] = encoder
    return encoder


def _text_differs(default: Any) -> str:
    """``_differs`` for an ``item`` known to be a ``str``."""
    if type(default) is not str:  # no default, or one of another type: always written
        return "True"
    return "item" if not default else f"item != {default!r}"
