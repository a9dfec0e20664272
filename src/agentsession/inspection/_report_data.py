"""The data a report embeds once, for its script to draw the page from on demand.

A session of ten thousand entries holds thousands of requests that repeat one another almost
entirely: each shares all but its last few messages with the one before. So every distinct
message, tool declaration and system section is stored once, in ``json``, and each request is a
list of references — the system part, the tools, and its messages as "the first ``k`` of the
previous request's, then these". Strings the page shows many times (titles, models, diagnoses,
texts) are stored once in ``strings``. The script rebuilds a request's body from the references
when it is opened, exactly as ``agentsession request --format neutral`` prints it.

A JSON value is stored as the value itself when the browser's ``JSON.stringify`` writes it the
way Python's ``json.dumps`` does; one holding a float, a very large integer or an object key
that a browser would reorder (an array index such as ``"1"``) is stored as its finished text
instead, so the body shown is the exact text either way. Log texts go through ``visible``
before they are stored: a control character shows as its escape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..codec import canonical_json_seen, encode
from ..hygiene import visible, visible_json, visible_line
from ._measure import leading_same as _leading_same
from .describe import EPOCH_REASONS, preview
from .sent import cache_fields
from .timing import moment_of, seconds_since
from .views import EpochInfo, Inspection, RequestInfo, TimelineItem, TurnInfo

__all__ = ["VERSION", "embed", "report_data"]

VERSION = 1
_ITEM_CHARS = 1_500
_INDEX_KEY = re.compile(r"(?:0|[1-9][0-9]{0,9})")  # keys a browser's object puts first
_SAFE_INT = 2**53
_DIGITS = frozenset("0123456789")


class _Strings(dict[str, int]):
    """Distinct strings, each stored once and referred to by its index: ``strings[text]``.

    A dict that adds what it lacks, so finding a string stored before is one lookup in C.
    """

    def __init__(self) -> None:
        super().__init__()
        self.stored: list[str] = []  # by index

    def __missing__(self, text: str) -> int:
        found = self[text] = len(self.stored)
        self.stored.append(text)
        return found


class _Shown(dict[str, int]):
    """Like ``_Strings`` for texts shown in a form of their own (cut, controls made visible).

    A session repeats its titles and many of its texts: each distinct one is transformed once.
    """

    def __init__(self, strings: _Strings, form: Callable[[str], str]) -> None:
        super().__init__()
        self._strings = strings
        self._form = form

    def __missing__(self, text: str) -> int:
        found = self[text] = self._strings[self._form(text)]
        return found


class _Values:
    """Distinct JSON values (messages, tools, system sections), keyed by their canonical text.

    Requests of one epoch share their message objects, so a value seen before is found by its
    identity first and encoded only when it is new.
    """

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._index: dict[str, int] = {}
        self._seen: dict[int, tuple[object, int]] = {}
        self._lists: dict[int, tuple[object, list[int]]] = {}

    def add(self, value: object) -> int:
        seen = self._seen.get(id(value))
        if seen is not None and seen[0] is value:
            return seen[1]
        # The canonical text: a message's was made (and kept) when its request was proved. A
        # long session's rebuild keeps more than the bounded memo holds: a text made again
        # here is not kept, so it pushes out none of those the requests after it will find.
        key = canonical_json_seen(value)
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.items)
            plain = encode(value)
            safe = _browser_safe(plain)
            self.items.append(plain if safe else json.dumps(plain, indent=2, ensure_ascii=False))
        self._seen[id(value)] = (value, found)
        return found

    def refs(self, values: tuple[object, ...]) -> list[int]:
        """The references of ``values`` (a request's system part or tools), kept per tuple."""
        seen = self._lists.get(id(values))
        if seen is None or seen[0] is not values:
            seen = self._lists[id(values)] = (values, [self.add(v) for v in values])
        return seen[1]


def _browser_safe(value: Any) -> bool:
    """Whether ``JSON.stringify`` writes ``value`` exactly as ``json.dumps`` does."""
    kind = type(value)  # what ``encode`` makes, looked at without a generator per container
    if kind is str or kind is bool or value is None:
        return True
    if kind is dict:
        for key in value:
            if key[:1] in _DIGITS and _INDEX_KEY.fullmatch(key):
                return False
        return all(map(_browser_safe, value.values()))
    if kind is list:
        return all(map(_browser_safe, value))
    if kind is int:
        return bool(-_SAFE_INT < value < _SAFE_INT)
    return _browser_safe_any(value)


def _browser_safe_any(value: Any) -> bool:
    """``_browser_safe`` for any type (subclasses of the JSON types too)."""
    if isinstance(value, dict):
        return all(not _INDEX_KEY.fullmatch(k) and _browser_safe(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_browser_safe(v) for v in value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return -_SAFE_INT < value < _SAFE_INT
    return False  # a float: the two languages spell some differently (1.0, 1e-07)


def _stamp(previous: str, stamp: str) -> str:
    """``stamp`` as "how many leading characters it shares with ``previous``|the rest"."""
    high = min(len(previous), len(stamp))
    if high and previous.isascii() and stamp.isascii():
        # The first differing byte is where the highest set bit of the XOR of the two falls.
        head, tail = previous[:high].encode(), stamp[:high].encode()
        differ = int.from_bytes(head, "big") ^ int.from_bytes(tail, "big")
        shared = high - (differ.bit_length() + 7) // 8
        return f"{shared}|{stamp[shared:]}"
    shared = 0
    while shared < high:  # a binary search: each step compares two slices in C
        middle = (shared + high + 1) // 2
        if previous[:middle] == stamp[:middle]:
            shared = middle
        else:
            high = middle - 1
    return f"{shared}|{stamp[shared:]}"


def _text(text: str) -> str:
    """A log text as the page shows it: cut, and its control characters visible."""
    return visible(preview(text, _ITEM_CHARS))


def _usd(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.4f}"


def report_data(ins: Inspection) -> dict[str, Any]:
    """The compact form of ``ins`` the report's script draws requests, epochs and timeline from."""
    strings = _Strings()
    values = _Values()
    return {
        "version": VERSION,
        "requests": _requests(ins, strings, values),
        "epochs": [_epoch(e, strings) for e in ins.epochs],
        "turns": _turns(ins.timeline, ins.turns, strings),
        "categories": {i.kind: i.category for i in ins.timeline},
        "strings": strings.stored,
        "json": values.items,
    }


def _requests(ins: Inspection, strings: _Strings, values: _Values) -> list[list[Any]]:
    """One row per request: its figures, then its body as references into ``json``.

    Then the cache fields its SDK call carried beyond that neutral body (``""``: none), and
    last the deferred tools found, evicted and loaded for it (``""``: none).
    """
    requests: Sequence[RequestInfo] = ins.requests
    rows: list[list[Any]] = []
    lines, why = _Shown(strings, visible_line), _Shown(strings, visible)
    before: tuple[object, ...] = ()
    previous: list[int] = []
    for r in requests:
        system, tools = values.refs(r.request.system), values.refs(r.request.tools)
        current = r.request.messages
        kept = _leading_same(before, current)  # the same objects: nothing to look up
        messages = previous[:kept] + [values.add(message) for message in current[kept:]]
        for old_ref, new_ref in zip(previous[kept:], messages[kept:], strict=False):
            if old_ref != new_ref:
                break
            kept += 1  # equal values in new objects (a later epoch projects them afresh)
        before, previous = current, messages
        rows.append(
            [
                r.number,
                r.turn,
                r.step,
                lines[r.model],
                r.epoch,
                r.tokens,
                r.cacheable,
                r.reported_input,
                r.reported_cached,
                lines["failed" if r.failed else r.cache],  # a failure is no hit
                lines[r.provider_cache],
                strings[_usd(r.cost_usd)],
                -1 if r.exact else why[r.mismatch],
                system,
                tools,
                [kept, *messages[kept:]],
                r.seq,
                strings[visible_json(cache_fields(r.model, ins.controls.get(r.seq)))],
                lines[_deferred_tools(r)],
                _ms(r.latency),
                _ms(r.first_token),
            ]
        )
    return rows


def _deferred_tools(r: RequestInfo) -> str:
    """The deferred tools of request ``r`` in a line: found, then evicted, then loaded."""
    parts = []
    if r.tools_found:
        parts.append("found " + ", ".join(r.tools_found))
    if r.tools_evicted:
        parts.append("evicted " + ", ".join(r.tools_evicted))
    if r.tools_loaded:
        parts.append("loaded " + ", ".join(r.tools_loaded))
    return " · ".join(parts)


def _epoch(e: EpochInfo, strings: _Strings) -> list[Any]:
    why = EPOCH_REASONS.get(e.reason, e.reason)
    tools = ", ".join(e.tools) if e.tools else "none"
    return [
        e.number,
        e.seq,
        strings[visible_line(e.reason)],
        strings[visible_line(why)],
        strings[visible_line(e.model or "–")],
        e.timestamp,
        e.turn,
        strings[visible(tools)],
        strings[visible(", ".join(e.removed))],
        [[strings[visible_line(s.label)], s.tokens, strings[_text(s.text)]] for s in e.sections],
    ]


def _turns(
    items: Sequence[TimelineItem], turns: Sequence[TurnInfo], strings: _Strings
) -> list[list[Any]]:
    """The timeline by turn: ``[number, head, items]``; an item is seq, kind, time, title, text.

    Items come in log order, each in its turn's group; a side call committed in a later turn
    than the one that made it (``inspection.timing``) joins the earlier group.
    """
    info = {t.number: t for t in turns}
    titles, texts = _Shown(strings, visible_line), _Shown(strings, _text)
    groups: dict[int, list[TimelineItem]] = {}
    number, group = None, None
    for item in items:
        if item.turn != number:  # runs of one turn: one lookup per run, not per item
            number = item.turn
            group = groups.setdefault(number, [])
        assert group is not None
        group.append(item)
    out: list[list[Any]] = []
    last = ""
    for number in sorted(groups):
        turn = info.get(number)
        shown: list[list[Any]] = []
        out.append([number, _head(turn, titles, strings) if turn is not None else [], shown])
        for item in groups[number]:
            stamp = item.timestamp
            shown.append(
                [
                    item.seq,
                    strings[item.kind],
                    _stamp(last, stamp),
                    titles[item.title],
                    texts[item.text] if item.text else -1,
                ]
            )
            last = stamp
    return out


def _head(turn: TurnInfo, titles: _Shown, strings: _Strings) -> list[Any]:
    """A turn's head: time, outcome, requests, tool calls, tokens, cost, side calls, waterfall.

    The tokens are three figures: in, of them cached, and out.
    """
    used = turn.usage
    return [
        turn.timestamp,
        titles[turn.outcome],
        turn.requests,
        turn.tool_calls,
        used.input_tokens,
        used.cached_input_tokens,
        used.output_tokens,
        strings[_usd(used.usd)],
        used.side_calls,
        _spans(turn, titles, strings),
    ]


def _ms(seconds: float | None) -> int:
    """Whole milliseconds, or -1 for a figure not recorded."""
    return -1 if seconds is None else round(seconds * 1000)


def _spans(turn: TurnInfo, labels: _Shown, strings: _Strings) -> list[list[Any]]:
    """A turn's waterfall, one row per span: kind, seq, label, start, duration, first token.

    Then why it failed (-1: it did not). The times are milliseconds (-1: not recorded), the
    start counted from the turn's prompt.
    """
    out: list[list[Any]] = []
    prompt = moment_of(turn.timestamp) if turn.spans else None
    for span in turn.spans:
        out.append(
            [
                strings[span.kind],
                span.seq,
                labels[span.label],
                _ms(seconds_since(prompt, span.start)),
                _ms(span.seconds),
                _ms(span.first_token),
                labels[span.failed] if span.failed else -1,
            ]
        )
    return out


def embed(data: dict[str, Any]) -> str:
    """``data`` as JSON that can sit inside a ``<script type="application/json">`` element.

    Every ``<`` is written as its escape, so no text from the log can close the element, and so
    is every control or direction character ``json.dumps`` would leave raw: the file holds none.
    """
    # The data is a tree of fresh lists and dicts: no container to check for cycles.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), check_circular=False)
    return visible_json(text).replace("<", "\\u003c")
