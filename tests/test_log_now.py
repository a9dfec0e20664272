"""``log.now()`` keeps the text of the current second: the stamps are what ``datetime`` writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from agentsession.log import now
from agentsession.log.entries import _stamp

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Microseconds since the epoch up to the last one ``datetime`` can hold.
LAST = (datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC) - EPOCH) // timedelta(
    microseconds=1
)


def written_by_datetime(micros: int) -> str:
    return (EPOCH + timedelta(microseconds=micros)).isoformat(timespec="microseconds")


@given(st.lists(st.integers(0, LAST) | st.integers(1_764_000_000_000_000, 1_764_000_003_000_000)))
def test_each_stamp_is_what_datetime_writes(moments: list[int]) -> None:
    # Moments in one second and across seconds, in any order: the kept second never leaks.
    for micros in moments:
        assert _stamp(micros) == written_by_datetime(micros)


def test_now_reads_the_clock_datetime_reads() -> None:
    for _ in range(1_000):
        before = datetime.now(UTC).isoformat(timespec="microseconds")
        stamp = now()
        after = datetime.now(UTC).isoformat(timespec="microseconds")
        assert before <= stamp <= after
        assert len(stamp) == len(before)
