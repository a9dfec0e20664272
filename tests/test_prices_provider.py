"""Prices belong to a provider and a model; ``preview_cost`` writes at the lifetime asked for.

A local server's ``gpt-4.1`` is not OpenAI's: only a first-party model string finds the shipped
list price. ``Config(prices=...)`` keys ``PROVIDER:MODEL`` price one provider's model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import agentsession as ags
from agentsession.ledger.prices import PRICES, price_for

PRICE = ags.ModelPrice(
    input=3.0, cached_input=0.3, cache_write=3.75, cache_write_long=6.0, output=15.0
)


def test_a_model_of_another_provider_has_no_list_price_unless_given_one() -> None:
    listed = PRICES["gpt-4.1"]
    assert price_for("openai:gpt-4.1") is listed
    assert price_for("openai-chat:gpt-4.1") is listed
    assert price_for("openai-responses:gpt-4.1-2025-04-14") is listed
    assert price_for("gpt-4.1") is listed  # a bare name: the vendor's list
    assert price_for("openai-compatible:http://127.0.0.1:8080/v1#gpt-4.1") is None
    assert price_for("local:gpt-4.1") is None  # a provider of the config file
    assert price_for("anthropic:gpt-4.1") is None  # the name is not Anthropic's
    assert price_for("openai:claude-opus-4-8") is None
    mine = ags.ModelPrice(input=0.1, cached_input=0.0, output=0.2)
    assert price_for("local:gpt-4.1", {"local:gpt-4.1": mine}) is mine
    assert price_for("local:gpt-4.1-2025-04-14", {"local:gpt-4.1": mine}) is mine
    assert price_for("openai:gpt-4.1", {"local:gpt-4.1": mine}) is listed
    # One's own bare key is one's word for that name at any provider.
    assert price_for("openai:gpt-4.1", {"gpt-4.1": mine}) is mine
    assert price_for("local:gpt-4.1", {"gpt-4.1": mine}) is mine
    url = "openai-compatible:http://h/v1#m"
    assert price_for(url, {url: mine}) is mine
    assert price_for(url, {"openai-compatible:m": mine}) is mine
    assert price_for("gemini:gemini-2.5-pro", {"gemini-2.5-pro": mine}) is mine


@pytest.mark.parametrize("ttl", ["5m", "1h"])
async def test_preview_cost_writes_at_the_lifetime_the_request_asks_for(
    ttl: str, tmp_path: Path
) -> None:
    profile = ags.ModelProfile(
        provider="anthropic",
        wire_format="anthropic-messages",
        reports_usage=True,
        cache_markers=True,
        cache_ttl=True,
    )
    model = ags.ScriptedModel(["one"], name="anthropic:test-model", profile=profile)
    async with ags.Runtime(
        store=ags.MemoryStore(),
        model=model,
        project_dir=tmp_path,
        config=ags.Config(titles=False, cache_ttl=ttl, prices={"anthropic:test-model": PRICE}),
    ) as runtime:
        session = await runtime.create_session()
        cold = await session.preview_cost("hello")
    assert cold.cached_tokens == 0 and cold.uncached_tokens > 0
    rate = PRICE.write_long if ttl == "1h" else PRICE.write
    assert cold.input_usd == pytest.approx(cold.uncached_tokens * rate / 1e6)
