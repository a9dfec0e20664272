"""OpenAI's 12-hour retention as a lift: a prewarm asking for ``prompt_cache_options.ttl`` "12h".

On Responses with GPT-5.6 and later the keep-warm call is a prewarm; at a pause where it pays
the decision lifts the live prefix to the 12-hour retention, as it lifts Anthropic's to the
hour. Checked on the lowered body (the SDK's ``PromptCacheOptions``), on the usage split by
retention and its price, in the decision, and through the official SDK on the provider
simulator: a lifted prefix is read by the prompt two hours on, past the 30 minutes.
"""

from __future__ import annotations

import tempfile
import typing
from datetime import datetime, timedelta
from types import ModuleType

import pytest

import agentsession as ags
from agentsession.config import ModelPrice
from agentsession.ledger import charge_usd
from agentsession.ledger.idle import IdleSituation, decide_idle
from agentsession.ledger.prices import PRICES
from agentsession.providers.cache_controls import CacheControls
from agentsession.providers.cache_policy import OPENAI_LIFT_TTL, lift_lifetime
from agentsession.providers.openai_compact import long_writes
from agentsession.providers.profiles import profile_for
from agentsession.providers.wire import controlled
from agentsession.request import AssistantMessage, Request, Usage, UserMessage

from .benchmark_modules import load_benchmarks, sim_runtime, spied_simulator

TERRA = profile_for("openai", "gpt-5.6-terra")
LIVE = Request(
    system=(("core.agent", "You help with code."),),
    messages=(UserMessage("fix it"), AssistantMessage("Done."), UserMessage("now the tests")),
)
LIFT = CacheControls(prewarm=True, lift=True)


def test_a_lift_asks_responses_for_the_12_hour_retention() -> None:
    from openai.types.responses import response_create_params

    body = controlled(LIVE, "openai-responses", TERRA, "gpt-5.6-terra", LIFT)
    options = body["prompt_cache_options"]
    assert options == {"prewarm": True, "ttl": "12h"}
    declared = typing.get_type_hints(response_create_params.PromptCacheOptions)
    assert set(options) <= set(declared)
    assert "12h" in typing.get_args(declared["ttl"])
    plain = controlled(LIVE, "openai-responses", TERRA, "gpt-5.6-terra", CacheControls())
    assert body["input"] == plain["input"]  # the live request itself


def test_only_responses_on_explicit_caching_models_lift_to_12_hours() -> None:
    chat = profile_for("openai", "gpt-5.6-terra", wire_format="openai-chat")
    older = profile_for("openai", "gpt-4.1")
    assert lift_lifetime(TERRA) == OPENAI_LIFT_TTL == 12 * 3600
    assert lift_lifetime(chat) == lift_lifetime(older) == 0
    assert lift_lifetime(profile_for("anthropic", "claude-opus-4-8")) == 3600
    body = controlled(LIVE, "openai-chat", chat, "gpt-5.6-terra", LIFT)
    assert "prompt_cache_options" not in body


def test_12_hour_writes_are_read_and_priced_at_the_long_write_price() -> None:
    from openai.types.responses import ResponseUsage

    usage = ResponseUsage.model_validate(
        {
            "input_tokens": 1000,
            "input_tokens_details": {
                "cached_tokens": 900,
                "cache_write_tokens": 100,
                "cache_write_tokens_details": {"ttl_30m_tokens": 30, "ttl_12h_tokens": 70},
            },
            "output_tokens": 0,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 1000,
        }
    )
    assert long_writes(usage.input_tokens_details) == 70
    ours = Usage(
        input_tokens=1000,
        cached_input_tokens=900,
        cache_write_tokens=100,
        cache_write_long_tokens=70,
    )
    shipped = PRICES["gpt-5.6-terra"]
    assert shipped.write_long == shipped.write  # one documented write rate, whatever the lifetime
    dearer = ModelPrice(
        input=1.0, cached_input=0.1, output=8.0, cache_write=1.25, cache_write_long=3
    )
    usd, _ = charge_usd(ours, dearer)
    assert usd == pytest.approx((900 * 0.1 + 30 * 1.25 + 70 * 3) / 1e6)


