"""A class's encoder written out as code gives what the field-by-field walk gives, for any value."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession import codec
from agentsession.codec import _encoding as _encoders

from .test_budget import requests
from .test_stored_form import plain_encode, stored_entries


class Colour(enum.StrEnum):
    RED = "red"


class Name(str):
    """A ``str`` subclass: not a scalar by exact type, so it goes through ``encode``."""


@dataclass(frozen=True)
class Leaf:
    value: Any = None
    kind: str = "leaf"


@dataclass(frozen=True)
class Tree:
    """Fields of every shape ``encode`` tells apart, and one that is a nested value."""

    first: Any = None
    second: Any = None
    leaf: Any = None
    items: Any = ()
    table: Any = field(default_factory=dict)
    kind: str = "tree"


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.just(Colour.RED),
    st.text(max_size=3).map(Name),
    st.just(-0.0),
    st.sampled_from(["\ud800", 'é\n"\\', "\x00\u2028"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.builds(Leaf, inner),
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=2) | st.integers(-3, 3), inner, max_size=3),
    ),
    max_leaves=12,
)
trees = st.builds(Tree, values, values, st.builds(Leaf, values) | st.none(), values, values)


def shown(value: Any) -> str:
    """The encoded form with every type, key order and value visible (``True`` is not ``1``)."""
    return repr(value)


@settings(max_examples=300, deadline=None)
@given(trees)
def test_the_compiled_encoder_is_the_walk(tree: Tree) -> None:
    compiled = _encoders.compile_encoder(
        Tree, ("first", "second", "leaf", "items", "table", "kind")
    )
    assert shown(compiled(tree)) == shown(plain_encode(tree))
    assert shown(codec.encode(tree)) == shown(plain_encode(tree))  # compiled by now


@settings(max_examples=200, deadline=None)
@given(stored_entries | requests)
def test_the_package_values_encode_as_the_walk_does(value: Any) -> None:
    for _ in range(codec.COMPILE_AFTER + 2):  # walked first, then through the compiled code
        assert shown(codec.encode(value)) == shown(plain_encode(value))
    assert type(value) in _encoders.ENCODERS
    text = json.dumps(plain_encode(value), sort_keys=True, ensure_ascii=False)
    assert _encoders.plain_json(value) == text


def test_a_field_that_is_not_an_identifier_is_read_by_name() -> None:
    odd = type("Odd", (), {"class": 1, "a-b": (Leaf(2),), "ok": Name("n")})()
    encoder = _encoders.compile_encoder(type(odd), ("class", "a-b", "ok"))
    assert shown(encoder(odd)) == shown(
        {"class": 1, "a-b": [{"value": 2, "kind": "leaf"}], "ok": Name("n")}
    )


def test_a_class_is_walked_until_it_is_met_often() -> None:
    @dataclass(frozen=True)
    class Fresh:
        text: str = "t"

    for _ in range(codec.COMPILE_AFTER):
        assert codec.encode(Fresh()) == {"text": "t"}
    assert Fresh not in _encoders.ENCODERS
    assert codec.encode(Fresh("u")) == {"text": "u"}
    assert Fresh in _encoders.ENCODERS


def sorted_json(value: Any) -> str:
    """The canonical text as it was first written: ``json.dumps`` of the walk's form."""
    return json.dumps(plain_encode(value), sort_keys=True, ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(trees | values)
def test_the_canonical_text_written_from_the_fields_is_the_dumps_of_the_walk(value: Any) -> None:
    for _ in range(3):  # Tree and Leaf are compiled by the first examples, walked before
        assert _encoders.plain_json(value) == sorted_json(value)
    assert _encoders.compile_text(Tree, tuple(f.name for f in dataclass_fields(Tree)))(
        Tree(value, Name("x"), Leaf(value))
    ) == sorted_json(Tree(value, Name("x"), Leaf(value)))


@settings(max_examples=200, deadline=None)
@given(st.lists(stored_entries | requests, min_size=1, max_size=4))
def test_the_canonical_text_of_package_values_is_the_dumps_of_the_walk(items: list[Any]) -> None:
    for value in items * (codec.COMPILE_AFTER + 2):  # walked first, then written compiled
        assert _encoders.plain_json(value) == sorted_json(value)
    assert _encoders.plain_json(tuple(items)) == sorted_json(tuple(items))


def test_a_class_with_no_fields_or_odd_names_writes_its_text_as_json_does() -> None:
    @dataclass(frozen=True)
    class Empty:
        pass

    assert _encoders.compile_text(Empty, ())(Empty()) == "{}"
    odd = type("Odd", (), {"class": 1.5, 'a"b': (Leaf(True),), "é": None, "z": -3})()
    names = ("z", "class", 'a"b', "é")
    text = _encoders.compile_text(type(odd), names)(odd)
    expected = {"z": -3, "class": 1.5, 'a"b': [{"value": True, "kind": "leaf"}], "é": None}
    assert text == json.dumps(expected, sort_keys=True, ensure_ascii=False)
