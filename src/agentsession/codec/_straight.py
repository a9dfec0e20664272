"""Straight-line decoders for stored entries, generated once per entry type.

``decode`` decodes a dataclass by looping over a table of its fields; for the rows a
reopened session reads before its next request, that loop is most of the decoding time. Here
each plain dataclass (see ``plain``) gets a function written out field by field, with
the exact-type check of a text, number or flag inline. It accepts exactly what ``decode``
accepts and builds the same value; on anything else it gives way to ``decode``, which raises
the typed error naming the offending value.

Compiling that function costs more than a fresh process's first few dozen payloads of a type
gain from it, so a type's decoder first walks a table of its fields (one loop, the same checks)
and compiles its straight-line code into itself after ``COMPILE_AFTER`` payloads.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import sys
import types
from collections.abc import Callable
from typing import Annotated, Any, ForwardRef, Literal, TypeVar, Union, get_args, get_origin

from ._decoding import Decoder, Mismatch, compiled, decode
from ._generate import COMPILE_AFTER, evaluate, generate
from ._shape import PASSING, SCALARS, hints, plain, twin

__all__ = ["decode_entry", "fast_decoder"]

T = TypeVar("T")


def decode_entry(cls: type[T], data: Any) -> T:
    """``decode(cls, data)``, by a decoder generated for ``cls`` when it is plain."""
    tp: Any = cls
    try:
        value: T = fast_decoder(tp)(data)
    except Mismatch:
        value = decode(cls, data)  # says what does not fit, with its path
    return value


_BUILDING: set[Any] = set()


@functools.cache
def fast_decoder(tp: Any) -> Decoder:
    """The fastest decoder of ``tp`` there is: generated for a plain dataclass, else ``compiled``.

    It raises ``Mismatch`` where ``decode`` would raise ``DecodeError``.
    """
    shorter = _container(tp)
    if shorter is not None:
        return shorter
    if not plain(tp) or tp in _BUILDING:  # a type that holds itself keeps the codec's decoder
        return compiled(tp)
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
        return _many(fast_decoder(args[0]))
    if origin is tuple and args and all(a in PASSING for a in args):
        return _fixed(args, _later(tp, compiled))
    if origin is dict and args == (str, Any):
        return _texts_to_any(_later(tp, compiled))
    if origin in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        other: Any = args[0] if args[1] is type(None) else args[1]
        if get_origin(other) is tuple or plain(other):
            return _optional(fast_decoder(other))  # the other member never takes a null
    return None


def _later(tp: Any, build: Callable[[Any], Decoder]) -> Decoder:
    """``build(tp)``, built at its first call: a decoder only values of an unusual type reach.

    Most stored values pass an exact-type check and never reach it; building it before it is
    needed cost a fresh process's first reads a few hundred µs.
    """

    def later(data: Any) -> Any:
        return build(tp)(data)

    return later


def _many(item: Decoder) -> Decoder:
    """A decoder of ``tuple[X, ...]`` from ``X``'s (as ``codec``'s: a list, each item an X)."""

    def many(data: Any) -> tuple[Any, ...]:
        if not isinstance(data, list):
            raise Mismatch
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


#: How a present field's value is checked: ``_ANY`` not at all, ``_LITERAL`` against the values a
#: literal allows, ``_CONVERT`` by its decoder, ``_ONE``/``_SOME`` as it is when exactly of the
#: one/some types its decoder gives back unchanged, else by its decoder.
_ANY, _LITERAL, _CONVERT, _ONE, _SOME = range(5)
#: What a field the payload leaves out gets: its default value, its default factory's, or none.
_VALUE, _FACTORY, _REQUIRED = range(3)

#: One field's decoding: name, check, what the check accepts, its decoder, absent, its default.
Field = tuple[str, int, Any, Any, int, Any]

#: The walking decoder: run with a type's own scope as its globals (``_generated``), so that
#: compiling its straight-line code later only swaps the function's code, and every decoder
#: that already holds this function (a containing type's, ``log.stored``'s table) gets it.
_WALK = """
def build(data):
    global uses
    if not isinstance(data, dict) or not known.issuperset(data):
        raise Mismatch
    values = {}
    for name, check, accepted, convert, absent, default in fields:
        if name in data:
            value = data[name]
            if check == 1:
                if value not in accepted:
                    raise Mismatch
            elif check == 2:
                value = convert(value)
            elif check == 3:
                if type(value) is not accepted:
                    value = convert(value)
            elif check == 4:
                if type(value) not in accepted:
                    value = convert(value)
        elif absent == 0:
            value = default
        elif absent == 1:
            value = default()
        else:
            raise Mismatch
        values[name] = value
    uses += 1
    if uses >= limit:
        straighten()
    if twin is None:
        instance = new(cls)
        put(instance, "__dict__", values)
        return instance
    instance = new(twin)
    for name, value in values.items():
        put(instance, name, value)
    instance.__class__ = cls
    return instance
