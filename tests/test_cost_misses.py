"""Cache misses in dollars: each provider-reported shortfall with its cause and its cost."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.ledger import (
    SHORTEST_TTL,
    Charge,
    charge_usd,
    cost_fields,
    cost_lines,
    summarize,
    unexplained,
)
from agentsession.ledger.misses import miss_usd
from agentsession.ledger.prices import price_for
from agentsession.log import Dispatch
from agentsession.request import Usage

MODEL = "claude-opus-4-8"
T0 = "2026-03-01T09:00:00+00:00"


def at(seconds: int) -> str:
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"2026-03-01T{9 + hours:02d}:{minutes:02d}:{rest:02d}+00:00"


def turn(seq: int, seconds: int, usage: Usage, diagnosis: Any = "hit", **kw: Any) -> Charge:
    return Charge(seq, MODEL, at(seconds), diagnosis, usage, sent_at=at(seconds), **kw)


WARM = Usage(input_tokens=20_000, cached_input_tokens=19_000, cache_write_tokens=1_000)
COLD = Usage(input_tokens=21_000, cache_write_tokens=21_000)


def warm(tokens: int) -> Usage:
    return Usage(input_tokens=tokens, cached_input_tokens=tokens - 1_000, cache_write_tokens=1_000)


def cold(tokens: int) -> Usage:
    return Usage(input_tokens=tokens, cache_write_tokens=tokens)


def test_each_cause_is_named() -> None:
    charges = [
        turn(1, 0, warm(20_000), "first"),
        turn(3, 20, cold(21_000)),  # nothing explains it
        turn(5, 40, warm(22_000)),
        turn(7, 40 + int(SHORTEST_TTL) + 1, cold(23_000)),  # the cache expired
        turn(9, 700, warm(24_000)),
        turn(11, 720, cold(25_000), "system_changed"),
        turn(13, 740, warm(26_000)),
        turn(15, 760, cold(15_000), "messages_changed"),  # the window moved
        turn(17, 780, warm(16_000)),
        Charge(18, MODEL, at(790), "unknown", Usage(input_tokens=5_000), purpose="compaction"),
        turn(19, 800, cold(9_000), "system_changed"),
        turn(21, 820, warm(10_000)),
        turn(23, 840, cold(11_000), provider_cache="tools_changed"),  # the provider saw a change
    ]
    summary = summarize(charges)
    assert [(m.seq, m.cause) for m in summary.misses] == [
        (3, "unexplained"),
        (7, "expired"),
        (11, "context change"),
        (15, "window move"),
        (19, "compaction"),
        (23, "context change"),
    ]
    # The unexplained ones are those the ledger already counts.
    assert [m.seq for m in summary.misses if m.cause == "unexplained"] == [
        c.seq for c in unexplained(charges)
    ]
    # A miss's tokens: what the request before sent, as far as this one still sends it.
    assert [m.tokens for m in summary.misses] == [20_000, 22_000, 24_000, 15_000, 9_000, 10_000]
    assert all(m.usd is not None and m.usd > 0 for m in summary.misses)


def test_a_miss_costs_its_excess_over_reading_the_same_tokens() -> None:
    """Missed tokens written to the cache cost the write price less the read price."""
    price = price_for(MODEL)
    assert price is not None
    before = turn(1, 0, WARM, "first")
    after = turn(3, 20, COLD)
    (miss,) = summarize([before, after]).misses
    assert miss.usd == pytest.approx(20_000 * (price.write - price.cached_input) / 1e6)
    # The same request had it read those 20,000 tokens: the bill's difference is the miss.
    hit = Usage(input_tokens=21_000, cached_input_tokens=20_000, cache_write_tokens=1_000)
    assert charge_usd(COLD, price)[0] - charge_usd(hit, price)[0] == pytest.approx(miss.usd)


@given(
    prefix=st.integers(2_000, 100_000),
    grown=st.integers(0, 5_000),
    read=st.integers(0, 100_000),
    written=st.integers(0, 100_000),
    long_share=st.floats(0, 1),
)
def test_miss_cost_is_the_bill_excess_over_the_all_hit_request(
    prefix: int, grown: int, read: int, written: int, long_share: float
) -> None:
    """Property: a miss costs what its request paid beyond the request that read the prefix.

    The missed tokens go to the writes first, then plain input; the all-hit request reads
    them and writes the rest the same way.
    """
    price = price_for(MODEL)
    assert price is not None
    total = prefix + grown
    read = min(read, prefix)
    written = min(written, total - read)
    long_written = int(written * long_share)
    usage = Usage(total, 0, read, written, long_written)
    missed = prefix - read
    # The all-hit request: the missed tokens read, taken out of the writes first.
    from_writes = min(missed, written)
    long_left = long_written - min(from_writes, long_written)
    ideal = Usage(total, 0, prefix, written - from_writes, long_left)
    excess = charge_usd(usage, price)[0] - charge_usd(ideal, price)[0]
    assert miss_usd(usage, missed, price) == pytest.approx(excess, abs=1e-12)


def test_small_shortfalls_side_calls_and_estimates_make_no_miss() -> None:
    charges = [
        turn(1, 0, WARM, "first"),
        turn(3, 20, Usage(input_tokens=20_500, cached_input_tokens=19_500)),  # within slack
        Charge(4, MODEL, at(30), "unknown", Usage(input_tokens=3_000), purpose="title"),
        turn(5, 40, COLD, estimated=True),
    ]
    assert summarize(charges).misses == ()


def refresh(seq: int, seconds: int, usage: Usage) -> Charge:
    """A keep-warm side call: its ``timestamp`` is by the runtime's clock."""
    return Charge(seq, MODEL, at(seconds), "unknown", usage, purpose="keep_warm", reason="idle")


