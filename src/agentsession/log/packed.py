"""Packed stored forms: the kinds written at every step keep their values positionally, shortened.

A ``dispatch`` record is written twice per turn; its field names, four hex digests and an ISO
timestamp made up most of its ~340 bytes. Version 3 stores the same nine fields as version 2,
in field order under ``"v"``: ``{"v": [model, step, digest, cache, timestamp, tools_digest,
system_digest, messages_digest, message_count], "kind": "dispatch"}``, about 170 bytes.

- A digest of 32 lowercase hex digits (what the package writes) is kept as its 16 bytes in
  unpadded base64url (22 characters); any other string as a one-element list holding it.
- A timestamp exactly as ``log.now()`` writes it (UTC, microseconds) is kept as whole
  microseconds since the Unix epoch; any other string as it is.

Unpacking gives back exactly the strings that were packed; anything else is refused with
``ValueError`` (the caller reports a corrupt entry).
"""

from __future__ import annotations

import binascii
import functools
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

__all__ = ["pack_dispatch", "pack_dispatch_values", "unpack_dispatch"]

_DISPATCH_FIELDS = (
    "model",
    "step",
    "digest",
    "cache",
    "timestamp",
    "tools_digest",
    "system_digest",
    "messages_digest",
    "message_count",
)
_DIGESTS = frozenset({"digest", "tools_digest", "system_digest", "messages_digest"})
_HEX = re.compile(r"[0-9a-f]{32}")
#: The one way to write 16 bytes in 22 characters: the last one holds the last byte's two low
#: bits and four zero bits (A, Q, g or w), so no two texts decode to the same digest.
_B64 = re.compile(r"[A-Za-z0-9_-]{21}[AQgw]")
_PAYLOAD_KEYS = frozenset({"v", "kind"})
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_ORDINAL = _EPOCH.toordinal()
_MICROSECOND = timedelta(microseconds=1)


def pack_dispatch(fields: dict[str, Any]) -> dict[str, Any]:
    """The version-3 payload of a dispatch record's encoded fields (all of them)."""
    return pack_dispatch_values(*map(fields.__getitem__, _DISPATCH_FIELDS))


def pack_dispatch_values(
    model: Any,
    step: Any,
    digest: Any,
    cache: Any,
    timestamp: Any,
    tools_digest: Any,
    system_digest: Any,
    messages_digest: Any,
    message_count: Any,
) -> dict[str, Any]:
    """``pack_dispatch`` of the fields given in order (a record is packed at every step)."""
    values = [
        model,
        step,
        _pack_digest(digest),
        cache,
        _pack_time(timestamp),
        _pack_digest(tools_digest),
        _pack_digest(system_digest),
        _pack_digest(messages_digest),
        message_count,
    ]
    return {"v": values, "kind": "dispatch"}


def unpack_dispatch(payload: dict[str, Any]) -> dict[str, Any]:
    """The fields of a version-3 dispatch payload; ``ValueError`` when it is not one."""
    values = payload.get("v")
    if not _PAYLOAD_KEYS.issuperset(payload) or not isinstance(values, list):
        raise ValueError('a dispatch record of version 3 holds "v" and "kind" only')
    if len(values) != len(_DISPATCH_FIELDS):
        raise ValueError(f"expected {len(_DISPATCH_FIELDS)} values, got {len(values)}")
    # In _DISPATCH_FIELDS order, written out: the newest dispatch is read at every reopen.
    model, step, digest, cache, timestamp, tools, system, messages, count = values
    fields: dict[str, Any] = {
        "model": model,
        "step": step,
        "digest": _unpack_digest("digest", digest),
        "cache": cache,
        "timestamp": _unpack_time(timestamp),
        "tools_digest": _unpack_digest("tools_digest", tools),
        "system_digest": _unpack_digest("system_digest", system),
        "messages_digest": _unpack_digest("messages_digest", messages),
        "message_count": count,
    }
    if "kind" in payload:
        fields["kind"] = payload["kind"]
    return fields