"""


@functools.cache
def _walk_code() -> types.CodeType:
    """The walking decoder's code (compiled once per process; its checks are the codes above)."""
    assert (_ANY, _LITERAL, _CONVERT, _ONE, _SOME, _VALUE, _FACTORY) == (0, 1, 2, 3, 4, 0, 1)
    return generate("walking decoder", _WALK.strip().splitlines(), {}, __name__).__code__


def _generated(cls: type, limit: int | None = None) -> Decoder:
    """A decoder for ``cls``: it walks the fields' table, then compiles its straight-line code.

    ``limit``: the payloads it walks first (``COMPILE_AFTER`` when not given; 0 compiles now).
    """
    hints = _hints_of(cls)
    fields = [_field(f, hints[f.name]) for f in dataclasses.fields(cls)]
    scope: dict[str, Any] = {
        "__name__": __name__,  # the decoder's module, in tracebacks and profiles
        "cls": cls,
        "new": object.__new__,
        "put": object.__setattr__,
        "Mismatch": Mismatch,
        "known": frozenset(f[0] for f in fields),
        "fields": tuple(fields),
        "uses": 0,
        "twin": twin(cls),
        "limit": COMPILE_AFTER if limit is None else limit,
    }
    build = types.FunctionType(_walk_code(), scope, "build")

    def straighten() -> None:
        scope["limit"] = math.inf  # once: a call racing this one walks and compiles no more
        build.__code__ = _straight(cls, fields, scope)

    scope["straighten"] = straighten
    if scope["limit"] <= 0:
        straighten()
    decoder: Decoder = build
    return decoder


def _straight(cls: type, fields: list[Field], scope: dict[str, Any]) -> types.CodeType:
    """The code of a decoder of ``fields`` written out field by field, compiled."""
    lines = [
        "def build(data):",
        "    if not isinstance(data, dict):",
        "        raise Mismatch",
        "    found = 0",
    ]
    names = []
    for i, field in enumerate(fields):
        lines += _field_lines(i, field, scope)
        names.append(f"{field[0]!r}: v{i}")
    # Every key a field: as many fields found as the payload has keys (no set walk per row).
    lines += ["    if found != len(data):", "        raise Mismatch"]
    if scope["twin"] is None:  # what the generated __init__ stores, in field order
        lines.append("    instance = new(cls)")
        lines.append(f"    put(instance, '__dict__', {{{', '.join(names)}}})")
    else:  # each slot filled on the twin, which then becomes a cls (see ``twin``)
        lines.append("    instance = new(twin)")
        lines += [f"    instance.{field[0]} = v{i}" for i, field in enumerate(fields)]
        lines.append("    instance.__class__ = cls")
    lines.append("    return instance")
    return generate(f"decoder for {cls.__qualname__}", lines, scope, __name__).__code__


def _field(f: dataclasses.Field[Any], hint: Any) -> Field:
    """How field ``f`` of type ``hint`` is decoded (see ``Field``)."""
    check: int = _ANY
    accepted: Any = None
    convert: Decoder | None = None
    if get_origin(hint) is Literal:
        check, accepted = _LITERAL, get_args(hint)
    elif hint is not Any:
        passing = _passing(hint)
        check = _CONVERT if not passing else _ONE if len(passing) == 1 else _SOME
        # A value of a type that passes as it is (most values) never needs the decoder.
        convert = fast_decoder(hint) if check == _CONVERT else _later(hint, fast_decoder)
        accepted = next(iter(passing)) if check == _ONE else passing
    if f.default is not dataclasses.MISSING:
        return (f.name, check, accepted, convert, _VALUE, f.default)
    if f.default_factory is not dataclasses.MISSING:
        return (f.name, check, accepted, convert, _FACTORY, f.default_factory)
    return (f.name, check, accepted, convert, _REQUIRED, None)