PREFIX = 47_239  # the turn before the pause sent this much
REPLY = 24  # its reply, which a lift writes at the hour
QUESTION = 33  # the keep-warm call's question
LIFT = Usage(
    input_tokens=PREFIX + REPLY + QUESTION,
    cached_input_tokens=PREFIX,
    cache_write_tokens=REPLY,
    cache_write_long_tokens=REPLY,
)  # the breakpoint ends the live prefix: the question is sent after it, neither read nor written
REFRESH = Usage(
    input_tokens=PREFIX + REPLY + QUESTION,
    output_tokens=2,
    cached_input_tokens=PREFIX + REPLY,
    cache_write_tokens=QUESTION,
)  # the breakpoint ends the question: the entry it writes holds it; "ok" out


def test_a_miss_after_a_lift_counts_the_lifted_reply() -> None:
    """The next prompt could have read the lifted prefix, the last reply included; a miss
    after the lifted entry expired costs what the bill paid beyond reading all of it."""
    price = price_for(MODEL)
    assert price is not None
    after = cold(PREFIX + REPLY + 21)  # the next prompt, after the lifted entry expired
    for between in ([refresh(2, 270, LIFT)], [refresh(2, 270, LIFT), refresh(4, 3500, REFRESH)]):
        charges = [turn(1, 0, warm(PREFIX), "first"), *between, turn(5, 3500 + 3700, after)]
        (miss,) = summarize(charges).misses
        assert (miss.seq, miss.cause, miss.tokens) == (5, "expired", PREFIX + REPLY)
        hit = Usage(after.input_tokens, 0, PREFIX + REPLY, 21)  # the all-hit request
        assert miss.usd == pytest.approx(charge_usd(after, price)[0] - charge_usd(hit, price)[0])


def test_a_refresh_whose_entry_holds_its_question_leaves_the_entry_it_read() -> None:
    """A keep-warm call written to its end (the question inside): the next prompt can read
    what the call read, not what it wrote; and a miss shortly after a refresh is no expiry."""
    plain = Usage(PREFIX + REPLY + QUESTION, 2, PREFIX, REPLY + QUESTION)  # "ok" out
    after = cold(PREFIX + REPLY + 21)
    charges = [turn(1, 0, warm(PREFIX), "first"), refresh(2, 270, plain), turn(3, 300, after)]
    (miss,) = summarize(charges).misses
    assert (miss.cause, miss.tokens) == ("unexplained", PREFIX)
    # two minutes after a refresh that renewed the cache: not expired, whatever the pause,
    # also for a refresh whose usage is a guess; and the ledger counts it unexplained too
    for usage, estimated in ((plain, False), (LIFT, True)):
        warmed = replace(refresh(2, 3000, usage), estimated=estimated)
        charges = [turn(1, 0, warm(PREFIX), "first"), warmed, turn(3, 3120, after)]
        summary = summarize(charges)
        assert [(m.cause, m.tokens) for m in summary.misses] == [("unexplained", PREFIX)]
        assert [c.seq for c in unexplained(charges)] == [3]
        assert summary.unexplained_misses == 1
    # a refresh whose usage is a guess says nothing about what the cache held
    guessed = replace(refresh(2, 270, LIFT), estimated=True)
    charges = [turn(1, 0, warm(PREFIX), "first"), guessed, turn(3, 3000, after)]
    assert [(m.cause, m.tokens) for m in summarize(charges).misses] == [("expired", PREFIX)]
    assert unexplained(charges) == []


