"""What the codec needs to know about a class, found once per class.

Its field names in order, its type hints, the literal that tells it apart in a union (``kind``
or ``role``), whether its instances can be built without calling its ``__init__`` (``plain``)
and, for a slotted frozen class, the plain twin its instances are built as (``twin``). The one
set of scalar types lives here too: ``SCALARS``, what ``encode`` gives back as it is, and
``PASSING``, what a decoder gives back unchanged when a value is exactly of the field's type.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any, Literal, get_args, get_origin

__all__ = [
    "PASSING",
    "SCALARS",
    "field_names",
    "hints",
    "names_of",
    "plain",
    "plain_init",
    "tag_of",
    "twin",
]

#: The types ``encode`` returns as they are (by exact type).
SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
#: The scalar types a value of exactly that type decodes to unchanged (``None`` has its own rule).
PASSING: tuple[type, ...] = tuple(sorted(SCALARS - {type(None)}, key=lambda t: t.__name__))

_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of dataclass ``cls`` in order (``None``: not a dataclass), kept per class.

    ``dataclasses.fields`` builds them afresh at each call; encoding asks for every value.
    """
    try:
        return _FIELD_NAMES[cls]
    except KeyError:
        pass
    names = None
    if dataclasses.is_dataclass(cls) and not issubclass(cls, type):
        names = tuple(f.name for f in dataclasses.fields(cls))
    _FIELD_NAMES[cls] = names
    return names


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, kept per class."""
    return typing.get_type_hints(cls)


def tag_of(cls: type) -> tuple[str, str] | None:
    """The field and value of the literal that tells ``cls`` apart in a union, if it has one."""
    for name in ("kind", "role"):
        hint = hints(cls).get(name)
        if hint is not None and get_origin(hint) is Literal:
            return name, str(get_args(hint)[0])
    return None


def names_of(cls: type) -> tuple[str, ...]:
    """The field names of dataclass ``cls`` (which must be one)."""
    return tuple(f.name for f in dataclasses.fields(cls))


def plain_init(cls: type, slots: bool = False) -> bool:
    """Whether ``cls(**kwargs)`` only stores each field's value (or default) on the instance.

    True for a dataclass whose ``__init__`` is the generated one, with every field in it, no
    ``__post_init__``, no slots (unless ``slots``) and the plain ``object.__new__``.
    """
    # Its own ``__init__``, looked up through the class: ``_frozen`` compiles one at first look.
    init = cls.__init__ if "__init__" in cls.__dict__ else None  # type: ignore[misc]
    code = getattr(init, "__code__", None)
    return (
        cls.__dataclass_params__.init  # type: ignore[attr-defined]
        and code is not None
        and _written(code.co_filename)  # not written in a class body
        and not hasattr(cls, "__post_init__")
        and (slots or not hasattr(cls, "__slots__"))
        and cls.__new__ is object.__new__  # type: ignore[comparison-overlap]
        and all(f.init for f in dataclasses.fields(cls))
    )


def _written(filename: str) -> bool:
    """Whether code of this file name was written by ``dataclasses`` or by ``_frozen``."""
    return filename == "<string>" or filename.startswith("<agentsession generated __init__ of ")


def plain(tp: Any) -> bool:
    """Whether ``tp`` is a dataclass the generated decoders build without calling its ``__init__``.

    ``plain_init``'s dataclasses, and the same with ``slots=True``: slots that hold exactly its
    fields, on no base but ``object``.
    """
    if not (isinstance(tp, type) and dataclasses.is_dataclass(tp) and plain_init(tp, True)):
        return False
    slots = tp.__dict__.get("__slots__")
    if slots is None:
        return not hasattr(tp, "__slots__")
    return tp.__bases__ == (object,) and tuple(slots) == names_of(tp)


@functools.cache
def twin(cls: type) -> type | None:
    """A plain class with ``cls``'s slots, for a slotted ``cls``; ``None`` without slots.

    A frozen class refuses attribute assignment (its ``__setattr__`` raises, and the generated
    ``__init__`` calls ``object.__setattr__`` once per field). An instance of its twin takes
    its fields by plain assignment, and then becomes a ``cls`` by ``__class__`` assignment,
    which Python allows only between classes whose instances are laid out alike (it checks).
    """
    if "__slots__" not in cls.__dict__:
        return None
    return type(f"{cls.__name__}Twin", (), {"__slots__": names_of(cls), "__module__": __name__})
