"""Packed stored forms give back exactly what was packed, and refuse what is not a packed form.

A dispatch record (version 3) keeps its fields positionally, hex digests as base64url and
``now()`` timestamps as microseconds; every other string is kept as it is.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.codec import encode
from agentsession.errors import CorruptEntryError
from agentsession.log import Dispatch, dump_entry, load_entry, now, packed
from agentsession.log.packed import _pack_time, _parsed_time, pack_dispatch
from agentsession.log.stored import _payload

from .store.strategies import ENTRY_STRATEGIES

_hex = st.text("0123456789abcdef", min_size=32, max_size=32)
_digest = st.one_of(_hex, st.text(max_size=40), _hex.map(str.upper), _hex.map(lambda h: h[:31]))
_moment = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)
_stamp = st.one_of(
    _moment.map(lambda m: m.isoformat(timespec="microseconds")),
    _moment.map(lambda m: m.isoformat()),  # without microseconds when they are 0
    st.text(max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(
    dispatch=st.one_of(
        ENTRY_STRATEGIES["dispatch"],
        st.builds(
            Dispatch,
            model=st.text(max_size=20),
            step=st.integers(),
            digest=_digest,
            timestamp=_stamp,
            tools_digest=_digest,
            system_digest=_digest,
            messages_digest=_digest,
            message_count=st.integers(),
        ),
    )
)
def test_a_dispatch_record_reads_back_exactly(dispatch: Dispatch) -> None:
    kind, version, data = dump_entry(dispatch)
    assert (kind, version) == ("dispatch", 3)
    assert load_entry(kind, version, data) == dispatch


def test_what_the_package_writes_is_packed_short() -> None:
    digest = "504f1e065f522c2bf7801d227c55ada8"
    dispatch = Dispatch("anthropic:claude-x", 2, digest, "hit", now(), digest, digest, digest, 61)
    data = dump_entry(dispatch)[2]
    values = json.loads(data)["v"]
    assert values[2] == "UE8eBl9SLCv3gB0ifFWtqA"
    assert isinstance(values[4], int)
    assert len(data.encode()) < 200  # version 2 wrote about 360 bytes
    assert load_entry("dispatch", 3, data) == dispatch


_GOOD = ["m", 1, "UE8eBl9SLCv3gB0ifFWtqA", "hit", 0, ["x"], [""], "UE8eBl9SLCv3gB0ifFWtqA", 3]


def _with(index: int, value: Any) -> dict[str, Any]:
    values = list(_GOOD)
    values[index] = value
    return {"v": values, "kind": "dispatch"}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"v": _GOOD[:-1], "kind": "dispatch"}, "expected 9 values"),
        ({"v": _GOOD, "kind": "dispatch", "model": "m"}, '"v" and "kind" only'),
        ({"model": "m", "step": 1, "digest": "d", "kind": "dispatch"}, '"v" and "kind" only'),
        (_with(2, "not base64 at all!!!!!"), "not a packed digest"),
        (_with(2, "UE8eBl9SLCv3gB0ifFWtqB"), "not a packed digest"),  # bits past the 16 bytes
        (_with(2, ["a", "b"]), "not a packed digest"),
        (_with(2, 5), "not a packed digest"),
        (_with(4, True), "neither microseconds nor text"),
        (_with(4, 10**30), "out of range"),
        (_with(1, "1"), "malformed"),
        (_with(3, "warm"), "malformed"),
    ],
)
def test_a_malformed_packed_record_is_a_corrupt_entry(
    payload: dict[str, Any], message: str
) -> None:
    with pytest.raises(CorruptEntryError, match=message):
        load_entry("dispatch", 3, json.dumps(payload), session_id="s", seq=4)


def test_the_unix_epoch_and_its_microseconds_read_back() -> None:
    assert load_entry("dispatch", 3, json.dumps(_with(4, 0))).timestamp == (
        "1970-01-01T00:00:00.000000+00:00"
    )
    stamp = "1969-12-31T23:59:59.999999+00:00"
    dispatch = Dispatch("m", 1, "d", timestamp=stamp)
    assert json.loads(dump_entry(dispatch)[2])["v"][4] == -1
    assert load_entry(*dump_entry(dispatch)) == dispatch


@settings(max_examples=500, deadline=None)
@given(micros=st.integers(min_value=-(2**62), max_value=2**62) | st.integers(-(10**15), 10**15))
def test_a_packed_time_reads_back_as_the_datetime_renders_it(micros: int) -> None:
    # The time of day is written out rather than rendered by a datetime per record.
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    try:
        expected = (epoch + timedelta(microseconds=micros)).isoformat(timespec="microseconds")
    except OverflowError:
        with pytest.raises(CorruptEntryError, match="out of range"):
            load_entry("dispatch", 3, json.dumps(_with(4, micros)))
        return
    assert load_entry("dispatch", 3, json.dumps(_with(4, micros))).timestamp == expected


@settings(max_examples=400, deadline=None)
@given(
    stamp=st.one_of(
        _stamp,
        _moment.map(lambda m: m.isoformat(timespec="microseconds").replace("+00:00", "+01:00")),
        st.from_regex(
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}\+00:00",
            fullmatch=True,
        ),
    )
)
def test_a_timestamp_read_by_position_packs_as_parsing_and_rendering_it_does(stamp: str) -> None:
    # The positional reading of what ``now()`` writes is a shortcut: dates that do not exist
    # (February 30th), hours past 23 and other offsets must go the long way and come out the same.
    assert _pack_time(stamp) == _parsed_time(stamp)


@settings(max_examples=200, deadline=None)
@given(dispatch=ENTRY_STRATEGIES["dispatch"])
def test_a_dispatch_record_packs_from_its_fields_as_from_its_encoding(dispatch: Dispatch) -> None:
    assert _payload(dispatch) == pack_dispatch(encode(dispatch))


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=16, max_size=16))
def test_a_digest_packs_as_unpadded_base64url(raw: bytes) -> None:
    expected = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    packed._PACKED_DIGESTS.clear()  # the C calls, not the kept answer
    assert packed._pack_digest(raw.hex()) == expected
    assert packed._pack_digest(raw.hex()) == expected  # kept
    packed._UNPACKED_DIGESTS.clear()
    assert packed._unpack_digest("digest", expected) == raw.hex()
    assert packed._unpack_digest("digest", expected) == raw.hex()  # kept
    with pytest.raises(ValueError, match="not a packed digest"):
        packed._unpack_digest("digest", expected + "!")  # only what decoded is kept
