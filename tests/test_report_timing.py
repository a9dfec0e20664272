"""The report's time axis: latency, time to first token, tool runs, per-turn tokens and cost.

The figures are checked three ways: on a log written by hand with known timestamps (exact
seconds), on a real session against what its stored log says (the report computes nothing the
log does not hold), and in Chromium, where a failed request's bar must be drawn red — read back
from a screenshot's pixels, not from the stylesheet.
"""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.inspection.report import render_report
from agentsession.inspection.timing import (
    attributed_turns,
    seconds_between,
    spans_by_turn,
    usage_by_turn,
)
from agentsession.ledger import charges_of
from agentsession.log import (
    AssistantEntry,
    Dispatch,
    ProviderFailed,
    Record,
    SideCall,
    ToolResultEntry,
    UserEntry,
    load_entry,
)
from agentsession.request import ToolCall, Usage

from .test_report import CHROMIUM, embedded, needs_chromium, opened_report

FIXTURE = Path(__file__).parent / "fixtures" / "log_timing_before.jsonl"
PRICE = ags.ModelPrice(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
REPORTING = ags.ModelProfile(provider="test", reports_usage=True)


def at(seconds: float) -> str:
    """A log timestamp ``seconds`` after 10:00 on 1 May 2026 (UTC, microseconds)."""
    return datetime.fromtimestamp(1_777_629_600 + seconds, UTC).isoformat(timespec="microseconds")


def hand_written_log() -> list[Record]:
    """Two turns; the first's title call is committed inside the second, as sessions do it."""
    call = ToolCall("lookup", {"key": "x"}, id="c1")
    entries: list[Any] = [
        UserEntry("first", at(0)),
        Dispatch("m", 1, "d1", "first", at(0.1)),
        AssistantEntry(
            tool_calls=(call,),
            model="m",
            usage=Usage(input_tokens=1_000, output_tokens=20),
            timestamp=at(1.6),
            first_token_at=at(0.5),
        ),
        ToolResultEntry("c1", "lookup", "v", timestamp=at(3.7), started_at=at(1.7)),
        Dispatch("m", 2, "d2", "hit", at(3.8)),
        ProviderFailed("overloaded", "TransientProviderError", at(4.05)),
        UserEntry("second", at(60)),
        SideCall("title", "m", Usage(input_tokens=300, output_tokens=4), timestamp=at(5)),
        Dispatch("m", 1, "d3", "hit", at(60.2)),
        AssistantEntry(
            content="ok",
            model="m",
            usage=Usage(input_tokens=1_100, output_tokens=5, cached_input_tokens=1_000),
            timestamp=at(61.2),
        ),
    ]
    return [Record(seq, entry) for seq, entry in enumerate(entries)]


def positional_turns(records: list[Record]) -> dict[int, int]:
    turn, out = 0, {}
    for record in records:
        turn += isinstance(record.entry, UserEntry)
        out[record.seq] = turn
    return out


def test_each_step_of_a_hand_written_log_is_timed_exactly() -> None:
    records = hand_written_log()
    turns = attributed_turns(records, positional_turns(records))
    assert turns[7] == 1  # the title call belongs to the first turn, where it was made
    spans = spans_by_turn(records, turns)
    first: list[Any] = [
        (s.kind, s.seq, s.label, s.seconds, s.first_token, s.failed) for s in spans[1]
    ]
    assert first == [
        ("request", 1, "m", pytest.approx(1.5), pytest.approx(0.4), ""),
        ("tool", 3, "lookup", pytest.approx(2.0), None, ""),
        ("request", 4, "m", pytest.approx(0.25), None, "overloaded"),
        ("side_call", 7, "title", None, None, ""),
    ]
    second = spans[2]
    timed: list[Any] = [(s.seq, s.seconds, s.first_token) for s in second]
    assert timed == [(8, pytest.approx(1.0), None)]
    usage = usage_by_turn(charges_of(records), turns, {"m": PRICE})
    assert (usage[1].input_tokens, usage[1].output_tokens, usage[1].side_calls) == (1_300, 24, 1)
    assert (usage[2].input_tokens, usage[2].cached_input_tokens) == (1_100, 1_000)
    assert usage[1].usd == pytest.approx((1_300 * 3.0 + 24 * 15.0) / 1e6)
    assert usage[2].usd == pytest.approx((100 * 3.0 + 1_000 * 0.3 + 5 * 15.0) / 1e6)
    # without a price the cost is unknown, never a made-up zero
    assert usage_by_turn(charges_of(records), turns, {})[1].usd is None


def test_a_side_call_is_never_moved_to_a_later_turn_or_before_the_first() -> None:
    records = [
        Record(0, SideCall("title", "m", timestamp=at(1))),  # before any prompt: stays
        Record(1, UserEntry("a", at(2))),
        Record(2, UserEntry("b", at(3))),
        Record(3, SideCall("keep_warm", "m", timestamp=at(9))),  # made in turn 2
        Record(4, SideCall("title", "m", timestamp="not a time")),
    ]
    turns = attributed_turns(records, positional_turns(records))
    assert (turns[0], turns[3], turns[4]) == (0, 2, 2)
    assert seconds_between(at(0), "") is None and seconds_between("x", at(0)) is None


def test_entries_stored_before_the_timing_fields_load_and_give_what_they_can() -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line]
    assert [(r["kind"], r["version"]) for r in rows] == [
        ("dispatch", 3),
        ("assistant", 3),
        ("tool_result", 1),
    ]
    entries = [load_entry(r["kind"], r["version"], json.dumps(r["data"])) for r in rows]
    answer, result = entries[1], entries[2]
    assert isinstance(answer, AssistantEntry) and answer.first_token_at == ""
    assert isinstance(result, ToolResultEntry) and result.started_at == ""
    assert answer.usage == Usage(input_tokens=100, output_tokens=5, cached_input_tokens=60)
    records = [Record(seq, entry) for seq, entry in enumerate(entries)]
    (request, tool) = spans_by_turn(records, {0: 0, 1: 0, 2: 0})[0]
    assert request.seconds == pytest.approx(1.5) and request.first_token is None
    assert (tool.seconds, tool.start) == (None, result.timestamp)


