"""The short path for rows in their current form gives what ``load_entry`` gives, or steps aside.

``quick_entry`` reads a row stored as this package writes it today without ``load_entry``'s
general steps (upgrades, packing, kept texts). For any row, intact or damaged, it must either
give an entry equal to ``load_entry``'s (of the same type) or give ``None``; never an entry
where ``load_entry`` refuses the row with ``CorruptEntryError``.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.errors import CorruptEntryError
from agentsession.log import LogEntry, dump_entry, load_entry
from agentsession.log.stored import dump_row, quick_entry, text_refs

from .store.strategies import ENTRY_STRATEGIES
from .test_generated_decoders import JSON_VALUES, _damaged


def _loaded(kind: Any, version: Any, data: Any) -> tuple[str, Any]:
    try:
        entry = load_entry(kind, version, data)
    except CorruptEntryError:
        return "refused", None
    return "loaded", (type(entry), entry)


def _agrees(kind: Any, version: Any, data: Any) -> None:
    quick = quick_entry(kind, version, data)
    if quick is not None:
        assert _loaded(kind, version, data) == ("loaded", (type(quick), quick))


@settings(max_examples=200, deadline=None)
@given(entry=st.one_of(*ENTRY_STRATEGIES.values()))
def test_an_intact_row_of_a_plain_kind_takes_the_short_path(entry: LogEntry) -> None:
    kind, version, data = dump_entry(entry)
    quick = quick_entry(kind, version, data)
    if kind in ("epoch", "dispatch"):  # kept texts, packed fields: the long way only
        assert quick is None
    else:
        assert quick is not None
        assert type(quick) is type(entry)
        assert quick == entry


@settings(max_examples=400, deadline=None)
@given(entry=st.one_of(*ENTRY_STRATEGIES.values()), data=st.data())
def test_a_damaged_payload_is_never_accepted_where_load_entry_refuses_it(
    entry: LogEntry, data: st.DataObject
) -> None:
    kind, version, text = dump_entry(entry)
    payload = _damaged(json.loads(text), data)
    _agrees(kind, version, json.dumps(payload, separators=(",", ":")))


@settings(max_examples=300, deadline=None)
@given(
    entry=st.one_of(*ENTRY_STRATEGIES.values()),
    cut=st.integers(min_value=0, max_value=400),
    kind=st.none() | st.sampled_from(["user", "assistant", "epoch", "nope", ""]),
    version=st.none() | st.sampled_from([0, 1, 2, 99, True, 1.0, "1"]),
    tail=st.sampled_from(["", " ", "}", "x", ',"kind":"user"}']),
)
def test_a_damaged_row_is_never_accepted_where_load_entry_refuses_it(
    entry: LogEntry, cut: int, kind: Any, version: Any, tail: str
) -> None:
    stored_kind, stored_version, text = dump_entry(entry)
    data = text[: max(0, len(text) - cut)] + tail if cut % 3 else text + tail
    _agrees(
        stored_kind if kind is None else kind, stored_version if version is None else version, data
    )


@settings(max_examples=100, deadline=None)
@given(value=JSON_VALUES)
def test_a_row_that_is_not_an_object_steps_aside(value: Any) -> None:
    data = json.dumps(value)
    assert quick_entry("user", 1, data) is None or isinstance(value, dict)
    _agrees("user", 1, data)


@settings(max_examples=100, deadline=None)
@given(entry=ENTRY_STRATEGIES["epoch"], damage=st.booleans(), data=st.data())
def test_an_epoch_parsed_for_its_references_decodes_as_one_parsed_afresh(
    entry: LogEntry, damage: bool, data: st.DataObject
) -> None:
    # A store asks for an epoch row's kept-text references, then decodes the same string:
    # the decode reuses that parse. It must give what a decode alone gives, once.
    kind, version, text, texts = dump_row(entry)
    if damage:
        text = json.dumps(_damaged(json.loads(text), data), separators=(",", ":"))
    alone = _outcome(kind, version, text, texts)
    refs = text_refs(kind, version, text)
    assert set(refs) <= set(texts) or damage
    assert _outcome(kind, version, text, texts) == alone  # the parse text_refs left behind
    assert _outcome(kind, version, text, texts) == alone  # and a fresh one after it


def _outcome(kind: str, version: int, text: str, texts: dict[str, str]) -> tuple[str, Any]:
    try:
        return "loaded", load_entry(kind, version, text, texts=texts)
    except CorruptEntryError as exc:
        return "refused", str(exc)
