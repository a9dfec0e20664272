"""``@frozen``: ``@dataclass(frozen=True)`` with one compiled method a class instead of six.

On Python 3.11 and 3.12 ``dataclasses`` writes the source of six methods of a frozen class —
``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__`` — and
compiles each on its own at import (about 0.6M instructions each; no bytecode cache keeps
them). The package defines nearly 200 such classes, and every command imports most of them.

``frozen`` makes the same class with the same methods: ``__init__`` written and compiled as
``dataclasses`` writes it (the same parameters, defaults, annotations and body, through the
codec's named-source helper), the other five as closures over the field names that compute
what the generated ones compute (the same tuples compared and hashed, the same text, the same
errors). ``__dataclass_params__`` says what it says for ``dataclass(frozen=True)``, so
``dataclasses.fields``, ``replace``, ``asdict`` and a frozen subclass see no difference. A
class outside the common shape — keyword-only or ``init=False`` fields, ``InitVar`` or
``ClassVar`` annotations, a dataclass base, any of the six methods written in its body, no
docstring — goes to ``dataclasses`` as it is.
"""

from __future__ import annotations

import _thread
import dataclasses
import operator
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast, dataclass_transform, overload

from .codec._generate import define

__all__ = ["frozen"]

T = TypeVar("T")

#: What ``dataclass(frozen=True)`` writes; a class with one of its own goes to ``dataclasses``.
_WRITTEN = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")