def answer(request: ags.Request) -> Any:
    names = [name for name, _ in request.system]
    if names == ["title"]:
        return "Checking records"
    last = request.messages[-1]
    if isinstance(last, ags.UserMessage) and "tool" in str(last.content):
        return [ags.ToolCall("lookup", {"key": "x"})]
    return "done"


@ags.tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"value of {key}"


async def timed_session(tmp_path: Path) -> tuple[ags.Runtime, ags.Session]:
    """Two turns with a tool; the title is made after the first and written with the second;
    then a failed request and its retry."""
    model = ags.ScriptedModel(answer, name="test-model", profile=REPORTING)
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        tools=[lookup],
        project_dir=tmp_path,
        config=ags.Config(
            titles=True, prices={"test-model": PRICE}, provider_retries=0, retry_base_delay=0
        ),
    )
    session = await runtime.create_session()
    await session.prompt("use a tool")
    await session._naming.wait()  # the title is made, and not yet written
    await session.prompt("use the tool again")
    failing = ags.ScriptedModel(
        [RuntimeError("overloaded"), "fine"], name="test-model", profile=REPORTING
    )
    await session.switch_model(failing)
    with pytest.raises(ags.ProviderError):
        await session.prompt("one more")
    await session.retry()
    return runtime, session


async def test_a_session_reports_what_its_log_holds(tmp_path: Path) -> None:
    runtime, session = await timed_session(tmp_path)
    async with runtime:
        records = await session.log()
        inspection = await session.inspect()
        cost = session.cost()
    by_seq = {r.seq: r.entry for r in records}
    # the new fields are written, in the order things happened
    answers = [e for e in by_seq.values() if isinstance(e, AssistantEntry)]
    assert all(e.first_token_at and e.first_token_at <= e.timestamp for e in answers)
    results = [e for e in by_seq.values() if isinstance(e, ToolResultEntry)]
    assert len(results) == 2
    assert all(e.started_at and e.started_at <= e.timestamp for e in results)
    # each request's latency and time to first token are its log's differences
    for request in inspection.requests:
        sent = by_seq[request.seq]
        assert isinstance(sent, Dispatch)
        after = by_seq[request.seq + 1]
        assert request.latency == seconds_between(sent.timestamp, after.timestamp)
        if isinstance(after, AssistantEntry):
            assert request.first_token == seconds_between(sent.timestamp, after.first_token_at)
        else:
            assert request.failed == "overloaded" and request.first_token is None
    # the title call is in the first turn, though committed in the second
    (title,) = [i for i in inspection.timeline if i.kind == "side_call"]
    assert title.turn == 1 and title.seq > inspection.turns[1].seq
    first, second, third = inspection.turns
    assert (first.usage.side_calls, second.usage.side_calls) == (1, 0)
    assert [s.kind for s in first.spans] == ["request", "tool", "request", "side_call"]
    assert [s.kind for s in third.spans] == ["request", "request"]
    assert third.spans[0].failed == "overloaded" and not third.spans[1].failed
    # the turns add up to the session: every charged token and dollar, once
    assert sum(t.usage.input_tokens for t in inspection.turns) == sum(
        row.input_tokens for row in cost.by_model.values()
    )
    assert cost.total_usd is not None
    assert sum(t.usage.usd or 0.0 for t in inspection.turns) == pytest.approx(cost.total_usd)