def _field_lines(i: int, field: Field, scope: dict[str, Any]) -> list[str]:
    """Lines that leave field ``field``'s decoded value in ``v{i}`` (or raise ``Mismatch``).

    A lean row leaves most fields out: one membership test decides, and a present value is
    read once.
    """
    name, check, accepted, convert, absent, default = field
    v = f"v{i}"
    lines = [f"    if {name!r} in data:", f"        {v} = data[{name!r}]", "        found += 1"]
    if check == _LITERAL:
        scope[f"L{i}"] = accepted
        lines += [f"        if {v} not in L{i}:", "            raise Mismatch"]
    elif check != _ANY:
        scope[f"C{i}"], scope[f"T{i}"] = convert, accepted
        test = {_CONVERT: None, _ONE: "is not", _SOME: "not in"}[check]
        if test is None:
            lines.append(f"        {v} = C{i}({v})")
        else:
            lines += [f"        if type({v}) {test} T{i}:", f"            {v} = C{i}({v})"]
    scope[f"D{i}"] = default
    if absent == _VALUE:
        return [*lines, "    else:", f"        {v} = D{i}"]
    if absent == _FACTORY:
        return [*lines, "    else:", f"        {v} = D{i}()"]
    return [*lines, "    else:", "        raise Mismatch"]


def _passing(hint: Any) -> frozenset[type]:
    """The value types that ``hint``'s decoder gives back unchanged, whatever the value.

    A text, flag, float or null, exactly of its type, in a union naming that type: no other
    member takes it, or one that does gives it back as it is. An int only without a float
    beside it (the float member would make it a float).
    """
    if hint in PASSING:
        return frozenset({hint})
    args = get_args(hint)
    if get_origin(hint) not in (Union, types.UnionType):
        return frozenset()
    found = {a for a in args if a in SCALARS and a is not int}
    if int in args and float not in args:
        found.add(int)
    return frozenset(found)


def _hints_of(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, with one ``eval`` per class of its MRO where it can.

    ``get_type_hints`` compiles each text annotation on its own (about 15 µs each, a third of
    building the decoders a reopen needs). Evaluated the same way (each class's names first in
    its module, then in the class), a value that is a plain type or a generic of such, with no
    text, forward reference or ``Annotated`` inside, is what ``get_type_hints`` gives; anything
    else, or any error, is left to ``get_type_hints`` itself.
    """
    found: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        annotations = inspect.get_annotations(base)
        if not annotations:
            continue
        texts = list(annotations.values())
        if not all(isinstance(text, str) for text in texts):
            return hints(cls)
        module = getattr(sys.modules.get(base.__module__), "__dict__", {})
        try:
            expression = f"({', '.join(f'({t})' for t in texts)},)"
            what = f"annotations of {base.__qualname__}"
            values = evaluate(what, expression, dict(vars(base)), module)
        except Exception:
            return hints(cls)  # it says why, as it would have
        for name, value in zip(annotations, values, strict=True):
            if not _settled(value):
                return hints(cls)
            found[name] = type(None) if value is None else value
    if not all(f.name in found for f in dataclasses.fields(cls)):
        return hints(cls)  # annotations kept elsewhere than in the class's namespace
    return found


def _settled(value: Any) -> bool:
    """Whether ``get_type_hints`` would give ``value`` back as it is (``None`` aside)."""
    if value is None or (isinstance(value, type) and not isinstance(value, types.GenericAlias)):
        return True
    origin = get_origin(value)
    if origin is Literal:
        return all(isinstance(arg, str | int | bool | None) for arg in get_args(value))
    if origin is None or origin is Annotated or isinstance(value, str | ForwardRef):
        return value is Any
    return all(_settled(arg) for arg in get_args(value) if arg is not Ellipsis)
