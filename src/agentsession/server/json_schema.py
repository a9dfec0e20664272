"""JSON Schemas made from the package's own dataclasses, as their public JSON form has them.

The server sends values as their dataclass fields (``codec.encode`` for log entries, ``plain``
for live events): every field present, nested dataclasses as objects, tuples as arrays. The
schema of such a value is read off its class's type hints, so the document cannot drift from
what is sent: a field added to an entry appears in its schema by itself. A type the walk does
not know (a class of its own, ``Any``) is left open (``{}``) rather than guessed.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import types
import typing
from typing import Any

__all__ = ["schema_of"]

#: How deep nested dataclasses are spelled out; deeper ones are plain objects.
_DEPTH = 8
_ARRAYS = (tuple, list, collections.abc.Sequence, collections.abc.Set, frozenset, set)
_MAPPINGS = (dict, collections.abc.Mapping)


def schema_of(cls: type, depth: int = 0) -> dict[str, Any]:
    """The schema of dataclass ``cls``'s JSON form: an object with every field, each required."""
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError):  # a hint only a type checker resolves
        return {"type": "object"}
    properties = {f.name: _of(hints.get(f.name, Any), depth + 1) for f in dataclasses.fields(cls)}
    return {"type": "object", "required": list(properties), "properties": properties}


def _scalar(annotation: Any) -> dict[str, Any] | None:
    if annotation is str:
        return {"type": "string"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if annotation is type(None) or annotation is None:
        return {"type": "null"}
    return None


def _of(annotation: Any, depth: int) -> dict[str, Any]:
    """The schema of one field's type."""
    scalar = _scalar(annotation)
    if scalar is not None:
        return scalar
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_of(arg, depth) for arg in args]}
    if origin in _ARRAYS or annotation in _ARRAYS:
        items = [a for a in args if a is not Ellipsis]
        if len(set(map(repr, items))) == 1:
            return {"type": "array", "items": _of(items[0], depth)}
        if items:
            return {"type": "array", "items": {"anyOf": [_of(a, depth) for a in items]}}
        return {"type": "array"}
    if origin in _MAPPINGS or annotation in _MAPPINGS:
        value = _of(args[1], depth) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": value}
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return schema_of(annotation, depth) if depth < _DEPTH else {"type": "object"}
    return {}