class _Factory:
    """The default of a parameter whose field has a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


#: The marker ``dataclasses`` gives such a parameter (the same object, so signatures compare
#: equal), or one shown alike where it has none of that name.
_FACTORY: Any = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None) or _Factory()


@overload
def frozen(cls: type[T], /) -> type[T]: ...
@overload
def frozen(*, slots: bool = False) -> Callable[[type[T]], type[T]]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[T] | None = None, /, *, slots: bool = False) -> Any:
    """``dataclasses.dataclass(cls, frozen=True, slots=slots)``, compiling one method, not six."""

    def wrap(cls: type[T]) -> type[T]:
        if not _common(cls):
            return dataclasses.dataclass(cls, frozen=True, slots=slots)
        return _make(cls, slots)

    return wrap if cls is None else wrap(cls)


def _common(cls: type) -> bool:
    """Whether ``cls`` has the shape ``_make`` builds exactly as ``dataclasses`` would."""
    body = cls.__dict__
    if not body.get("__doc__") or any(name in body for name in _WRITTEN):
        return False
    if any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:]):
        return False
    for name, hint in body.get("__annotations__", {}).items():
        if not isinstance(hint, str) or "InitVar" in hint or "ClassVar" in hint:
            return False
        if "KW_ONLY" in hint:
            return False
        value = body.get(name)
        if isinstance(value, dataclasses.Field) and (not value.init or value.kw_only is True):
            return False
    return True


def _make(cls: type[T], slots: bool) -> type[T]:
    made: Any = dataclasses.dataclass(cls, init=False, repr=False, eq=False, slots=slots)
    params = made.__dataclass_params__
    params.init = params.repr = params.eq = params.frozen = True  # as ``frozen=True`` records
    fields = dataclasses.fields(made)
    names = tuple(f.name for f in fields)
    # ``dataclasses`` writes these for the class it was given, before ``slots`` makes a new one.
    _check_order(fields)
    methods: dict[str, Any] = {
        "__repr__": _repr(tuple(f.name for f in fields if f.repr)),
        "__eq__": _eq(tuple(f.name for f in fields if f.compare)),
        "__hash__": _hash(
            tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        ),
        "__setattr__": _setattr(cls, names),
        "__delattr__": _delattr(cls, names),
    }
    if slots:
        methods["__getstate__"] = _getstate
        methods["__setstate__"] = _setstate
    for name, method in methods.items():
        if name not in made.__dict__:
            method.__qualname__ = f"{made.__qualname__}.{method.__name__}"
            method.__module__ = made.__module__
            setattr(made, name, method)
    made.__init__ = _Init(made, fields)
    return cast("type[T]", made)


def _check_order(fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """Refuse a field without a default after one with, as ``dataclasses`` does at once."""
    seen_default = False
    for f in fields:
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


class _Init:
    """A class's ``__init__`` until it is first looked up, then the compiled one in its place.

    Most classes an import makes are never built by calling them (the decoders and the codec's
    builders set a value's fields at once), so their ``__init__`` is compiled only when the
    class is first called or its ``__init__`` read (``inspect.signature`` too): the lookup finds
    this descriptor, which puts the compiled function on the class and answers with it.
    """

    __slots__ = ("fields", "owner")

    def __init__(self, owner: type, fields: tuple[dataclasses.Field[Any], ...]) -> None:
        self.owner, self.fields = owner, fields

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        init = self.owner.__dict__["__init__"]
        if init is self:  # not compiled yet (another thread may have just done it)
            init = _init(self.owner, self.fields)
            init.__qualname__ = f"{self.owner.__qualname__}.__init__"
            type.__setattr__(self.owner, "__init__", init)
        return init.__get__(instance, owner)


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """``__init__`` as ``dataclasses`` writes it for a frozen class (Python 3.11's text)."""
    self_name = "__dataclass_self__" if "self" in {f.name for f in fields} else "self"
    names: dict[str, Any] = {f"_type_{f.name}": f.type for f in fields}
    names.update(
        MISSING=dataclasses.MISSING,
        _HAS_DEFAULT_FACTORY=_FACTORY,
        __dataclass_builtins_object__=object,
    )
    params, body = [], []
    for f in fields:
        value, default = f.name, ""
        if f.default_factory is not dataclasses.MISSING:
            names[f"_dflt_{f.name}"] = f.default_factory
            value = f"_dflt_{f.name}() if {f.name} is _HAS_DEFAULT_FACTORY else {f.name}"
            default = "=_HAS_DEFAULT_FACTORY"
        elif f.default is not dataclasses.MISSING:
            names[f"_dflt_{f.name}"] = f.default
            default = f"=_dflt_{f.name}"
        params.append(f"{f.name}:_type_{f.name}{default}")
        body.append(f" __dataclass_builtins_object__.__setattr__({self_name},{f.name!r},{value})")
    if hasattr(cls, "__post_init__"):
        body.append(f" {self_name}.__post_init__()")
    names["_return_type"] = None
    lines = [f"def __init__({','.join([self_name, *params])})->_return_type:", *(body or [" pass"])]
    module = sys.modules.get(cls.__module__)
    scope = module.__dict__ if module is not None else {}
    return define(f"__init__ of {cls.__qualname__}", lines, scope, names)


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple ``(self.a, self.b, ...)`` the generated methods build, as one C call."""
    if not names:
        return lambda _: ()
    if len(names) == 1:
        get = operator.attrgetter(names[0])
        return lambda value: (get(value),)
    return operator.attrgetter(*names)


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    running: set[tuple[int, int]] = set()  # as ``reprlib.recursive_repr``: "..." for a cycle

    def __repr__(self: Any) -> str:
        key = id(self), _thread.get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            shown = ", ".join([f"{name}={getattr(self, name)!r}" for name in names])
            return f"{self.__class__.__qualname__}({shown})"
        finally:
            running.discard(key)

    return __repr__


def _eq(names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    values = _values(names)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(names: tuple[str, ...]) -> Callable[[Any], int]:
    values = _values(names)

    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _setattr(cls: Any, names: tuple[str, ...]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _delattr(cls: Any, names: tuple[str, ...]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __delattr__


def _getstate(self: Any) -> list[Any]:
    """As ``dataclasses`` pickles a frozen class with slots: its field values in order."""
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for field, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, field.name, value)
