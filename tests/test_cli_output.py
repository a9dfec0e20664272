"""The outputs of the command line, fed the events of a turn directly."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator

import agentsession as ags
from agentsession.cli.console import JsonOutput, PlainOutput, QuietOutput, TurnFigures, render
from agentsession.events import Event, ProviderRetry, StepCommitted, TextDelta, TurnFinished

RESULT = ags.PromptResult("the answer", 1, ags.Usage(1200, 30, 1000), "s1")


async def retried_turn() -> AsyncIterator[Event]:
    """A step whose first attempt streamed 18 characters, then failed and was retried."""
    yield TextDelta("the ans")
    yield TextDelta("wer, then a")
    yield ProviderRetry(1, "connection reset", discarded=18, delay=0.0)
    yield TextDelta("the answer")
    yield StepCommitted(1, 5, 5, "response")
    yield TurnFinished(RESULT)


async def test_piped_output_never_prints_discarded_text_twice() -> None:
    out, err = io.StringIO(), io.StringIO()
    output = PlainOutput(out=out, err=err)
    result = await render(retried_turn(), output)
    assert result == RESULT
    assert out.getvalue() == "the answer\n"
    assert "[provider failed, retry 1: connection reset]" in err.getvalue()


async def test_quiet_output_prints_the_reply_only() -> None:
    out, err = io.StringIO(), io.StringIO()
    output = QuietOutput(out=out, err=err)
    await render(retried_turn(), output)
    output.figures(TurnFigures(RESULT, ("hit",)))
    output.note("session s1")
    assert out.getvalue() == "the answer\n" and err.getvalue() == ""


async def test_json_output_is_one_object_per_event() -> None:
    out = io.StringIO()
    output = JsonOutput(out=out)
    await render(retried_turn(), output)
    output.figures(TurnFigures(RESULT, ("first",)))
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["kind"] for e in events] == [
        "text_delta",
        "text_delta",
        "provider_retry",
        "text_delta",
        "step_committed",
        "turn_finished",
        "figures",
    ]
    assert events[2]["discarded"] == 18
    assert events[5]["result"]["usage"]["cached_input_tokens"] == 1000
    assert events[6]["line"] == "1 request · 1,200 tokens in (1,000 cached) · 30 out · cache: first"


def test_figures_line_says_when_usage_is_estimated() -> None:
    line = TurnFigures(ags.PromptResult("x", 2, ags.Usage(10, 2)), ("first", "hit"), True).line()
    assert line == "2 requests · 10 tokens in · 2 out (estimated) · cache: first, hit"
