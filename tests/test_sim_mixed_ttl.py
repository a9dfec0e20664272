"""Mixed cache lifetimes in one Anthropic request, as the provider simulator models them.

Anthropic documents that one request may carry 1-hour and 5-minute breakpoints if every 1-hour
one comes before the 5-minute ones, and bills it by three positions: the prefix read (A), the
last 1-hour breakpoint after it (B), the last breakpoint (C) — a read of A, a 1-hour write of
B - A and a 5-minute write of C - B. Each breakpoint's entry lives its own lifetime, so after
ten minutes the same request reads up to B and writes the rest again.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from .benchmark_modules import load_benchmarks

MODEL = "claude-opus-4-8"


PRICE = {"input": 5.0, "cached": 0.5, "write": 6.25, "write_long": 10.0, "output": 25.0}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmarks("provider_sim")


def text(chars: int, ttl: str | None = None, fill: str = "x") -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": fill * chars}
    if ttl is not None:
        block["cache_control"] = {"type": "ephemeral"} | ({"ttl": ttl} if ttl == "1h" else {})
    return block


def body(*marks: str | None) -> dict[str, Any]:
    """System, history and newest turn, each about 2,000 tokens, marked as given."""
    system, history, newest = marks
    return {
        "model": MODEL,
        "max_tokens": 100,
        "system": [text(8_000, system, "s")],
        "messages": [
            {"role": "user", "content": [text(8_000, None, "u")]},
            {"role": "assistant", "content": [text(8_000, history, "a")]},
            {"role": "user", "content": [text(8_000, newest, "n")]},
        ],
    }


def simulator(bench: ModuleType, clock: dict[str, datetime]) -> Any:
    return bench.Simulator(
        lambda shape, said, tool_turn: bench.Reply(text="ok"),
        {MODEL: bench.Price(**PRICE)},
        lambda: clock["now"],
    )


def usage(answer: dict[str, Any]) -> tuple[int, int, int, int]:
    """(input, read, written at 5 minutes, written at the hour) of an answer."""
    u = answer["usage"]
    total = u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
    split = u["cache_creation"]
    return (
        total,
        u["cache_read_input_tokens"],
        split["ephemeral_5m_input_tokens"],
        split["ephemeral_1h_input_tokens"],
    )


def test_a_request_mixing_lifetimes_is_billed_by_the_three_positions(bench: ModuleType) -> None:
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    sim = simulator(bench, clock)
    mixed = body("1h", "1h", "5m")
    total, read, w5, w1 = usage(sim.anthropic(mixed))
    newest = total - w1
    assert read == 0 and w1 > 0 and w5 == newest > 1_000  # B - A at the hour, C - B at 5 min
    # Ten minutes later the 5-minute entry is gone, the 1-hour one is read (and renewed).
    clock["now"] += timedelta(minutes=10)
    assert usage(sim.anthropic(mixed)) == (total, w1, newest, 0)
    # Fifty minutes after that the renewed hour still holds the history.
    clock["now"] += timedelta(minutes=50)
    assert usage(sim.anthropic(mixed)) == (total, w1, newest, 0)
    # Past an hour from the last read nothing is left.
    clock["now"] += timedelta(minutes=61)
    assert usage(sim.anthropic(mixed)) == (total, 0, newest, w1)
    # The bill: two full writes split by lifetime, two reads of the hour's prefix.
    out = sim.bills["anthropic"].output_tokens
    expected = 2 * (w1 * PRICE["write_long"] + newest * PRICE["write"])
    expected += 2 * (w1 * PRICE["cached"] + newest * PRICE["write"]) + out * PRICE["output"]
    assert sim.bills["anthropic"].usd == pytest.approx(expected / 1e6)


def test_a_one_hour_breakpoint_after_a_five_minute_one_is_refused(bench: ModuleType) -> None:
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    sim = simulator(bench, clock)
    with pytest.raises(bench.SimulatedRefusal, match="1-hour"):
        sim.anthropic(body("5m", "1h", None))
    with pytest.raises(bench.SimulatedRefusal, match="1-hour"):
        sim.anthropic(body("1h", "5m", "1h"))
    assert "anthropic" not in sim.bills  # nothing billed, nothing cached
    assert sim.cache.entries == {}
