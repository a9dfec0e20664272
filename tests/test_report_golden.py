"""The report of a frozen session is the same, byte for byte, as the code that wrote its golden.

A scripted session of 705 entries (131 turns, tool calls in most, a context change every 25
turns, window moves that open new epochs) is kept as a session file; its inspection and report
were written once, and each run inspects and renders it again and compares the bytes. This is
what holds the report's shortcuts (memos, requests extended from the one before) to what the
page showed before them. Two cases: the tool declarations known (every request is proved by its
digest) and unknown (the command line's case: each request proved by its message chain).

The page's static parts (its stylesheet and script, and the hashes of both in its policy) are
left out of the comparison: they are written by hand, not computed from the log. To write the
golden files again after a change meant to alter the report: ``python -m tests.test_report_golden``.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.budget import BudgetPolicy, default_counter
from agentsession.inspection._report_assets import STYLE
from agentsession.inspection._report_script import SCRIPT
from agentsession.inspection.report import REPORT_SOURCES, render_report
from agentsession.inspection.views import Inspection, inspect_log
from agentsession.log import Record
from agentsession.request import ToolSpec
from agentsession.store.session_file import parse_session_file

FIXTURES = Path(__file__).parent / "fixtures"
SESSION = FIXTURES / "report_session.jsonl"
GOLDEN = {True: FIXTURES / "report_golden_tools.html.gz", False: FIXTURES / "report_golden.html.gz"}
STAMP = "2026-12-06T12:00:00+00:00"


@ags.tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"the value of {key} is {len(key) * 7}"


def inspected(with_tools: bool) -> Inspection:
    parsed = parse_session_file(SESSION.read_bytes())
    records = [Record(seq, entry) for seq, entry in enumerate(parsed.entries)]
    specs: dict[str, ToolSpec] = {}
    if with_tools:
        specs = {lookup.name: lookup.spec}
    return inspect_log(
        parsed.info,
        records,
        specs=specs,
        config=ags.Config(),
        budget=BudgetPolicy.from_config(default_counter(), ags.Config()),
        tools=tuple(specs),
    )


def computed_part(html: str) -> str:
    """The page without what is written by hand: its stylesheet, its script, their hashes."""
    for fixed in (STYLE, SCRIPT, *REPORT_SOURCES):
        html = html.replace(fixed, "…")
    return html


def report(with_tools: bool) -> str:
    return computed_part(render_report(inspected(with_tools), generated=STAMP, version="golden"))


@pytest.mark.parametrize("with_tools", [True, False], ids=["tools known", "tools unknown"])
def test_the_report_of_a_frozen_session_is_the_golden_one_byte_for_byte(with_tools: bool) -> None:
    ins = inspected(with_tools)
    assert len(ins.requests) > 200 and len(ins.epochs) > 10  # the shortcuts have work to do
    assert all(r.exact for r in ins.requests) == with_tools
    expected = gzip.decompress(GOLDEN[with_tools].read_bytes()).decode("utf-8")
    assert report(with_tools) == expected


def test_a_second_report_in_the_same_process_is_the_same() -> None:
    # Memos filled by the first inspection must give what computing afresh gives.
    assert report(False) == report(False)
    assert report(True) == report(True)


if __name__ == "__main__":  # write the golden files from the code as it is
    for tools, path in GOLDEN.items():
        path.write_bytes(gzip.compress(report(tools).encode("utf-8"), mtime=0))
        sys.stdout.write(f"wrote {path}\n")
