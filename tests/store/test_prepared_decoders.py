"""Decoders built ahead of their first row (while a store waits for its server) decode as the
ones built at first use do, and building them decodes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.codec import decode
from agentsession.log import dump_entry, load_entry
from agentsession.log.stored import prepare_decoders, quick_entry
from agentsession.store._postgres_snapshot import REOPEN_KINDS

from .strategies import ENTRY_STRATEGIES

_REOPEN_ENTRY = st.one_of(*(ENTRY_STRATEGIES[kind] for kind in REOPEN_KINDS))


@settings(max_examples=150, deadline=None)
@given(_REOPEN_ENTRY)
def test_a_prepared_decoder_gives_what_the_general_decoder_gives(entry: Any) -> None:
    prepare_decoders([*REOPEN_KINDS, "no such kind"])  # an unknown kind is skipped
    kind, version, data = dump_entry(entry)
    loaded = load_entry(kind, version, data)
    assert loaded == entry
    quick = quick_entry(kind, version, data)
    assert quick is None or quick == entry
    if kind not in ("epoch", "dispatch"):  # stored as they are: the codec reads the payload
        assert decode(type(entry), {**json.loads(data), "kind": kind}) == entry


_FRESH = r"""
import json, sys
from agentsession.log import AssistantEntry, UserEntry, ToolResultEntry, dump_entry, load_entry
from agentsession.log.stored import prepare_decoders, _QUICK
from agentsession.request import ToolCall
if sys.argv[1] == "prepared":
    prepare_decoders(["user", "assistant", "tool_result", "epoch", "dispatch"])
    built = sorted(_QUICK)
else:
    built = []
entries = [
    UserEntry("hi", timestamp="t"),
    AssistantEntry("", (ToolCall("f", {"a": [1, 2.5, None]}, id="c"),), model="m"),
    ToolResultEntry("c", "f", "out", is_error=True),
]
rows = [dump_entry(e) for e in entries]
print(json.dumps({"built": built, "decoded": [repr(load_entry(*r)) for r in rows]}))
"""


def _fresh(mode: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _FRESH, mode], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_fresh_process_decodes_the_same_with_its_decoders_prepared_or_not() -> None:
    prepared, lazy = _fresh("prepared"), _fresh("lazy")
    assert prepared["decoded"] == lazy["decoded"]
    assert set(prepared["built"]) == {"user", "assistant", "tool_result", "epoch", "dispatch"}
