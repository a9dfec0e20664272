"""Shortcuts of the inspection and its report give what the plain definitions give."""

from __future__ import annotations

import enum
import math
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentsession.inspection._measure import leading_same
from agentsession.inspection._report_data import _browser_safe, _stamp

TEXT = st.text(alphabet=st.sampled_from("09:.-T+ab\x00\x7fé"), max_size=12)


def shared_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@given(TEXT, TEXT)
def test_a_stamp_is_written_after_the_characters_it_shares(previous: str, stamp: str) -> None:
    shared = shared_prefix(previous, stamp)
    assert _stamp(previous, stamp) == f"{shared}|{stamp[shared:]}"
    assert _stamp(stamp, stamp) == f"{len(stamp)}|"


@given(st.lists(st.integers(0, 3), max_size=8), st.lists(st.integers(0, 3), max_size=8))
def test_leading_same_counts_the_very_same_objects(left: list[int], right: list[int]) -> None:
    pool = [object() for _ in range(4)]
    old, new = tuple(pool[i] for i in left), tuple(pool[i] for i in right)
    n = 0
    while n < min(len(old), len(new)) and old[n] is new[n]:
        n += 1
    assert leading_same(old, new) == n
    # Equal values in other objects are not the same objects.
    assert leading_same(tuple([i] for i in left), tuple([i] for i in left)) == 0


class Level(enum.IntEnum):
    HIGH = 2**60


class Name(str):
    pass


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**53 - 2, max_value=2**53 + 2).flatmap(
        lambda n: st.sampled_from([n, -n])
    )
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([math.inf, 1e16, 0.0, Level.HIGH, Name("x")])
    | st.text(max_size=4)
)
KEYS = st.text(max_size=3) | st.from_regex(r"-?[0-9]{1,12}", fullmatch=True)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=10,
)


def browser_safe(value: Any) -> bool:
    """The definition: no float, no integer past 2**53, no key a browser's object puts first."""
    if isinstance(value, dict):
        return all(
            not re.fullmatch(r"0|[1-9][0-9]{0,9}", k) and browser_safe(v) for k, v in value.items()
        )
    if isinstance(value, list):
        return all(browser_safe(v) for v in value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return -(2**53) < value < 2**53
    return False


@given(JSON)
def test_browser_safe_values_are_those_of_the_definition(value: Any) -> None:
    assert _browser_safe(value) == browser_safe(value)
