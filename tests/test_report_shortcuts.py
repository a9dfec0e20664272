"""Shortcuts of the inspection and its report give what the plain definitions give."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentsession.inspection._measure import leading_same
from agentsession.inspection._report_data import _stamp

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
