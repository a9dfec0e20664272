"""Decoding builds exactly the values the classes' own constructors build.

The codec fills a decoded dataclass's fields directly when its constructor would do nothing
else (the generated ``__init__``, no ``__post_init__``): the instance must hold the same fields
in the same order as one built by calling the class, with fresh default containers; a class
whose constructor does more is still built by calling it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.codec import DecodeError, decode, twin
from agentsession.log import AssistantEntry, LogEntry, Record, dump_entry, load_entry
from agentsession.log.stored import new_record

from .store.strategies import ENTRY_STRATEGIES


def _constructed(value: Any) -> Any:
    """``value`` built again by calling its class with its fields."""
    return type(value)(**{f.name: getattr(value, f.name) for f in dataclasses.fields(value)})


def state(value: Any) -> list[tuple[str, Any]]:
    """What an instance holds, in order: its ``__dict__``'s items, or each slot's value.

    A slotted instance has no ``__dict__`` at all (one holding its fields again would be a
    second, stale copy of them).
    """
    if hasattr(type(value), "__slots__"):
        assert not hasattr(value, "__dict__")
        return [(name, getattr(value, name)) for name in type(value).__slots__]
    return list(vars(value).items())


def _same_build(decoded: Any, constructed: Any) -> None:
    assert type(decoded) is type(constructed)
    assert state(decoded) == state(constructed)
    for f in dataclasses.fields(decoded):
        inner = getattr(decoded, f.name)
        if dataclasses.is_dataclass(inner):
            _same_build(inner, _constructed(inner))
        elif isinstance(inner, tuple):
            for item in inner:
                if dataclasses.is_dataclass(item):
                    _same_build(item, _constructed(item))


@settings(max_examples=300, deadline=None)
@given(entry=st.one_of(*ENTRY_STRATEGIES.values()))
def test_a_decoded_entry_is_built_like_its_constructor_builds_it(entry: LogEntry) -> None:
    decoded = load_entry(*dump_entry(entry))
    assert decoded == entry
    _same_build(decoded, _constructed(decoded))
    if _hashable(entry):
        assert hash(decoded) == hash(_constructed(decoded))


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def test_default_containers_are_fresh_for_every_decoded_value() -> None:
    first = decode(AssistantEntry, {"content": "a"})
    second = decode(AssistantEntry, {"content": "b"})
    assert first.provider_data == {} and second.provider_data == {}
    assert first.provider_data is not second.provider_data


@dataclass(frozen=True)
class Checked:
    amount: int
    tags: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.amount < 0:
            raise ValueError("amount must not be negative")


@dataclass(frozen=True)
class Doubled:
    amount: int

    def __init__(self, amount: int) -> None:
        object.__setattr__(self, "amount", amount * 2)


def test_a_class_whose_constructor_does_more_is_built_by_calling_it() -> None:
    assert decode(Checked, {"amount": 3}) == Checked(3)
    with pytest.raises(ValueError, match="negative"):
        decode(Checked, {"amount": -1})
    assert decode(Doubled, {"amount": 2}).amount == 4


def test_what_does_not_fit_is_still_refused() -> None:
    bad: object
    for bad in ({"content": 5}, {"content": "x", "extra": 1}, [], {"usage": {"input_tokens": "1"}}):
        with pytest.raises(DecodeError):
            decode(AssistantEntry, bad)


@settings(max_examples=100, deadline=None)
@given(entry=st.one_of(*ENTRY_STRATEGIES.values()), seq=st.integers(min_value=0))
def test_a_record_built_from_its_twin_is_the_record_its_constructor_builds(
    entry: LogEntry, seq: int
) -> None:
    # A read builds each Record (and each slotted entry) as a plain twin that then becomes
    # the frozen class: the result must be that class, exactly as its constructor builds it.
    built = new_record(seq, entry)
    assert type(built) is Record
    assert built == Record(seq, entry)
    assert state(built) == state(Record(seq, entry))
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.seq = seq + 1  # type: ignore[misc]


def test_a_twin_takes_only_the_fields_of_its_class() -> None:
    twin_of_record: Any = twin(Record)
    assert twin(Doubled) is None  # no slots: built through its __dict__ as before
    made = object.__new__(twin_of_record)
    with pytest.raises(AttributeError):
        made.other = 1
    made.__class__ = Record  # laid out alike: allowed
    with pytest.raises(TypeError):
        object.__new__(twin_of_record).__class__ = AssistantEntry  # other slots: refused
