"""``encode`` (a dataclass value's JSON-ready form) and ``canonical_json`` (the text digests use).

``encode`` turns dataclasses into dicts (their ``kind``/``role`` literal included), tuples into
lists. It walks a class's field names; for a class met often it writes that walk out as code
(``compile_encoder``: each field read as an attribute, a scalar kept without a call). The
canonical text is ``json.dumps(encode(value), sort_keys=True, ensure_ascii=False)``, composed
element-wise and, for a class met often, written straight from the fields (``compile_text``).
Both give what the walk gives, keys in the same order (property tests).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import keyword
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

from .._memo import IdentityMemo
from ._generate import Counter, generate
from ._json import one_shot
from ._shape import SCALARS, field_names

__all__ = [
    "ENCODERS",
    "TEXTS",
    "canonical_json",
    "canonical_json_seen",
    "canonical_texts_held",
    "compile_encoder",
    "compile_text",
    "encode",
    "plain_json",
]

Encoder = Callable[[Any], dict[str, Any]]
TextEncoder = Callable[[Any], str]

#: Each class's compiled encoder, once it has been met often.
ENCODERS: dict[type, Encoder] = {}
#: Each class's compiled canonical-text writer, once it has been met often.
TEXTS: dict[type, TextEncoder] = {}
_ENCODED = Counter()
_WRITTEN = Counter()


def encode(value: Any) -> Any:
    """The JSON-ready form of a dataclass value (recursively)."""
    cls = type(value)
    if cls in SCALARS:
        return value
    compiled = ENCODERS.get(cls)
    if compiled is not None:
        return compiled(value)
    names = field_names(cls)
    if names is not None:
        if _ENCODED.often(cls):  # its walk written out as code from now on
            return compile_encoder(cls, names)(value)
        return {name: encode(getattr(value, name)) for name in names}
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    return value


def _read(name: str, i: int, scope: dict[str, Any]) -> str:
    """The expression that reads field ``name`` of ``value`` (``getattr`` for an odd name)."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"value.{name}"
    scope[f"name{i}"] = name
    return f"getattr(value, name{i})"


def compile_encoder(cls: type, names: tuple[str, ...]) -> Encoder:
    """The encoder of dataclass ``cls`` (fields ``names``), kept in ``ENCODERS``.

    It returns ``{name: encode(value.name), …}``; ``encode`` returns a value of a ``SCALARS``
    type as it is, so it is called only for the others.
    """
    scope: dict[str, Any] = {"encode": encode, "SCALARS": SCALARS, "getattr": getattr}
    lines = ["def encode_fields(value):"]
    for i, name in enumerate(names):
        lines.append(f"    item{i} = {_read(name, i, scope)}")
        lines.append(f"    if type(item{i}) not in SCALARS:")
        lines.append(f"        item{i} = encode(item{i})")
    pairs = ", ".join(f"{name!r}: item{i}" for i, name in enumerate(names))
    lines.append(f"    return {{{pairs}}}")
    encoder: Encoder = generate(f"encoder for {cls.__qualname__}", lines, scope, __name__)
    ENCODERS[cls] = encoder
    return encoder


def compile_text(cls: type, names: tuple[str, ...]) -> TextEncoder:
    """The canonical text of a value of dataclass ``cls`` (fields ``names``), kept in ``TEXTS``.

    ``json.dumps(encode(value), sort_keys=True, ensure_ascii=False)`` written straight from the
    fields: the keys in sorted order with the default separators, a string escaped as ``json``
    escapes it, ``None``, a ``bool`` and an ``int`` (of exactly those types) written as ``json``
    writes them, and any other field value by ``plain_json`` (its own canonical text).
    """
    scope: dict[str, Any] = {"STRING": encode_basestring, "TEXT": plain_json, "INT": int.__repr__}
    scope["getattr"] = getattr
    lines = ["def text_fields(value):"]
    joined = []
    for i, name in enumerate(sorted(names)):
        lines.append(f"    item = {_read(name, i, scope)}")
        lines.append("    kind = type(item)")
        lines.append(f"    if kind is str: text{i} = STRING(item)")
        lines.append(f'    elif item is None: text{i} = "null"')
        lines.append(f'    elif kind is bool: text{i} = "true" if item else "false"')
        lines.append(f"    elif kind is int: text{i} = INT(item)")
        lines.append(f"    else: text{i} = TEXT(item)")
        joined.append(f"{encode_basestring(name) + ': '!r} + text{i}")
    body = ' + ", " + '.join(joined) or '""'
    lines.append(f'    return "{{" + {body} + "}}"')
    encoder: TextEncoder = generate(
        f"canonical text for {cls.__qualname__}", lines, scope, __name__
    )
    TEXTS[cls] = encoder
    return encoder


_SORTED = one_shot(json.JSONEncoder(sort_keys=True, ensure_ascii=False))


def plain_json(value: Any) -> str:
    """``json.dumps(encode(value), sort_keys=True, ensure_ascii=False)``, composed element-wise.

    A string escaped as ``json`` escapes it, a tuple or list joined from its items' texts, a
    dataclass met often written by its ``compile_text`` writer; anything else (and a class met
    rarely) through the JSON encoder.
    """
    cls = type(value)
    if cls is str:
        return encode_basestring(value)
    compiled = TEXTS.get(cls)
    if compiled is not None:
        return compiled(value)
    if cls is tuple or cls is list:
        return "[" + ", ".join(map(plain_json, value)) + "]"
    names = field_names(cls)
    if names is not None and _WRITTEN.often(cls):
        return compile_text(cls, names)(value)
    return _SORTED(encode(value))


_CANONICAL: IdentityMemo[str] = IdentityMemo()


def canonical_json(value: Any) -> str:
    """``json.dumps(encode(value), sort_keys=True, ensure_ascii=False)``, memoised.

    The text digests are taken over, kept per object for a dataclass value and a tuple of them
    or of strings (frozen values do not change); list and object forms compose element-wise.
    """
    hit = _CANONICAL.get(value)  # holds only values that cannot change, found by identity
    if hit is not None:
        return hit
    if isinstance(value, tuple):
        text = "[" + ", ".join(canonical_json(v) for v in value) + "]"  # a request's system, tools
        return _CANONICAL.put(value, text) if _fixed(value) else text
    if _is_value(value):
        return _CANONICAL.put(value, plain_json(value))
    return plain_json(value)


def canonical_texts_held() -> contextlib.AbstractContextManager[None]:
    """Keep every canonical text made while the block runs (see ``IdentityMemo.held``).

    An inspection of a long session makes more texts than the memo holds, and its report asks
    for them again (``canonical_json_seen``): held, they are found instead of made twice.
    """
    return _CANONICAL.held()


def canonical_json_seen(value: Any) -> str:
    """``canonical_json(value)``, from the memo when it holds the text, else not kept there.

    For a pass over many values that will not be asked for again (a report's distinct
    messages): each text is found where an earlier pass kept it, and a text made here pushes
    none of the kept ones out of the bounded memo (which those still to come may find).
    """
    hit = _CANONICAL.get(value)
    return hit if hit is not None else plain_json(value)


def _is_value(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _fixed(value: tuple[Any, ...]) -> bool:
    """Whether ``value`` holds only strings, dataclass values (text kept) and such tuples."""
    return all(type(v) is str or _is_value(v) or (type(v) is tuple and _fixed(v)) for v in value)
