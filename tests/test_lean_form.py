"""The lean stored form compiled per class gives the payload the field-table walk gives."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.codec import COMPILE_AFTER, _lean
from agentsession.codec._lean import compiled, compiled_text, lean, lean_text
from agentsession.log import UserEntry, dump_entry

from .test_stored_form import plain_lean, stored_entries


@dataclass(frozen=True)
class Defaults:
    """A field at each default ``_differs`` writes its own test for, and one it does not."""

    text: Any = ""
    number: Any = 0
    real: Any = 0.0
    no: Any = False
    yes: Any = True
    nothing: Any = None
    items: Any = ()
    table: Any = field(default_factory=dict)
    other: Any = "x"
    required: Any = field(default=None, kw_only=True)
    kind: str = "defaults"


odd = st.one_of(
    st.sampled_from(["", "x", 0, 1, -0.0, 0.0, 1.5, False, True, None, (), [], {}, "0"]),
    st.floats(allow_nan=False),
    st.integers(),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(st.builds(Defaults, odd, odd, odd, odd, odd, odd, odd, odd, odd, required=odd))
def test_the_compiled_encoder_is_the_walk_for_every_default_test(value: Defaults) -> None:
    # Compared as JSON text: equal values of other JSON types (False and 0, 0 and 0.0) differ.
    walked = json.dumps(_lean._walk(value, Defaults))
    assert json.dumps(compiled(Defaults)(value)) == walked == json.dumps(plain_lean(value))


@settings(max_examples=200, deadline=None)
@given(stored_entries)
def test_compiled_entries_encode_as_the_walk_does(entry: Any) -> None:
    walked = json.dumps(_lean._walk(entry, type(entry)))
    assert json.dumps(compiled(type(entry))(entry)) == walked == json.dumps(plain_lean(entry))
    if entry.kind != "dispatch":  # packed: its text is not the lean payload's
        assert compiled_text(type(entry))(entry) == stored_text(plain_lean(entry))


def stored_text(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(st.builds(Defaults, odd, odd, odd, odd, odd, odd, odd, odd, odd, required=odd))
def test_the_text_written_from_the_fields_is_the_payloads_json(value: Defaults) -> None:
    assert compiled_text(Defaults)(value) == stored_text(plain_lean(value))


def test_a_text_with_no_utf8_form_goes_the_escaping_way() -> None:
    entry = UserEntry("lone \ud800 surrogate", timestamp="t")
    for _ in range(COMPILE_AFTER + 1):  # walked, then compiled: the same refusal
        assert lean_text(entry) is None
    assert UserEntry in _lean._TEXTS
    assert dump_entry(entry)[2] == json.dumps(
        plain_lean(entry), ensure_ascii=True, separators=(",", ":")
    )
    plain = UserEntry("plain", timestamp="t")
    assert lean_text(plain) == '{"content":"plain","timestamp":"t","kind":"user"}'


def test_the_stored_text_is_the_payloads_json_before_and_after_compiling() -> None:
    @dataclass(frozen=True)
    class Rare:
        text: str = ""
        count: int = 0

    values = [Rare(f"t{i}", i) for i in range(COMPILE_AFTER + 3)]
    texts = [lean_text(v) for v in values]
    assert Rare in _lean._TEXTS  # compiled on the way
    assert texts == [stored_text(plain_lean(v)) for v in values]


def test_a_class_is_walked_until_it_is_compiled() -> None:
    @dataclass(frozen=True)
    class Fresh:
        a: int = 0
        b: str = ""

    assert Fresh not in _lean._COMPILED
    for i in range(COMPILE_AFTER):
        assert lean(Fresh(i, "b")) == ({"a": i, "b": "b"} if i else {"b": "b"})
    assert Fresh not in _lean._COMPILED
    assert lean(Fresh(7)) == {"a": 7}
    assert Fresh in _lean._COMPILED
