"""SQLite's lean entry rows: leaving the closing ``"kind"`` field out loses nothing.

``_sqlite_sql.lean`` strips the field only when it is the object's last top-level field; the
reading side (``load_entry``) fills it in from the row's kind column. For any entry, the lean
row decodes to the same entry as the full one, and the kind codes name every known kind once.
"""

from __future__ import annotations

from hypothesis import given, settings

from agentsession.log import VERSIONS, LogEntry, dump_entry, load_entry
from agentsession.store._sqlite_sql import KIND_CODES, coded, lean, named

from .strategies import entry


@settings(max_examples=200, deadline=None)
@given(entry)
def test_a_lean_row_decodes_to_the_same_entry(value: LogEntry) -> None:
    kind, version, data = dump_entry(value)
    thin = lean(kind, data)
    assert load_entry(kind, version, thin) == load_entry(kind, version, data) == value
    assert len(thin) <= len(data)


def test_only_a_closing_top_level_kind_is_left_out() -> None:
    assert lean("user", '{"content":"x","kind":"user"}') == '{"content":"x"}'
    # A nested field of the same name, or a kind that is not last, stays.
    assert lean("user", '{"a":{"kind":"user"}}') == '{"a":{"kind":"user"}}'
    assert lean("user", '{"kind":"user","content":"x"}') == '{"kind":"user","content":"x"}'
    assert lean("user", '{"kind":"user"}') == '{"kind":"user"}'
    # Text that only looks like the field is escaped inside a string.
    text = '{"content":"a\\",\\"kind\\":\\"user\\"}"}'
    assert lean("user", text) == text


def test_codes_name_known_kinds_once_and_round_trip() -> None:
    # A kind added later without a code is stored by its name, which works (only larger).
    assert set(KIND_CODES) <= set(VERSIONS)
    assert len(set(KIND_CODES.values())) == len(KIND_CODES)
    kinds = [*VERSIONS, "from_the_future"]
    rows = [(seq, code, 1, "{}") for seq, code in enumerate(coded(kinds))]
    assert [kind for _, kind, _, _ in named(rows)] == kinds
    assert named([(0, 999, 1, "{}")]) == [(0, 999, 1, "{}")]  # an unknown code stays a number