def _pack_digest(value: str) -> str | list[str]:
    packed = _PACKED_DIGESTS.get(value)
    if packed is not None:
        return packed
    if _HEX.fullmatch(value):
        # urlsafe_b64encode's work in C calls (two of a record's four digests are new each step)
        raw = binascii.b2a_base64(bytes.fromhex(value), newline=False)[:22]  # 16 bytes: no pad
        packed = raw.translate(_TO_URLSAFE).decode("ascii")
        if len(_PACKED_DIGESTS) >= 64:
            _PACKED_DIGESTS.clear()
        _PACKED_DIGESTS[value] = packed
        return packed
    return [value]


#: The digests packed last: a dispatch's tools and system digests repeat step after step.
_PACKED_DIGESTS: dict[str, str] = {}


def _unpack_digest(name: str, value: Any) -> str:
    if type(value) is str:
        found = _UNPACKED_DIGESTS.get(value)
        if found is not None:
            return found
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if isinstance(value, str) and _B64.fullmatch(value):
        try:  # urlsafe_b64decode's work, in one call
            standard = value.encode("ascii").translate(_FROM_URLSAFE)
            found = binascii.a2b_base64(standard + b"==").hex()
        except (binascii.Error, ValueError) as exc:  # pragma: no cover - the pattern admits none
            raise ValueError(f"{name}: {exc}") from exc
        if len(_UNPACKED_DIGESTS) >= 64:
            _UNPACKED_DIGESTS.clear()
        _UNPACKED_DIGESTS[value] = found
        return found
    raise ValueError(f"{name}: {value!r} is not a packed digest")


#: The digests unpacked last: a log's dispatch records repeat their tools and system digests,
#: so a read of a whole log unpacks each of those once (a fifth of decoding its records).
_UNPACKED_DIGESTS: dict[str, str] = {}


def _pack_time(value: str) -> int | str:
    if _NOW_FORM.fullmatch(value):
        # What ``log.now()`` writes, read by position (parsing and rendering it again to prove
        # the round trip cost more than the rest of the record): the date's day number, kept
        # for the day, and the time of day, whose fields the pattern holds to their ranges.
        day = _day_number(value[:10])
        if day is not None:
            hour, minute = int(value[11:13]), int(value[14:16])
            second, micro = int(value[17:19]), int(value[20:26])
            return day * _DAY + ((hour * 60 + minute) * 60 + second) * 1_000_000 + micro
    return _parsed_time(value)


#: ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` with the time of day in range (the date is checked by
#: ``_day_number``): exactly the texts ``_render`` gives for a valid UTC moment.
_NOW_FORM = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}\+00:00"
)


@functools.lru_cache(maxsize=64)
def _day_number(text: str) -> int | None:
    """Days from the Unix epoch to the ISO date ``text`` (``None``: not a valid date)."""
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return None
    if day.isoformat() != text:
        return None
    return day.toordinal() - _EPOCH_ORDINAL


def _parsed_time(value: str) -> int | str:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.utcoffset() != timedelta(0) or _render(moment) != value:
        return value
    return (moment - _EPOCH) // _MICROSECOND


def _unpack_time(value: Any) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"timestamp: {value!r} is neither microseconds nor text")
    # What _render(_EPOCH + value * _MICROSECOND) gives, without a datetime per record: the
    # day's date (the same for every record of a day) and the time of day written out.
    days, rest = divmod(value, _DAY)
    try:
        day = _date_of(days)
    except OverflowError as exc:
        raise ValueError(f"timestamp: {value} microseconds is out of range") from exc
    seconds, micro = divmod(rest, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{day}T{hour:02d}:{minute:02d}:{second:02d}.{micro:06d}+00:00"


_DAY = 86_400_000_000  # microseconds


@functools.lru_cache(maxsize=64)
def _date_of(days: int) -> str:
    """The ISO date ``days`` after the Unix epoch (``OverflowError`` outside years 1 to 9999)."""
    return (_EPOCH + timedelta(days=days)).date().isoformat()


def _render(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")
