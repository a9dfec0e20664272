"""Misses in dollars through the real SDKs on the simulator: each has a cause, and they add up.

A short run of ``benchmarks/idle_sdk_day.py``: sessions with heavy-tailed pauses between
prompts (some past the cache's lifetime), nothing done while idle (and ``auto``, whose all-hit
run makes its calls again). The same trace with every
pause shortened to 5 seconds is the all-hit run: the same requests, every prefix read. Each miss
``session.cost().misses`` lists has a cause that is not "unexplained", and their costs add up to
what the simulator billed beyond the all-hit run (each cost is computed by the package from the
usage the SDK parsed; the excess is the simulator's own bill).
"""

from __future__ import annotations

from datetime import datetime
from types import ModuleType

import pytest

from agentsession.ledger.idle import IdleDecision, IdleSituation

from .benchmark_modules import load_benchmarks

CAUSES = {"context change", "window move", "expired", "compaction"}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    return load_benchmarks("provider_sim", "idle_sdk_day")


@pytest.mark.parametrize("shape", ["anthropic 5m", "openai"])
async def test_every_miss_has_a_cause_and_the_misses_are_the_bill_excess(
    bench: ModuleType, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = next(s for s in bench.SHAPES if s.name == shape)
    # the trace pauses past the lifetime (seed 3 does on both shapes)
    monkeypatch.setattr(bench, "FILE_TOKENS", 6_000)  # smaller files: a quicker run
    days = bench.trace(3, 2, 6)
    assert any(p > chosen.lifetime for day in days for p, _ in day)
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    never = await bench.run("never", chosen, days, clock)
    all_hit = await bench.run("all-hit", chosen, days, clock)
    assert never.misses["expired"] >= 1
    assert set(never.misses) <= CAUSES and set(all_hit.misses) <= CAUSES
    assert "expired" not in all_hit.misses
    excess = never.usd - all_hit.usd
    assert excess > 0
    assert never.miss_usd - all_hit.miss_usd == pytest.approx(excess, rel=0.005)


async def test_auto_lists_as_misses_its_bill_excess_over_the_same_calls_all_hit(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``idle_policy="auto"`` lifts prefixes to the hour and lets some expire: its all-hit run
    makes the same keep-warm and lift calls in pauses cut to seconds. Each miss of the run the
    all-hit run does not have is an expiry, and the misses add up to the bill's excess — the
    reply a lift wrote included, which the prompt after it could have read."""
    chosen = next(s for s in bench.SHAPES if s.name == "anthropic 5m")
    monkeypatch.setattr(bench, "FILE_TOKENS", 6_000)
    days = bench.trace(3, 3, 8)
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    auto = await bench.run("auto", chosen, days, clock)
    all_hit = await bench.run("auto-all-hit", chosen, days, clock, auto.script)
    assert auto.actions["lifted"] >= 1 and auto.misses["expired"] >= 1
    assert all_hit.actions["lifted"] >= 1 and "expired" not in all_hit.misses
    check = bench.miss_check(auto, all_hit)
    assert check["problems"] == []
    assert check["listed_usd"] == pytest.approx(check["excess_usd"], rel=1e-4)


@pytest.mark.parametrize("shape", ["openai"])
async def test_a_summary_after_the_lifetime_lists_its_miss(
    bench: ModuleType, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``compact54`` compacts 54 minutes into a pause, past the cache's lifetime: its summary
    request rewrites the whole prefix. The miss is listed with the summary call's seq as an
    expiry (its all-hit run, compacting at once, reads it), and the misses add up to the
    bill's excess — they listed about half of it while only turns were judged."""
    chosen = next(s for s in bench.SHAPES if s.name == shape)
    monkeypatch.setattr(bench, "FILE_TOKENS", 6_000)

    def compact_any(situation: IdleSituation, price: object) -> IdleDecision:
        # the fixed rule's 200K tokens would take full-size reads: any history will do here
        if situation.compacted_tokens is not None:
            return IdleDecision("compacted", "compact54: idle 54 minutes")
        return IdleDecision("nothing", "compact54: nothing to summarise")

    monkeypatch.setattr(bench, "compact_rule", compact_any)
    days = bench.trace(3, 3, 8)
    assert any(p > 54 * 60 for day in days for p, _ in day)
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    run = await bench.run("compact54", chosen, days, clock)
    all_hit = await bench.run("compact54-all-hit", chosen, days, clock, run.script)
    assert run.actions["compacted"] >= 1 and all_hit.actions["compacted"] >= 1
    check = bench.miss_check(run, all_hit)
    assert check["problems"] == []
    assert check["listed_usd"] == pytest.approx(check["excess_usd"], rel=1e-4)
