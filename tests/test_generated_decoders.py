"""The decoders generated per entry type accept and refuse exactly what ``codec.decode`` does.

Stored entries are decoded by straight-line functions written once per class
(``codec._straight``); the codec's table-driven decoder is the rule they follow. Damaged payloads
(a field holding any JSON value, a field left out, an unknown field, at the top or one level
down) must meet the same fate in both: the same value, or the same ``DecodeError``.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.codec import COMPILE_AFTER, DecodeError, Mismatch, decode, decode_entry, encode
from agentsession.codec._shape import plain
from agentsession.codec._straight import _generated, _hints_of
from agentsession.log import LogEntry
from agentsession.request import ToolCall

from .store.strategies import ENTRY_STRATEGIES
from .test_decoding import state

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


def _outcome(fn: Any, cls: type, payload: Any) -> tuple[str, Any]:
    try:
        value = fn(cls, payload)
    except DecodeError as exc:
        return "refused", str(exc)
    return "decoded", (type(value), value)


def _damaged(payload: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """``payload`` with one field replaced, dropped or added, at the top or one level down."""
    target = payload
    nested = [k for k, v in payload.items() if isinstance(v, dict)]
    deeper: bool = data.draw(st.booleans())
    if nested and deeper:
        key = data.draw(st.sampled_from(nested))
        target = payload[key] = dict(payload[key])
    how = data.draw(st.sampled_from(["replace", "drop", "add"]))
    if how == "add" or not target:
        target[data.draw(st.text(min_size=1, max_size=8))] = data.draw(JSON_VALUES)
    elif how == "drop":
        del target[data.draw(st.sampled_from(sorted(target)))]
    else:
        target[data.draw(st.sampled_from(sorted(target)))] = data.draw(JSON_VALUES)
    return payload


@settings(max_examples=400, deadline=None)
@given(entry=st.one_of(*ENTRY_STRATEGIES.values()), data=st.data())
def test_a_damaged_payload_meets_the_same_fate_in_both_decoders(
    entry: LogEntry, data: st.DataObject
) -> None:
    cls = type(entry)
    payload = _damaged(encode(entry), data)
    generated = _outcome(decode_entry, cls, payload)
    assert generated == _outcome(decode, cls, payload)


@settings(max_examples=200, deadline=None)
@given(entry=st.one_of(*ENTRY_STRATEGIES.values()))
def test_an_intact_payload_decodes_to_the_entry(entry: LogEntry) -> None:
    decoded = decode_entry(type(entry), encode(entry))
    assert type(decoded) is type(entry)
    assert decoded == entry


@settings(max_examples=300, deadline=None)
@given(
    entry=ENTRY_STRATEGIES["epoch"],
    item=JSON_VALUES | st.lists(st.text(max_size=3) | st.integers() | st.booleans(), max_size=3),
    tools=JSON_VALUES | st.lists(st.text(max_size=3) | st.integers(), max_size=3),
    where=st.sampled_from(["baseline", "checkpoint"]),
)
def test_an_epoch_with_any_pair_or_tool_list_meets_the_same_fate_in_both_decoders(
    entry: LogEntry, item: Any, tools: Any, where: str
) -> None:
    # A pair of texts (tuple[str, str]) and the optional tool list have shorter decoders.
    payload = encode(entry)
    payload[where] = [*payload[where], item]
    payload["tools"] = tools
    generated = _outcome(decode_entry, type(entry), payload)
    assert generated == _outcome(decode, type(entry), payload)


@settings(max_examples=200, deadline=None)
@given(arguments=JSON_VALUES, keys=st.lists(st.integers() | st.text(max_size=2), max_size=3))
def test_a_tool_calls_arguments_meet_the_same_fate_in_both_decoders(
    arguments: Any, keys: list[Any]
) -> None:
    # dict[str, Any] has a shorter decoder; keys that are not text (not from JSON) included.
    for value in (arguments, dict.fromkeys(keys, arguments)):
        payload = {"name": "f", "arguments": value, "id": "c1", "kind": "tool_call"}
        generated = _outcome(decode_entry, ToolCall, payload)
        assert generated == _outcome(decode, ToolCall, payload)
        if generated[0] == "decoded":
            assert generated[1][1].arguments is not value  # a copy, as the codec gives


def _tier_outcome(decoder: Any, payload: Any) -> tuple[str, Any]:
    try:
        value = decoder(payload)
    except Mismatch:
        return "mismatch", None
    return "decoded", (type(value), value, state(value))


@settings(max_examples=300, deadline=None)
@given(entry=st.one_of(*ENTRY_STRATEGIES.values()), data=st.data(), damage=st.booleans())
def test_the_walking_and_the_compiled_decoder_agree(
    entry: LogEntry, data: st.DataObject, damage: bool
) -> None:
    # A type's decoder walks its field table for its first payloads, then compiles itself:
    # both must give the same value (fields in the same order) or both give way to the codec.
    cls = type(entry)
    payload = encode(entry)
    if damage:
        payload = _damaged(payload, data)
    if not plain(cls):
        return
    walking: Any = _generated(cls, limit=10**9)
    compiled: Any = _generated(cls, limit=0)
    assert walking.__code__ is not compiled.__code__
    outcome = _tier_outcome(walking, payload)
    assert outcome == _tier_outcome(compiled, payload)
    if not damage:
        assert outcome == ("decoded", (cls, entry, state(entry)))


def test_a_decoder_compiles_its_straight_line_code_into_itself_after_its_first_payloads() -> None:
    payload = {"name": "f", "arguments": {"a": 1}, "id": "c1", "kind": "tool_call"}
    decoder: Any = _generated(ToolCall)
    walking = decoder.__code__
    for _ in range(COMPILE_AFTER - 1):
        assert decoder(payload) == ToolCall("f", {"a": 1}, "c1")
    assert decoder.__code__ is walking
    assert decoder(payload) == ToolCall("f", {"a": 1}, "c1")
    straight = decoder.__code__
    assert straight is not walking
    assert "v0" in straight.co_varnames  # the field-by-field code, in the same function
    assert decoder({**payload, "id": "c2"}) == ToolCall("f", {"a": 1}, "c2")
    assert decoder.__code__ is straight


def _reachable(tp: Any, seen: dict[type, None]) -> None:
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if tp in seen:
            return
        seen[tp] = None
        for hint in typing.get_type_hints(tp).values():
            _reachable(hint, seen)
    for arg in typing.get_args(tp):
        _reachable(arg, seen)


def test_the_decoders_type_hints_are_get_type_hints() -> None:
    # Each class's hints are evaluated in one go (``_hints_of``): the same values, in order.
    seen: dict[type, None] = {}
    _reachable(LogEntry, seen)
    assert ToolCall in seen and len(seen) > 25
    for cls in seen:
        expected = typing.get_type_hints(cls)
        found = _hints_of(cls)
        assert list(found.items()) == list(expected.items()), cls
        assert all(found[k] is v or found[k] == v for k, v in expected.items())


def test_type_hints_that_need_more_than_one_eval_are_left_to_get_type_hints() -> None:
    @dataclasses.dataclass
    class Odd:
        nested: list[ToolCall]
        later: typing.Annotated[int, "meta"]
        maybe: typing.Optional["ToolCall"]  # noqa: UP037, UP045 - a forward reference

    @dataclasses.dataclass
    class Plain:
        a: int
        b: "tuple[str, ...] | None"  # noqa: UP037 - a text annotation, as stored entries have

    assert _hints_of(Odd) == typing.get_type_hints(Odd, localns={"ToolCall": ToolCall})
    assert _hints_of(Plain) == {"a": int, "b": tuple[str, ...] | None}
