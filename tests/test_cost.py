"""The cost ledger: prices with their sources, ``session.cost()``, ``preview_cost()``, misses.

Sessions run the scripted model with a profile that reports usage (its figures are then taken
as the provider's) or without one (its figures are guesses: estimated).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.ledger import SHORTFALL_SLACK, Charge, charge_usd, summarize, unexplained
from agentsession.ledger.prices import PRICES, price_for
from agentsession.log import VERSIONS, AssistantEntry, dump_entry, load_entry
from agentsession.request import Usage

from .store.wrappers import CountingStore

PRICE = ags.ModelPrice(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
REPORTING = ags.ModelProfile(provider="test", reports_usage=True)


def test_every_shipped_price_names_its_source_and_date() -> None:
    assert PRICES
    for name, price in PRICES.items():
        assert price.source.startswith("https://"), name
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.date), name
        datetime.strptime(price.date, "%Y-%m-%d")
        assert price.cached_input < price.input <= price.write <= price.write_long, name


def test_prices_are_found_by_model_string_bare_name_and_dated_variant() -> None:
    shipped = PRICES["claude-opus-4-8"]
    assert price_for("anthropic:claude-opus-4-8") is shipped
    assert price_for("claude-opus-4-8-20261001") is shipped
    assert price_for("openai:gpt-4.1-2025-04-14") is PRICES["gpt-4.1"]
    assert price_for("openai:gpt-4.1-mini") is PRICES["gpt-4.1-mini"]
    assert price_for("openai:gpt-9-unknown") is None
    assert price_for("scripted") is None
    mine = ags.ModelPrice(input=1, cached_input=0.1, output=2)
    assert price_for("anthropic:claude-opus-4-8", {"claude-opus-4-8": mine}) is mine
    assert price_for("openai-compatible:http://h/v1#qwen", {"qwen": mine}) is mine
    assert price_for("x:model", {"x:model": mine}) is mine


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "3", True])
def test_a_bad_price_is_a_clear_error(bad: object) -> None:
    with pytest.raises(ags.UsageError, match=r"ModelPrice\.input"):
        ags.ModelPrice(input=bad, cached_input=0, output=0)  # type: ignore[arg-type]


def test_config_checks_prices_and_ttl() -> None:
    with pytest.raises(ags.UsageError, match="cache_ttl"):
        ags.Config(cache_ttl="10m")
    with pytest.raises(ags.UsageError, match="prices"):
        ags.Config(prices={"m": {"input": 1}})  # type: ignore[dict-item]


def test_a_charge_bills_each_kind_of_token_at_its_price() -> None:
    price = ags.ModelPrice(
        input=2.0, cached_input=0.5, cache_write=2.5, cache_write_long=4.0, output=10.0
    )
    usage = Usage(
        input_tokens=10_000,
        output_tokens=1_000,
        cached_input_tokens=6_000,
        cache_write_tokens=3_000,
        cache_write_long_tokens=1_000,
    )
    billed, uncached = charge_usd(usage, price)
    assert billed == pytest.approx(
        (1_000 * 2.0 + 6_000 * 0.5 + 2_000 * 2.5 + 1_000 * 4.0 + 1_000 * 10.0) / 1e6
    )
    assert uncached == pytest.approx((10_000 * 2.0 + 1_000 * 10.0) / 1e6)


@given(
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**5),
)
def test_caching_never_costs_more_than_the_writes_premium(
    fresh: int, cached: int, written: int, output: int
) -> None:
    usage = Usage(fresh + cached + written, output, cached, written)
    billed, uncached = charge_usd(usage, PRICE)
    premium = written * (PRICE.write - PRICE.input) / 1e6
    assert billed <= uncached + premium + 1e-12
    assert billed >= 0


def charge(
    n: int, cached: int, sent: int, *, at: float, local: str = "hit", prov: str = ""
) -> Charge:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return Charge(
        n,
        "m",
        (start + timedelta(seconds=at)).isoformat(),
        local,  # type: ignore[arg-type]
        Usage(sent, 10, cached),
        provider_cache=prov,
    )


def test_unexplained_misses_are_shortfalls_nothing_explains() -> None:
    first = charge(0, 0, 10_000, at=0)
    warm = charge(1, 10_000, 11_000, at=10)
    cold = charge(2, 0, 12_000, at=20)
    assert unexplained([first, warm]) == []
    assert unexplained([first, warm, cold]) == [cold]
    small = charge(2, 11_000 - SHORTFALL_SLACK, 12_000, at=20)
    assert unexplained([first, warm, small]) == []
    moved = charge(2, 0, 12_000, at=20, local="messages_changed")
    assert unexplained([first, warm, moved]) == []
    told = charge(2, 0, 12_000, at=20, prov="system_changed")
    assert unexplained([first, warm, told]) == []
    expired = charge(2, 0, 12_000, at=10 + 301)
    assert unexplained([first, warm, expired]) == []
    summary = summarize([first, warm, cold], {"m": PRICE})
    assert summary.unexplained_misses == 1


def runtime_for(
    store: ags.Store, model: ags.Model, tmp_path: Path, **config: object
) -> ags.Runtime:
    return ags.Runtime(
        store=store,
        model=model,
        project_dir=tmp_path,
        config=ags.Config(titles=False, **config),  # type: ignore[arg-type]
    )


def expected_total(entries: list[AssistantEntry], price: ags.ModelPrice) -> float:
    return sum(
        (e.usage.input_tokens * price.input + e.usage.output_tokens * price.output) / 1e6
        for e in entries
    )


async def test_session_cost_sums_the_reported_usage(tmp_path: Path) -> None:
    model = ags.ScriptedModel(["one", "two", "three"], name="test-model", profile=REPORTING)
    runtime = runtime_for(
        ags.SQLiteStore(tmp_path / "s.db"), model, tmp_path, prices={"test-model": PRICE}
    )
    async with runtime:
        session = await runtime.create_session()
        for text in ("a", "b", "c"):
            await session.prompt(text)
        summary = session.cost()
        entries = [r.entry for r in await session.log() if isinstance(r.entry, AssistantEntry)]
    assert summary.requests == 3 and summary.estimated == 0
    assert summary.total_usd == pytest.approx(expected_total(entries, PRICE))
    assert summary.uncached_usd == pytest.approx(summary.total_usd)  # nothing was cached
    assert summary.saved_usd == pytest.approx(0.0)
    row = summary.by_model["test-model"]
    assert row.requests == 3
    assert row.input_tokens == sum(e.usage.input_tokens for e in entries) > 0
    # a new process reads the same ledger from the store
    async with runtime_for(
        ags.SQLiteStore(tmp_path / "s.db"), model, tmp_path, prices={"test-model": PRICE}
    ) as again:
        reopened = await again.open_session(session.id)
        assert reopened.cost() == summary


async def test_a_store_that_cannot_read_now_gives_the_ledger_at_open(tmp_path: Path) -> None:
    inner = ags.MemoryStore()
    model = ags.ScriptedModel(["one", "two"], name="test-model", profile=REPORTING)
    async with runtime_for(
        CountingStore(inner), model, tmp_path, prices={"test-model": PRICE}
    ) as rt:
        session = await rt.create_session()
        await session.prompt("a")
        first = session.cost()
        reopened = await rt.open_session(session.id)
        assert reopened.cost() == first
        await reopened.prompt("b")
        assert reopened.cost().requests == 2
        assert reopened.cost().total_usd > first.total_usd  # type: ignore[operator]


async def test_no_price_gives_none_never_a_guess(tmp_path: Path) -> None:
    model = ags.ScriptedModel(["one"], name="unpriced-model", profile=REPORTING)
    async with runtime_for(ags.MemoryStore(), model, tmp_path) as runtime:
        session = await runtime.create_session()
        await session.prompt("a")
        summary = session.cost()
        estimate = await session.preview_cost("next")
    assert summary.total_usd is None and summary.saved_usd is None
    assert summary.no_price == ("unpriced-model",)
    assert summary.by_model["unpriced-model"].input_tokens > 0
    assert estimate.input_usd is None and estimate.reason == "no price"
    assert estimate.uncached_tokens > 0


async def test_guessed_usage_is_marked_estimated(tmp_path: Path) -> None:
    model = ags.ScriptedModel(["one", "two"])
    async with runtime_for(ags.MemoryStore(), model, tmp_path) as runtime:
        session = await runtime.create_session()
        await session.prompt("a")
        await session.prompt("b")
        assert session.cost().estimated == 2
        entries = [r.entry for r in await session.log() if isinstance(r.entry, AssistantEntry)]
    assert all(e.usage_estimated for e in entries)


async def test_preview_cost_expects_the_warm_prefix_within_its_lifetime(tmp_path: Path) -> None:
    moment = [datetime(2026, 1, 1, 9, 0).astimezone()]
    model = ags.ScriptedModel(["one", "two"], name="test-model", profile=REPORTING)
    runtime = ags.Runtime(
        store=ags.MemoryStore(),
        model=model,
        project_dir=tmp_path,
        clock=lambda: moment[0],
        config=ags.Config(titles=False, prices={"test-model": PRICE}),
    )
    async with runtime:
        session = await runtime.create_session()
        cold = await session.preview_cost("hello")
        assert cold.cached_tokens == 0 and cold.uncached_tokens > 0
        assert cold.input_usd == pytest.approx(cold.uncached_tokens * PRICE.write / 1e6)
        await session.prompt("hello")
        sent = [r.entry for r in await session.log() if isinstance(r.entry, AssistantEntry)][-1]
        warm = await session.preview_cost("and more")
        assert warm.cached_tokens == sent.usage.input_tokens
        assert warm.input_usd == pytest.approx(
            (warm.cached_tokens * PRICE.cached_input + warm.uncached_tokens * PRICE.write) / 1e6
        )
        assert warm.input_usd is not None and cold.input_usd is not None
        assert warm.input_usd < cold.input_usd + warm.uncached_tokens * PRICE.write / 1e6
        moment[0] += timedelta(minutes=6)  # past the shortest lifetime
        expired = await session.preview_cost("and more")
        assert expired.cached_tokens == 0
        assert expired.uncached_tokens == warm.cached_tokens + warm.uncached_tokens


def test_response_entries_are_version_2_and_version_1_still_loads() -> None:
    entry = AssistantEntry(
        content="hi",
        model="m",
        usage=Usage(100, 5, 60, 30, 10),
        response_id="msg_1",
        provider_cache="system_changed",
        usage_estimated=True,
        sent_at="2026-01-01T09:00:00+00:00",
    )
    kind, version, data = dump_entry(entry)
    assert (kind, version) == ("assistant", VERSIONS["assistant"])
    assert load_entry(kind, version, data) == entry
    old = '{"content": "hi", "model": "m", "usage": {"input_tokens": 7}, "kind": "assistant"}'
    loaded = load_entry("assistant", 1, old)
    assert isinstance(loaded, AssistantEntry)
    assert loaded.usage == Usage(input_tokens=7)
    assert (loaded.response_id, loaded.provider_cache, loaded.sent_at) == ("", "", "")
    assert not loaded.usage_estimated


def test_a_response_completes_its_dispatch_charge_field_by_field() -> None:
    from agentsession.ledger import charges_of
    from agentsession.log import Dispatch, Record, SideCall

    usage = Usage(input_tokens=900, output_tokens=40, cached_input_tokens=512)
    records = [
        Record(1, Dispatch("m", 0, "d1", cache="hit", timestamp="t1")),
        Record(2, SideCall("title", "m2", Usage(input_tokens=5), timestamp="t2")),
        Record(
            3,
            AssistantEntry(
                "hi",
                model="m",
                usage=usage,
                response_id="r1",
                provider_cache="messages_changed",
                sent_at="s1",
            ),
        ),
        Record(4, AssistantEntry("stray", usage=usage)),  # no dispatch left to answer
    ]
    charges = charges_of(records)
    assert charges[0] == Charge(
        1, "m", "t1", "hit", usage, False, "messages_changed", "r1", "s1", "turn"
    )
    assert charges[1].purpose == "title" and charges[1].usage == Usage(input_tokens=5)
    assert len(charges) == 2


def test_openais_automatic_cache_is_expected_in_steps_of_128_tokens() -> None:
    from agentsession.engine.costs import _automatic, _in_steps
    from agentsession.providers import profile_for

    automatic = profile_for("openai", "gpt-4.1", wire_format="openai-chat")
    explicit = profile_for("openai", "gpt-5.6-terra", wire_format="openai-chat")
    anthropic = profile_for("anthropic", "claude-opus-4-8")
    assert _automatic(automatic) and not _automatic(explicit) and not _automatic(anthropic)
    assert [_in_steps(n, automatic) for n in (1_023, 1_024, 1_151, 1_152, 9_000)] == [
        0,
        1_024,
        1_024,
        1_152,
        8_960,
    ]
    # breakpoints and Anthropic's markers are read exactly where they end
    assert _in_steps(1_151, explicit) == 1_151 and _in_steps(1_151, anthropic) == 1_151
