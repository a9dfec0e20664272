"""Building many values of one frozen dataclass: ``builder``.

A frozen dataclass's generated ``__init__`` stores each field with ``object.__setattr__`` (its
own ``__setattr__`` refuses), about ten times what a plain assignment costs; an inspection of
a long session builds a few hundred thousand such fields (timeline items, charges, request
rows, spans). ``builder(cls)`` is a function called exactly as ``cls`` is that gives the same
value — its fields, defaults and fresh ``default_factory`` values in field order — with the
instance's ``__dict__`` set at once, as the generated decoders build theirs. A class whose
``__init__`` does more than store its fields (``__post_init__``, slots, keyword-only or
``init=False`` fields) gets ``cls`` itself back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from ._generate import generate
from ._shape import plain_init

__all__ = ["builder"]

T = TypeVar("T")


class _Absent:
    """The default of a field whose default is made per value (``default_factory``)."""

    def __repr__(self) -> str:
        return "<made per value>"


_ABSENT = _Absent()


def builder(cls: type[T]) -> Callable[..., T]:
    """``cls`` for a frozen dataclass whose ``__init__`` only stores fields, built faster.

    Called with the same arguments (positional or by name, defaults alike), it returns a value
    equal to ``cls(...)`` with the same ``__dict__``; any other class gets ``cls`` back. Made
    once per class.
    """
    made: Callable[..., T] | None = _BUILDERS.get(cls)
    if made is None:
        made = _BUILDERS[cls] = _builder(cls)
    return made


_BUILDERS: dict[Any, Any] = {}  # by class: a builder is made once


def _builder(cls: type[Any]) -> Callable[..., Any]:
    if not (dataclasses.is_dataclass(cls) and plain_init(cls)):
        return cls
    fields = dataclasses.fields(cls)
    if any(f.kw_only for f in fields):
        return cls
    if any(f.name.startswith("__build_") for f in fields):
        return cls  # its own names: no field may shadow them
    scope: dict[str, Any] = {
        "__build_cls": cls,
        "__build_new": object.__new__,
        "__build_put": object.__setattr__,
        "__build_absent": _ABSENT,
    }
    defaults: list[Any] = []
    lines = [f"def build({', '.join(f.name for f in fields)}):"]
    for i, f in enumerate(fields):
        if f.default is not dataclasses.MISSING:
            defaults.append(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            defaults.append(_ABSENT)
            scope[f"__build_make{i}"] = f.default_factory
            lines.append(f"    if {f.name} is __build_absent:")
            lines.append(f"        {f.name} = __build_make{i}()")
        elif defaults:  # dataclasses refuses a field without a default after one with
            return cls
    values = ", ".join(f"{f.name!r}: {f.name}" for f in fields)
    lines.append("    __build_instance = __build_new(__build_cls)")
    lines.append(f"    __build_put(__build_instance, '__dict__', {{{values}}})")
    lines.append("    return __build_instance")
    build = generate(f"builder for {cls.__qualname__}", lines, scope, __name__)
    build.__defaults__ = tuple(defaults) or None
    return build
