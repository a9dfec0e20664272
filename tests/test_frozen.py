"""``@frozen`` makes the class ``@dataclass(frozen=True)`` makes, with less compiled at import.

Each class is made twice from one description, by ``dataclasses`` and by ``frozen``, and the two
must agree on everything a caller can see: the signature, the text, equality and hashes, the
errors of assignment and deletion, copies, ``fields``, ``replace`` and the recorded parameters.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession._frozen import frozen
from agentsession.codec import builder
from agentsession.codec._shape import plain_init

SRC = Path(__file__).resolve().parents[1] / "src" / "agentsession"

_NAMES = ("alpha", "beta", "gamma", "delta", "self", "value")


@st.composite
def shapes(draw: st.DrawFn) -> dict[str, Any]:
    """A class description: fields (name, default kind, repr, compare, hash), slots, post-init."""
    names = draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=4))
    kinds = sorted(
        draw(
            st.lists(
                st.sampled_from(["none", "default", "factory"]),
                min_size=len(names),
                max_size=len(names),
            )
        ),
        key=lambda k: k != "none",
    )
    fields = [
        {
            "name": name,
            "kind": kind,
            "repr": draw(st.booleans()),
            "compare": draw(st.booleans()),
            "hash": draw(st.sampled_from([None, True, False])),
        }
        for name, kind in zip(names, kinds, strict=True)
    ]
    return {"fields": fields, "slots": draw(st.booleans()), "post_init": draw(st.booleans())}


def _make(shape: dict[str, Any], decorate: Any) -> type:
    body: dict[str, Any] = {"__doc__": "A value.", "__module__": __name__, "__qualname__": "Value"}
    body["__annotations__"] = {f["name"]: "Any" for f in shape["fields"]}
    for f in shape["fields"]:
        options = {"repr": f["repr"], "compare": f["compare"], "hash": f["hash"]}
        if f["kind"] == "default":
            body[f["name"]] = dataclasses.field(default=0.5, **options)
        elif f["kind"] == "factory":
            body[f["name"]] = dataclasses.field(default_factory=tuple, **options)
        else:
            body[f["name"]] = dataclasses.field(**options)
    if shape["post_init"]:

        def __post_init__(self: Any) -> None:
            calls.append(type(self))

        body["__post_init__"] = __post_init__
    made: type = decorate(type("Value", (), body))
    return made


calls: list[type] = []


def _outcome(action: Any) -> tuple[str, str]:
    """What ``action()`` gives: its result's repr, or its error's type and message."""
    try:
        return "ok", repr(action())
    except Exception as exc:  # the two classes must fail alike
        return type(exc).__name__, str(exc)


values = st.one_of(st.integers(-3, 3), st.just(math.nan), st.text(max_size=3), st.none())


@settings(max_examples=150, deadline=None)
@given(shape=shapes(), data=st.data())
def test_frozen_makes_what_dataclass_makes(shape: dict[str, Any], data: st.DataObject) -> None:
    slots = shape["slots"]
    ours = _make(shape, frozen(slots=slots))
    theirs = _make(shape, dataclasses.dataclass(frozen=True, slots=slots))
    looked_first = data.draw(st.booleans())  # ``__init__`` is compiled at the first of either
    if looked_first:
        assert inspect.signature(ours) == inspect.signature(theirs)
    assert ours.__doc__ == theirs.__doc__
    assert repr(ours.__dataclass_params__) == repr(theirs.__dataclass_params__)  # type: ignore[attr-defined]
    assert ours.__match_args__ == theirs.__match_args__  # type: ignore[attr-defined]
    assert set(vars(ours)) - {"__slotnames__"} == set(vars(theirs)) - {"__slotnames__"}
    assert [f.name for f in dataclasses.fields(ours)] == [
        f.name for f in dataclasses.fields(theirs)
    ]
    names = [f["name"] for f in shape["fields"]]
    first = data.draw(st.lists(values, min_size=len(names), max_size=len(names)))
    second = data.draw(st.lists(values, min_size=len(names), max_size=len(names)))
    calls.clear()
    a, b = ours(*first), ours(*second)
    c, d = theirs(*first), theirs(*second)
    assert calls == [ours, ours, theirs, theirs] if shape["post_init"] else not calls
    assert inspect.signature(ours) == inspect.signature(theirs)
    assert repr(a) == repr(c) and repr(b) == repr(d)
    assert (a == b, a != b, a == a, a == first) == (c == d, c != d, c == c, c == first)
    assert _outcome(lambda: hash(a)) == _outcome(lambda: hash(c))
    for name in [*names, "other"]:
        assert _outcome(lambda n=name: setattr(a, n, 1)) == _outcome(
            lambda n=name: setattr(c, n, 1)
        )
        assert _outcome(lambda n=name: delattr(a, n)) == _outcome(lambda n=name: delattr(c, n))
    assert repr(copy.deepcopy(a)) == repr(copy.deepcopy(c))
    assert _outcome(lambda: a.__getstate__()) == _outcome(lambda: c.__getstate__())
    if names:
        changed = {names[0]: 7}
        assert repr(dataclasses.replace(a, **changed)) == repr(dataclasses.replace(c, **changed))


def test_a_recursive_value_shows_dots_as_dataclasses_does() -> None:
    @frozen
    class Box:
        """Holds anything."""

        inside: list[Any]

    box = Box([])
    box.inside.append(box)
    assert repr(box) == f"{Box.__qualname__}(inside=[...])"


def test_an_init_is_compiled_when_the_class_is_first_called() -> None:
    """Most classes an import makes are never called; their ``__init__`` is never compiled."""

    @frozen
    class Pair:
        """Two numbers."""

        a: int
        b: int = 2

    assert not inspect.isfunction(vars(Pair)["__init__"])
    assert Pair(1) == Pair(1, 2)
    assert inspect.isfunction(vars(Pair)["__init__"])
    assert Pair.__init__.__qualname__.endswith("Pair.__init__")


def test_a_default_after_none_is_refused_alike() -> None:
    for decorate in (frozen, dataclasses.dataclass(frozen=True)):
        with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

            @decorate
            class Bad:
                """Out of order."""

                a: int = 1
                b: int


def test_a_class_outside_the_common_shape_goes_to_dataclasses() -> None:
    @frozen
    class Later:
        """A field left out of ``__init__``."""

        a: int
        b: int = dataclasses.field(default=2, init=False)

    assert inspect.signature(Later).parameters.keys() == {"a"}
    assert Later(1).b == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        Later(1).a = 3  # type: ignore[misc]


def test_the_codec_builds_frozen_values_without_their_init() -> None:
    @frozen
    class Row:
        """A plain value."""

        a: int
        b: str = ""

    assert plain_init(Row)
    assert builder(Row) is not Row  # sets each value's fields at once
    assert builder(Row)(1, b="x") == Row(1, "x")


def test_the_package_makes_its_frozen_classes_with_frozen() -> None:
    """``@dataclass(frozen=True)`` compiles six methods a class at import; ``@frozen`` one."""
    left = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for decorator in node.decorator_list:
                    text = ast.unparse(decorator)
                    if (
                        text.startswith("dataclass(")
                        and "frozen=True" in text
                        and "kw_only" not in text
                    ):
                        left.append(f"{path.relative_to(SRC)}:{node.name}")
    assert not left
