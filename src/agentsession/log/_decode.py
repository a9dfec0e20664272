"""Straight-line decoders for stored entries, generated once per entry type.

``codec.decode`` decodes a dataclass by looping over a table of its fields; for the rows a
reopened session reads before its next request, that loop is most of the decoding time. Here
each plain dataclass (see ``codec._plain_init``) gets a function written out field by field, with
the exact-type check of a text, number or flag inline. It accepts exactly what ``codec.decode``
accepts and builds the same value; on anything else it gives way to ``codec.decode``, which
raises the typed error naming the offending value.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from ..codec import Decoder, _compiled, _hints, _Mismatch, _plain_init, decode

__all__ = ["decode_entry"]

T = TypeVar("T")

#: Field types whose values pass unchanged when they are exactly of that type.
_EXACT = (str, int, bool, float)


def decode_entry(cls: type[T], data: Any) -> T:
    """``codec.decode(cls, data)``, by a decoder generated for ``cls`` when it is plain."""
    tp: Any = cls
    try:
        value: T = _decoder(tp)(data)
    except _Mismatch:
        value = decode(cls, data)  # says what does not fit, with its path
    return value


_BUILDING: set[Any] = set()


@functools.cache
def _decoder(tp: Any) -> Decoder:
    shorter = _container(tp)
    if shorter is not None:
        return shorter
    plain = isinstance(tp, type) and dataclasses.is_dataclass(tp) and _plain_init(tp)
    if not plain or tp in _BUILDING:  # a type that holds itself keeps the codec's decoder
        return _compiled(tp)
    _BUILDING.add(tp)
    try:
        return _generated(tp)
    finally:
        _BUILDING.discard(tp)


def _container(tp: Any) -> Decoder | None:
    """A shorter decoder than ``codec``'s for a tuple or an optional value, when there is one."""
    args = get_args(tp)
    origin = get_origin(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _many(_decoder(args[0]))
    if origin is tuple and args and all(a in _EXACT for a in args):
        return _fixed(args, _compiled(tp))
    if origin is dict and args == (str, Any):
        return _texts_to_any(_compiled(tp))
    if origin in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        other: Any = args[0] if args[1] is type(None) else args[1]
        plain = isinstance(other, type) and dataclasses.is_dataclass(other) and _plain_init(other)
        if get_origin(other) is tuple or plain:
            return _optional(_decoder(other))  # the other member never takes a null
    return None


def _many(item: Decoder) -> Decoder:
    """A decoder of ``tuple[X, ...]`` from ``X``'s (as ``codec``'s: a list, each item an X)."""

    def many(data: Any) -> tuple[Any, ...]:
        if not isinstance(data, list):
            raise _Mismatch
        return tuple(map(item, data))

    return many


def _fixed(items: tuple[type, ...], slow: Decoder) -> Decoder:
    """A decoder of a tuple of texts, numbers or flags: a list of exactly those types as it is.

    Anything else goes to ``slow`` (``codec``'s), which converts it or refuses it.
    """
    size = len(items)

    def fixed(data: Any) -> tuple[Any, ...]:
        if type(data) is list and len(data) == size and tuple(map(type, data)) == items:
            return tuple(data)
        value: tuple[Any, ...] = slow(data)
        return value

    return fixed


def _texts_to_any(slow: Decoder) -> Decoder:
    """A decoder of ``dict[str, Any]`` (a tool call's arguments): an object with text keys."""

    def keyed(data: Any) -> dict[str, Any]:
        if type(data) is dict:
            for key in data:
                if type(key) is not str:
                    break
            else:
                return dict(data)  # a copy, as codec's decoder gives
        value: dict[str, Any] = slow(data)
        return value

    return keyed


def _optional(other: Decoder) -> Decoder:
    """A decoder of ``X | None`` from ``X``'s, when ``X``'s refuses a null as ``codec`` does."""

    def optional(data: Any) -> Any:
        return None if data is None else other(data)

    return optional


class _Absent:
    """A field the stored object leaves out."""


_ABSENT = _Absent()


def _generated(cls: type) -> Decoder:
    """The source of a decoder for ``cls``, field by field, compiled once."""
    hints = _hints(cls)
    scope: dict[str, Any] = {
        "cls": cls,
        "new": object.__new__,
        "put": object.__setattr__,
        "Mismatch": _Mismatch,
        "ABSENT": _ABSENT,
        "known": frozenset(f.name for f in dataclasses.fields(cls)),
    }
    lines = [
        "def build(data):",
        "    if not isinstance(data, dict) or not known.issuperset(data):",
        "        raise Mismatch",
    ]
    names = []
    for i, f in enumerate(dataclasses.fields(cls)):
        lines += _field_lines(i, f, hints[f.name], scope)
        names.append(f"{f.name!r}: v{i}")
    lines += [
        "    instance = new(cls)",  # what the generated __init__ stores, in field order
        f"    put(instance, '__dict__', {{{', '.join(names)}}})",
        "    return instance",
    ]
    exec("\n".join(lines), scope)
    build: Decoder = scope["build"]
    return build


def _field_lines(i: int, f: dataclasses.Field[Any], hint: Any, scope: dict[str, Any]) -> list[str]:
    """Lines that leave field ``f``'s decoded value in ``v{i}`` (or raise ``Mismatch``).

    A lean row leaves most fields out: one membership test decides, and a present value is
    read once.
    """
    v = f"v{i}"
    lines = [f"    if {f.name!r} in data:", f"        {v} = data[{f.name!r}]"]
    lines += _check_lines(i, hint, scope)
    if f.default is not dataclasses.MISSING:
        scope[f"D{i}"] = f.default
        return [*lines, "    else:", f"        {v} = D{i}"]
    if f.default_factory is not dataclasses.MISSING:
        scope[f"F{i}"] = f.default_factory
        return [*lines, "    else:", f"        {v} = F{i}()"]
    return [*lines, "    else:", "        raise Mismatch"]


def _check_lines(i: int, hint: Any, scope: dict[str, Any]) -> list[str]:
    """Lines that check (and decode) a present value ``v{i}`` of type ``hint``."""
    v = f"v{i}"
    if hint is Any:
        return []
    if get_origin(hint) is Literal:
        scope[f"L{i}"] = get_args(hint)
        return [f"        if {v} not in L{i}:", "            raise Mismatch"]
    scope[f"C{i}"] = _decoder(hint)
    passing = _passing(hint)
    if not passing:
        return [f"        {v} = C{i}({v})"]
    if len(passing) == 1:
        (scope[f"T{i}"],) = passing
        return [f"        if type({v}) is not T{i}:", f"            {v} = C{i}({v})"]
    scope[f"T{i}"] = passing
    return [f"        if type({v}) not in T{i}:", f"            {v} = C{i}({v})"]


def _passing(hint: Any) -> frozenset[type]:
    """The value types that ``hint``'s decoder gives back unchanged, whatever the value.

    A text, flag, float or null, exactly of its type, in a union naming that type: no other
    member takes it, or one that does gives it back as it is. An int only without a float
    beside it (the float member would make it a float).
    """
    if hint in _EXACT:
        return frozenset({hint})
    args = get_args(hint)
    if get_origin(hint) not in (Union, types.UnionType):
        return frozenset()
    found = {a for a in args if a in (str, bool, float, type(None))}
    if int in args and float not in args:
        found.add(int)
    return frozenset(found)