async def test_the_report_embeds_the_time_axis_and_each_turns_figures(tmp_path: Path) -> None:
    runtime, session = await timed_session(tmp_path)
    async with runtime:
        inspection = await session.inspect()
    html = render_report(inspection, generated=datetime.now(UTC).isoformat(), version="t")
    data = embedded(html)
    strings = data["strings"]
    for row, request in zip(data["requests"], inspection.requests, strict=True):
        assert row[19] == round((request.latency or 0) * 1000) and row[19] >= 0
        expected = -1 if request.first_token is None else round(request.first_token * 1000)
        assert row[20] == expected
    for (number, head, items), turn in zip(data["turns"], inspection.turns, strict=True):
        assert number == turn.number
        used = turn.usage
        assert head[4:7] == [used.input_tokens, used.cached_input_tokens, used.output_tokens]
        assert strings[head[7]] == f"${used.usd:,.4f}"
        assert head[8] == used.side_calls
        spans = head[9]
        assert [s[1] for s in spans] == [s.seq for s in turn.spans]
        for drawn, span in zip(spans, turn.spans, strict=True):
            assert strings[drawn[0]] == span.kind
            assert drawn[3] == round(seconds_between(turn.timestamp, span.start) * 1000)  # type: ignore[operator]
            assert drawn[4] == (-1 if span.seconds is None else round(span.seconds * 1000))
            assert (strings[drawn[6]] if drawn[6] >= 0 else "") == span.failed
        # the title call is drawn in the first turn's group, not in the turn that wrote it
        kinds = [strings[item[1]] for item in items]
        assert ("side_call" in kinds) == (number == 1)
    assert "<th class='num'>latency</th><th class='num'>first token</th>" in html


def pixels(png: bytes) -> list[tuple[int, int, int]]:
    """The RGB pixels of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium's screenshots
    are), decoded with the standard library."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks, head = 8, [], b""
    while at < len(png):
        size = int.from_bytes(png[at : at + 4], "big")
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + size]
        if kind == b"IHDR":
            head = body
        elif kind == b"IDAT":
            chunks.append(body)
        at += size + 12
    width, height = int.from_bytes(head[:4], "big"), int.from_bytes(head[4:8], "big")
    depth, color, interlace = head[8], head[9], head[12]
    assert (depth, interlace) == (8, 0) and color in (2, 6)
    step = 3 if color == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * step
    out: list[tuple[int, int, int]] = []
    previous = bytearray(stride)
    for y in range(height):
        filtering, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for x in range(stride):
            left = line[x - step] if x >= step else 0
            up, corner = previous[x], previous[x - step] if x >= step else 0
            if filtering == 1:
                line[x] = (line[x] + left) & 255
            elif filtering == 2:
                line[x] = (line[x] + up) & 255
            elif filtering == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif filtering == 4:
                guess = left + up - corner
                near = min(
                    (abs(guess - left), 0, left),
                    (abs(guess - up), 1, up),
                    (abs(guess - corner), 2, corner),
                )
                line[x] = (line[x] + near[2]) & 255
        out.extend(tuple(line[x : x + 3]) for x in range(0, stride, step))  # type: ignore[misc]
        previous = line
    return out


def red_share(png: bytes) -> float:
    """The share of a screenshot's pixels in the report's warning red (#b3261e)."""
    found = pixels(png)
    red = sum(abs(r - 0xB3) < 24 and abs(g - 0x26) < 24 and abs(b - 0x1E) < 24 for r, g, b in found)
    return red / len(found)


@needs_chromium
async def test_a_failed_request_is_drawn_red_in_the_waterfall(tmp_path: Path) -> None:
    async_api = pytest.importorskip("playwright.async_api")
    assert CHROMIUM is not None
    runtime, session = await timed_session(tmp_path)
    async with runtime:
        inspection = await session.inspect()
    page_path = tmp_path / "report.html"
    html = render_report(inspection, generated=datetime.now(UTC).isoformat(), version="t")
    page_path.write_text(html, encoding="utf-8")
    async with opened_report(async_api, page_path) as page:
        turn = page.locator("section.turn[data-turn='3']")
        await turn.scroll_into_view_if_needed()
        rows = turn.locator(".waterfall .span")
        assert await rows.count() == len(inspection.turns[2].spans) == 2
        failed, answered = rows.nth(0), rows.nth(1)
        assert "failed: overloaded" in (await failed.text_content() or "")
        assert "first token" in (await answered.text_content() or "")
        assert red_share(await failed.locator(".span-bar").screenshot()) > 0.5
        assert red_share(await answered.locator(".span-bar").screenshot()) < 0.05
        head = (await page.locator("section.turn[data-turn='1'] h3").text_content()) or ""
        used = inspection.turns[0].usage
        assert f"{used.input_tokens:,} tokens in" in head and "1 side call" in head
        assert f"${used.usd:,.4f}" in head
        first = page.locator("section.turn[data-turn='1'] .waterfall .span")
        assert await first.count() == 4
        assert "title (side call)" in (await first.nth(3).text_content() or "")
