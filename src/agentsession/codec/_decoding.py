"""``decode``: a stored value back as exactly the type it was, or ``DecodeError`` saying where not.

Decoding walks the declared types: anything that does not fit (a missing field, a wrong type,
an unknown ``kind``) raises ``DecodeError`` with the path of the offending value. Unions of
dataclasses are told apart by their ``kind`` or ``role`` literal. A decoder built once per type
(``compiled``: closures, the same rules without paths) does the work; where it raises
``Mismatch`` the walking decoder decodes again and names the path.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from ._shape import PASSING, hints, plain_init, tag_of

__all__ = ["DecodeError", "Decoder", "Mismatch", "compiled", "decode"]

T = TypeVar("T")


class DecodeError(ValueError):
    """A stored value does not match the type it should decode to."""


def decode(tp: Any, data: Any, path: str = "$") -> Any:
    """Decode ``data`` (parsed JSON) as type ``tp``; raise ``DecodeError`` when it does not fit.

    A decoder compiled once per type does the work (the type hints are walked once, not for
    every value); when it finds something that does not fit, the value is decoded again by the
    walking decoder, which names the path of the offending value.
    """
    try:
        return (_READY.get(tp) or compiled(tp))(data)
    except Mismatch:
        return _decode(tp, data, path)


def _decode(tp: Any, data: Any, path: str = "$") -> Any:
    if tp is Any:
        return data
    if tp is type(None):
        if data is not None:
            raise DecodeError(f"{path}: expected null")
        return None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return _decode_union(get_args(tp), data, path)
    if origin is Literal:
        if data not in get_args(tp):
            raise DecodeError(f"{path}: expected one of {get_args(tp)!r}, got {data!r}")
        return data
    if origin is tuple:
        return _decode_tuple(get_args(tp), data, path)
    if origin is dict:
        return _decode_dict(get_args(tp), data, path)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, data, path)
    return _decode_scalar(tp, data, path)


def _decode_tuple(args: tuple[Any, ...], data: Any, path: str) -> tuple[Any, ...]:
    if not isinstance(data, list):
        raise DecodeError(f"{path}: expected a list")
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_decode(args[0], v, f"{path}[{i}]") for i, v in enumerate(data))
    if len(args) != len(data):
        raise DecodeError(f"{path}: expected {len(args)} items, got {len(data)}")
    return tuple(
        _decode(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, data, strict=True))
    )


def _decode_dict(args: tuple[Any, ...], data: Any, path: str) -> dict[Any, Any]:
    key_tp, val_tp = args
    if not isinstance(data, dict):
        raise DecodeError(f"{path}: expected an object")
    return {_decode(key_tp, k, path): _decode(val_tp, v, f"{path}.{k}") for k, v in data.items()}


def _decode_scalar(tp: Any, data: Any, path: str) -> Any:
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise DecodeError(f"{path}: expected a number")
        return float(data)
    if tp in (str, int, bool):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise DecodeError(f"{path}: expected {tp.__name__}, got {type(data).__name__}")
        return data
    raise DecodeError(f"{path}: cannot decode type {tp!r}")


def _decode_union(options: tuple[Any, ...], data: Any, path: str) -> Any:
    if isinstance(data, dict):
        for option in options:
            if isinstance(option, type) and dataclasses.is_dataclass(option):
                tag = tag_of(option)
                if tag is not None and data.get(tag[0]) == tag[1]:
                    return _decode_dataclass(option, data, path)
    errors: list[str] = []
    for option in options:
        try:
            return _decode(option, data, path)
        except DecodeError as exc:
            errors.append(str(exc))
    raise DecodeError(f"{path}: matches none of the allowed types ({'; '.join(errors)})")


def _decode_dataclass(cls: type[T], data: Any, path: str) -> T:
    if not isinstance(data, dict):
        raise DecodeError(f"{path}: expected an object for {cls.__name__}")
    declared = hints(cls)  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    known = set()
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        known.add(f.name)
        if f.name in data:
            kwargs[f.name] = _decode(declared[f.name], data[f.name], f"{path}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise DecodeError(f"{path}: {cls.__name__} is missing field {f.name!r}")
    unknown = set(data) - known
    if unknown:
        raise DecodeError(f"{path}: {cls.__name__} has unknown fields {sorted(unknown)}")
    return cls(**kwargs)


# -- compiled decoders: the same rules, without paths -------------------------------------------


class Mismatch(Exception):
    """The value does not fit (the walking decoder then says where and why)."""


Decoder = Callable[[Any], Any]


_BUILDING: set[Any] = set()
_READY: dict[Any, Decoder] = {}  # what _compiled built, for decode to find in one lookup
#: Field types checked inline by exact type (a subclass goes through the field's decoder).
_EXACT: dict[Any, type] = {t: t for t in PASSING}


def compiled(tp: Any) -> Decoder:
    """A decoder for ``tp`` that accepts exactly what ``_decode`` accepts (built once per type).

    A type that refers to itself (a recursive alias) gets a decoder that looks itself up when
    it runs, so building never loops.
    """
    if tp in _BUILDING:
        return lambda data: compiled(tp)(data)
    _BUILDING.add(tp)
    try:
        return _READY.setdefault(tp, _build(tp))
    finally:
        _BUILDING.discard(tp)


@functools.cache
def _build(tp: Any) -> Decoder:
    if tp is Any:
        return _identity
    if tp is type(None):
        return _none
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return _union(get_args(tp))
    if origin is Literal:
        return _literal(get_args(tp))
    if origin is tuple:
        return _tuple(get_args(tp))
    if origin is dict:
        return _dict(get_args(tp))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp)
    if tp is float:
        return _float
    if tp in (str, int, bool):
        return _scalar(tp)
    return _never


def _identity(data: Any) -> Any:
    return data


def _none(data: Any) -> None:
    if data is not None:
        raise Mismatch
    return None


def _never(data: Any) -> Any:
    raise Mismatch


def _float(data: Any) -> float:
    if isinstance(data, bool) or not isinstance(data, int | float):
        raise Mismatch
    return float(data)


def _scalar(tp: type) -> Decoder:
    exact_int = tp is int

    def check(data: Any) -> Any:
        if not isinstance(data, tp) or (exact_int and isinstance(data, bool)):
            raise Mismatch
        return data

    return check


def _literal(allowed: tuple[Any, ...]) -> Decoder:
    def check(data: Any) -> Any:
        if data not in allowed:
            raise Mismatch
        return data

    return check


def _tuple(args: tuple[Any, ...]) -> Decoder:
    if len(args) == 2 and args[1] is Ellipsis:
        item = compiled(args[0])

        def many(data: Any) -> tuple[Any, ...]:
            if not isinstance(data, list):
                raise Mismatch
            return tuple(map(item, data))

        return many
    items = [compiled(a) for a in args]

    def fixed(data: Any) -> tuple[Any, ...]:
        if not isinstance(data, list) or len(data) != len(items):
            raise Mismatch
        return tuple(d(v) for d, v in zip(items, data, strict=True))

    return fixed


def _dict(args: tuple[Any, ...]) -> Decoder:
    key, value = (compiled(a) for a in args)

    def check(data: Any) -> dict[Any, Any]:
        if not isinstance(data, dict):
            raise Mismatch
        return {key(k): value(v) for k, v in data.items()}

    return check


def _dataclass(cls: type) -> Decoder:
    declared = hints(cls)
    if plain_init(cls):
        return _filled(cls, declared)
    fields = [
        (
            f.name,
            compiled(declared[f.name]),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
    ]
    known = frozenset(name for name, _, _ in fields)

    def build(data: Any) -> Any:
        if not isinstance(data, dict) or not known.issuperset(data):
            raise Mismatch
        kwargs: dict[str, Any] = {}
        for name, decoder, required in fields:
            if name in data:
                kwargs[name] = decoder(data[name])
            elif required:
                raise Mismatch
        return cls(**kwargs)

    return build


def _filled(cls: type, declared: dict[str, Any]) -> Decoder:
    """A decoder for a ``plain_init`` dataclass that fills a new instance's fields directly.

    What ``cls(**kwargs)`` would do, without the frozen class's ``object.__setattr__`` per
    field: the same values (defaults and fresh ``default_factory`` values included), in field
    order.
    """
    missing = dataclasses.MISSING
    fields = [
        (f.name, _EXACT.get(h := declared[f.name]), compiled(h), f.default, f.default_factory)
        for f in dataclasses.fields(cls)
    ]
    known = frozenset(name for name, _, _, _, _ in fields)
    new = object.__new__

    def build(data: Any) -> Any:
        if not isinstance(data, dict) or not known.issuperset(data):
            raise Mismatch
        values: dict[str, Any] = {}
        for name, exact, decoder, default, factory in fields:
            if name in data:
                value = data[name]  # a str, int or bool of exactly its type needs no call
                values[name] = value if type(value) is exact else decoder(value)
            elif default is not missing:
                values[name] = default
            elif factory is not missing:
                values[name] = factory()
            else:
                raise Mismatch
        instance: Any = new(cls)
        instance.__dict__.update(values)
        return instance

    return build


def _union(options: tuple[Any, ...]) -> Decoder:
    tagged: dict[str, dict[Any, Decoder]] = {}
    for option in options:
        if isinstance(option, type) and dataclasses.is_dataclass(option):
            tag = tag_of(option)
            if tag is not None:
                tagged.setdefault(tag[0], {}).setdefault(tag[1], compiled(option))
    each = [compiled(o) for o in options]

    def pick(data: Any) -> Any:
        if isinstance(data, dict):
            for name, decoders in tagged.items():
                tag = data.get(name)
                # A damaged value may hold a list or an object where the tag goes: not a key.
                decoder = decoders.get(tag) if isinstance(tag, str) else None
                if decoder is not None:
                    return decoder(data)
        for decoder in each:
            try:
                return decoder(data)
            except Mismatch:
                continue
        raise Mismatch

    return pick