def test_a_miss_after_a_prewarm_counts_the_reply_it_wrote() -> None:
    """A refresh that generated nothing (OpenAI's prewarm) sent the live prefix alone, the last
    reply included: its entry is the next prompt's prefix, so a miss after it expired counts
    the reply too; a generated refresh written to its end (the question inside) does not."""
    prewarm = Usage(PREFIX + REPLY, 0, PREFIX, REPLY)
    after = cold(PREFIX + REPLY + 21)
    charges = [turn(1, 0, warm(PREFIX), "first"), refresh(2, 270, prewarm), turn(3, 7000, after)]
    (miss,) = summarize(charges).misses
    assert (miss.cause, miss.tokens) == ("expired", PREFIX + REPLY)
    asked = Usage(PREFIX + REPLY + QUESTION, 2, PREFIX, REPLY + QUESTION)
    charges[1] = refresh(2, 270, asked)
    (miss,) = summarize(charges).misses
    assert (miss.cause, miss.tokens) == ("expired", PREFIX)


def test_misses_in_cost_lines_and_fields() -> None:
    charges = [turn(1, 0, WARM, "first"), turn(3, 20, COLD), turn(5, 40, WARM)]
    summary = summarize(charges)
    (line,) = [x for x in cost_lines(summary) if x.startswith("cache misses")]
    (miss,) = summary.misses
    assert line == f"cache misses 1 cost ${miss.usd:,.4f}: unexplained 1 ${miss.usd:,.4f}"
    fields = json.loads(json.dumps(cost_fields(summary)))
    assert fields["misses"] == [
        {"seq": 3, "cause": "unexplained", "usd": miss.usd, "tokens": 20_000, "model": MODEL}
    ]
    unpriced = summarize(
        [Charge(1, "mystery", T0, "first", WARM), Charge(3, "mystery", T0, "hit", COLD)]
    )
    assert [m.usd for m in unpriced.misses] == [None]
    assert any("cache misses 1 cost no price" in x for x in cost_lines(unpriced))
    assert isinstance(summary.misses[0], ags.CacheMiss)


async def test_session_cost_lists_the_misses_of_a_session(tmp_path: Path) -> None:
    """A model that reports no cached tokens: every request after the first misses."""
    model = ags.ScriptedModel(
        ["a1", "a2", "## Goal\nsummary", "a3"],
        name="anthropic:claude-opus-4-8",
        profile=ags.ModelProfile(provider="anthropic", reports_usage=True),
    )
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        instructions="Follow the house rules. " * 400,  # every request is over the slack
        config=ags.Config(titles=False, keep_user_turns=1),
    ) as runtime:
        session = await runtime.create_session()
        await session.prompt("a question")
        await session.prompt("another question")
        assert await session.compact()
        await session.prompt("a third question")
        summary = session.cost()
        records = await session.log()
        dispatches = [r.seq for r in records if isinstance(r.entry, Dispatch)]
        (summary_seq,) = [r.seq for r in records if isinstance(r.entry, ags.log.SideCall)]
    # The summary request extends the live one: it reads nothing either, a miss of its own
    # (the local diagnosis judges no side call: unexplained, not counted among the turns').
    assert [(m.seq, m.cause) for m in summary.misses] == [
        (dispatches[1], "unexplained"),
        (summary_seq, "unexplained"),
        (dispatches[2], "compaction"),
    ]
    assert summary.unexplained_misses == 1
    price = price_for("claude-opus-4-8")
    assert price is not None
    for miss in summary.misses:
        assert miss.usd == pytest.approx(miss.tokens * (price.input - price.cached_input) / 1e6)


async def stream_kinds(session: ags.Session, text: str) -> list[ags.Event]:
    async with session.stream(text) as events:
        return [event async for event in events]


async def test_cost_alert_is_yielded_once_when_the_total_crosses(tmp_path: Path) -> None:
    model = ags.ScriptedModel(
        ["a1", "a2", "a3", "a4"],
        name="anthropic:claude-opus-4-8",
        profile=ags.ModelProfile(provider="anthropic", reports_usage=True),
    )
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        instructions="Follow the house rules. " * 400,
        config=ags.Config(titles=False),
    ) as runtime:
        probe = await runtime.create_session()
        await probe.prompt("q")
        one = probe.cost().total_usd
    assert one is not None and one > 0
    threshold = one * 1.5  # crossed by the second turn's response, not the first
    model = ags.ScriptedModel(
        ["a1", "a2", "a3"],
        name="anthropic:claude-opus-4-8",
        profile=ags.ModelProfile(provider="anthropic", reports_usage=True),
    )
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "t.db"),
        model=model,
        project_dir=tmp_path,
        instructions="Follow the house rules. " * 400,
        config=ags.Config(titles=False, cost_alert_usd=threshold),
    ) as runtime:
        session = await runtime.create_session()
        first = await stream_kinds(session, "q")
        assert not any(isinstance(e, ags.CostAlert) for e in first)
        second = await stream_kinds(session, "q")
        alerts = [e for e in second if isinstance(e, ags.CostAlert)]
        assert len(alerts) == 1
        total = session.cost().total_usd
        assert total is not None and alerts[0].total_usd == pytest.approx(total)
        assert alerts[0].threshold_usd == threshold
        # Right after the response that crossed it; the turn still ends with TurnFinished.
        at = second.index(alerts[0])
        committed = second[at - 1]
        assert isinstance(committed, ags.StepCommitted) and committed.what == "response"
        assert isinstance(second[-1], ags.TurnFinished)
        third = await stream_kinds(session, "q")  # above it already: no second alert
        assert not any(isinstance(e, ags.CostAlert) for e in third)
    for bad in (0, -1.0, True, "5", float("nan"), float("inf")):
        with pytest.raises(ags.UsageError, match="cost_alert_usd"):
            ags.Config(cost_alert_usd=bad)  # type: ignore[arg-type]


