"""Sessions through the real SDKs against the provider-cache simulator of ``benchmarks/``.

A shorter run of ``benchmarks/provider_cache.py`` (its figures are in the benchmarks README): on
each wire shape the provider-reported cache share is high, no cache miss goes unexplained, and
``session.cost()`` is the simulator's own bill (the title call included), and ``preview_cost``
matches the billed input of the request that follows it, before every turn.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from .benchmark_modules import load_benchmarks


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    return load_benchmarks("provider_sim", "provider_cache")


@pytest.mark.parametrize("shape", ["openai-chat", "openai-responses", "anthropic"])
async def test_the_simulated_provider_bills_what_the_session_counts(
    bench: ModuleType, shape: str
) -> None:
    # 55 turns: a date change (the night expires every cache), an AGENTS.md edit, a preset
    # switch, a plugin value, two skill loads and window moves at cap 60.
    # Default config: every reply streams, and the model names the session (one more call).
    results = await bench.run_all(55, [shape])
    figures = results[shape]
    assert figures["requests"] == 111 == figures["streamed_requests"]
    assert figures["side_calls"] == ["title"] and figures["title"]
    assert figures["unexplained_misses"] == 0
    assert figures["session_cost_usd"] == pytest.approx(figures["simulator_bill_usd"], rel=0.01)
    assert figures["cached_share"] >= 0.9
    assert figures["session_cached_share"] == pytest.approx(figures["cached_share"])
    # the provider counts the tokens where it can (1%); Chat Completions is counted locally (5%)
    # before every turn, warm or cold, after context changes, skill loads and window moves
    assert figures["previews"] == 55
    assert figures["preview_difference_max"] < (0.05 if shape == "openai-chat" else 0.01)
    assert figures["preview_counted_by"] == ("local" if shape == "openai-chat" else "provider")


async def test_a_preview_on_openais_automatic_cache_expects_reads_in_steps(
    bench: ModuleType,
) -> None:
    # gpt-4.1 caches every prefix by itself and reads it in steps of 128 tokens from 1,024 on:
    # expecting the whole previous input to be read was off by up to 127 tokens at every warm
    # turn, and expecting nothing after a window move missed the tools and instructions read.
    results = await bench.run_all(55, ["openai-chat-auto"])
    figures = results["openai-chat-auto"]
    assert figures["unexplained_misses"] == 0
    assert figures["session_cost_usd"] == pytest.approx(figures["simulator_bill_usd"], rel=0.01)
    assert figures["previews"] == 55
    assert figures["preview_difference_warm_max"] < 0.05
    warm = figures["preview_worst"]["warm"]
    assert warm["preview_cached"] % 128 == 0