def test_the_decision_lifts_where_pauses_run_for_hours() -> None:
    situation = IdleSituation(
        idle_seconds=1650,
        warm_seconds=150,
        lifetime=1800,
        prefix_tokens=150_000,
        gaps=(40, 60, 7200, 9000, 30, 8000),
        warm_tokens=0,
        lift_lifetime=OPENAI_LIFT_TTL,
        lift_tokens=300,
    )
    decision = decide_idle(situation, PRICES["gpt-5.6-terra"])
    assert decision.option == "lifted", decision.reason
    assert decision.lifetime == OPENAI_LIFT_TTL
    # without the lift the same pause is only kept warm (or let go)
    plain = decide_idle(
        IdleSituation(**{**situation.__dict__, "lift_lifetime": 0.0}), PRICES["gpt-5.6-terra"]
    )
    assert plain.option != "lifted"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    pytest.importorskip("openai")
    return load_benchmarks("provider_sim", "idle_sdk_day")


#: Two quick prompts, then pauses of two hours: the pauses a 12-hour lift pays for.
HOURS_PAUSES = (0, 30, 7200, 7300, 7400)


async def test_a_lift_keeps_the_prefix_warm_past_30_minutes(bench: ModuleType) -> None:
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    sim, bodies = spied_simulator(bench, clock)
    with bench.running(sim) as url, tempfile.TemporaryDirectory() as tmp:
        model = ags.get_model("openai:gpt-5.6-terra", base_url=f"{url}/v1", api_key="sim")
        config = ags.Config(titles=False, idle_policy="auto")
        async with sim_runtime(bench, model, tmp, clock, config) as runtime:
            session = await runtime.create_session()
            for n, pause in enumerate(HOURS_PAUSES):
                clock["now"] += timedelta(seconds=pause)
                await session.prompt(f"question {n}")
            clock["now"] += timedelta(seconds=1621)
            outcome = (await runtime.tend_idle([session]))[session.id]
            refresh = bodies[-1]
            ledger = session._guard.writer.ledger
            lifted = [c for c in ledger.charges() if c.purpose == "keep_warm"][-1]
            assert ledger.ttl_seconds == OPENAI_LIFT_TTL
            clock["now"] += timedelta(seconds=7200 - 1621)
            await session.prompt("back after two hours")
    assert outcome.action == "kept_warm" and "lifted" in outcome.reason, outcome.reason
    assert refresh["prompt_cache_options"] == {"prewarm": True, "ttl": "12h"}
    assert lifted.usage is not None and lifted.usage.output_tokens == 0
    assert 0 < lifted.usage.cache_write_long_tokens == lifted.usage.cache_write_tokens
    total, read, _, long = sim.details[-1]
    assert read >= 0.9 * total  # two hours on, past 30 minutes: the lifted prefix is read
    assert long == 0  # the conversation's own requests write at 30 minutes


async def test_the_simulator_refuses_12_hours_where_the_sdk_does_not_offer_it(
    bench: ModuleType,
) -> None:
    import openai

    sim = bench.Simulator(bench.policy, bench.SIM_PRICES, lambda: datetime(2026, 3, 1))
    with bench.running(sim) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sim")
        with pytest.raises(openai.BadRequestError):
            await client.responses.create(
                model="gpt-4.1", input="hello " * 300, prompt_cache_options={"ttl": "12h"}
            )
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(
                model="gpt-5.6-terra",
                messages=[{"role": "user", "content": "hello " * 300}],
                extra_body={"prompt_cache_options": {"ttl": "12h"}},
            )
        done = await client.responses.create(
            model="gpt-5.6-terra",
            input="hello " * 300,
            prompt_cache_options={"prewarm": True, "ttl": "12h"},
        )
    assert done.usage is not None
    details = done.usage.input_tokens_details
    split = details.cache_write_tokens_details
    assert split is not None and split.ttl_12h_tokens == details.cache_write_tokens > 0