def summary_call(seq: int, seconds: int, usage: Usage, model: str = MODEL) -> Charge:
    """A compaction side call: its ``timestamp`` is by the runtime's clock, like a refresh's."""
    return Charge(seq, model, at(seconds), "unknown", usage, purpose="compaction", reason="idle")


def test_a_summary_after_expiry_is_a_miss_of_its_own() -> None:
    """The summary request that extends the live request could have read what the turn before
    (or a refresh since) left; after the lifetime it rewrote it: an ``expired`` miss with its
    own seq and cost, and the turn after it keeps the cause ``compaction``."""
    price = price_for(MODEL)
    assert price is not None
    summary = Usage(PREFIX + REPLY + QUESTION, 900, 0, PREFIX + REPLY + QUESTION)
    after = cold(9_000)
    late = int(SHORTEST_TTL) * 12  # an hour later
    charges = [
        turn(1, 0, warm(PREFIX), "first"),
        summary_call(2, late, summary),
        turn(5, late + 60, after, "system_changed"),
    ]
    misses = summarize(charges).misses
    assert [(m.seq, m.cause, m.tokens) for m in misses] == [
        (2, "expired", PREFIX),
        (5, "compaction", 9_000),
    ]
    hit = Usage(summary.input_tokens, 900, PREFIX, REPLY + QUESTION)  # the all-hit summary
    assert misses[0].usd == pytest.approx(charge_usd(summary, price)[0] - charge_usd(hit, price)[0])
    # Read in time it is no miss; after a refresh the gap counts from the refresh.
    charges[1] = summary_call(2, 60, hit)
    assert [m.seq for m in summarize(charges).misses] == [5]
    kept = [turn(1, 0, warm(PREFIX), "first"), refresh(2, late - 60, LIFT)]
    charges = [*kept, summary_call(3, late, summary), turn(5, late + 60, after)]
    assert next((m.seq, m.cause) for m in summarize(charges).misses) == (3, "unexplained")


def test_summaries_that_read_nothing_by_design_are_no_miss() -> None:
    """Another model's summary, the plain-text render (it sends less than the live request),
    and the provider's compaction (its block folded around the call) read no cache of the
    conversation's: all-hit they read nothing either."""
    from agentsession.ledger import charges_of
    from agentsession.log import ProviderCompaction, Record, SideCall, Summary

    late = int(SHORTEST_TTL) * 12
    summary = Usage(PREFIX + REPLY + QUESTION, 900, 0, PREFIX + REPLY + QUESTION)
    first = turn(1, 0, warm(PREFIX), "first")
    for call in (
        summary_call(2, late, summary, model="claude-haiku-4-5"),
        summary_call(2, late, Usage(5_000, 900)),
    ):
        assert summarize([first, call]).misses == ()
    block = Summary("s", 1, block=ProviderCompaction("openai-responses", {"type": "compaction"}))
    side = SideCall("compaction", "m", summary, timestamp=at(late))
    dispatch = Dispatch("m", 0, "d1", cache="hit", timestamp=at(0))
    answer = ags.log.AssistantEntry("a", usage=warm(PREFIX), sent_at=at(0))
    for later in ([Record(3, block), Record(4, side)], [Record(3, side), Record(4, block)]):
        records = [Record(1, dispatch), Record(2, answer), *later]
        charges = charges_of(records)
        call = next(c for c in charges if c.purpose == "compaction")
        assert call.compacted, later
        assert summarize(charges).misses == ()
    # the same call with no block is judged: an expired miss
    charges = charges_of([Record(1, dispatch), Record(2, answer), Record(3, side)])
    assert [(m.seq, m.cause) for m in summarize(charges).misses] == [(3, "expired")]
