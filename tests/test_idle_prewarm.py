"""A keep-warm call that generates nothing: OpenAI Responses' ``prompt_cache_options.prewarm``.

On GPT-5.6 and later, a Responses request with ``prewarm`` "prepares the prompt cache without
generating output". The keep-warm call there is the live request itself, prewarmed: it reads
the live prefix's entry and renews it, with no question written and no reply billed. Checked on
the lowered body (the options are the SDK's ``PromptCacheOptions``), through the official SDK on
the provider simulator (the refresh's usage, the prompt after a long pause reading the prefix,
Chat Completions and earlier models keeping the question), in the ledger's price, and in the
decision (a cheaper refresh never makes keeping warm dearer).
"""

from __future__ import annotations

import tempfile
import typing
from dataclasses import replace
from datetime import datetime, timedelta
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.engine.idle import prewarms
from agentsession.ledger import charge_usd
from agentsession.ledger.idle import IdleSituation, option_costs
from agentsession.ledger.prices import PRICES
from agentsession.log import SideCall
from agentsession.providers.cache_controls import CacheControls, offers_prewarm
from agentsession.providers.profiles import profile_for
from agentsession.providers.wire import controlled
from agentsession.request import AssistantMessage, Request, Usage, UserMessage

from .benchmark_modules import load_benchmarks, prompted_with_pauses, sim_runtime, spied_simulator

TERRA = profile_for("openai", "gpt-5.6-terra")
LIVE = Request(
    system=(("core.agent", "You help with code."),),
    messages=(UserMessage("fix it"), AssistantMessage("Done."), UserMessage("now the tests")),
)


def test_a_prewarm_asks_the_responses_api_for_the_cache_alone() -> None:
    from openai.types.responses import response_create_params

    body = controlled(LIVE, "openai-responses", TERRA, "gpt-5.6-terra", CacheControls(prewarm=True))
    options = body["prompt_cache_options"]
    assert options["prewarm"] is True
    # the SDK's own type of the field: every key it declares, with a value it allows
    declared = typing.get_type_hints(response_create_params.PromptCacheOptions)
    assert set(options) <= set(declared)
    assert declared["prewarm"] is bool
    plain = controlled(LIVE, "openai-responses", TERRA, "gpt-5.6-terra", CacheControls())
    assert "prewarm" not in plain.get("prompt_cache_options", {})
    # the request is otherwise the live one: same input, same breakpoints
    assert body["input"] == plain["input"]


def test_only_responses_on_explicit_caching_models_prewarm() -> None:
    chat = profile_for("openai", "gpt-5.6-terra", wire_format="openai-chat")
    older = profile_for("openai", "gpt-4.1")
    assert offers_prewarm("openai-responses", TERRA)
    assert not offers_prewarm("openai-chat", chat)
    assert not offers_prewarm("openai-responses", older)
    assert not offers_prewarm("anthropic-messages", profile_for("anthropic", "claude-opus-4-8"))
    body = controlled(LIVE, "openai-chat", chat, "gpt-5.6-terra", CacheControls(prewarm=True))
    assert "prompt_cache_options" not in body
    body = controlled(LIVE, "openai-responses", older, "gpt-4.1", CacheControls(prewarm=True))
    assert "prompt_cache_options" not in body


def test_the_ledger_prices_a_prewarm_as_its_reads() -> None:
    price = PRICES["gpt-5.6-terra"]
    usage = Usage(input_tokens=120_000, cached_input_tokens=120_000)
    usd, _ = charge_usd(usage, price)
    assert usd == pytest.approx(120_000 / 1e6 * price.cached_input)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    pytest.importorskip("openai")
    return load_benchmarks("provider_sim", "idle_sdk_day")


async def refreshed_then_resumed(
    bench: ModuleType, spec: str, *, streaming: bool = False
) -> tuple[ags.IdleOutcome, SideCall, tuple[int, ...], dict[str, Any]]:
    """Prompts with 40-minute pauses, a pass at 27 idle minutes, the prompt 40 minutes on.

    Returns the pass's outcome, its side call, the simulator's (input, read, written) of the
    resumed prompt's request, and the body the simulator answered for the refresh.
    """
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    sim, bodies = spied_simulator(bench, clock)
    with bench.running(sim) as url, tempfile.TemporaryDirectory() as tmp:
        model = ags.get_model(spec, base_url=f"{url}/v1", api_key="sim", streaming=streaming)
        runtime = sim_runtime(
            bench, model, tmp, clock, ags.Config(titles=False, idle_policy="auto")
        )
        async with runtime:
            session = await runtime.create_session()
            await prompted_with_pauses(session, clock)
            clock["now"] += timedelta(seconds=1621)
            outcome = (await runtime.tend_idle([session]))[session.id]
            refresh = bodies[-1]
            calls = [c for c in session._guard.writer.ledger.charges() if c.purpose == "keep_warm"]
            clock["now"] += timedelta(seconds=2400 - 1621)
            await session.prompt("back after 40 minutes")
            usage = calls[-1].usage
            assert usage is not None
            call = SideCall("keep_warm", calls[-1].model, usage)
            return outcome, call, sim.details[-1][:3], refresh


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_prewarm_renews_the_live_prefix_and_bills_no_output(
    bench: ModuleType, streaming: bool
) -> None:
    outcome, call, (total, read, _), refresh = await refreshed_then_resumed(
        bench, "openai:gpt-5.6-terra", streaming=streaming
    )
    assert outcome.action == "kept_warm", outcome.reason
    assert refresh["prompt_cache_options"]["prewarm"] is True
    assert "single word" not in str(refresh["input"][-1])  # the live request, nothing appended
    assert call.usage is not None
    assert call.usage.output_tokens == 0
    # the live prefix read; only the last reply (a few tokens, which the next prompt would
    # write anyway) written
    assert call.usage.cached_input_tokens >= 0.99 * call.usage.input_tokens > 0
    assert call.usage.cache_write_tokens == call.usage.input_tokens - call.usage.cached_input_tokens
    assert call.usage.cache_write_tokens < 20
    assert read >= 0.9 * total  # the prompt 40 minutes on reads what the prewarm renewed


async def test_chat_completions_keeps_the_question(bench: ModuleType) -> None:
    outcome, call, (total, read, _), refresh = await refreshed_then_resumed(
        bench, "openai-chat:gpt-5.6-terra"
    )
    assert outcome.action == "kept_warm", outcome.reason
    assert "prompt_cache_options" not in refresh
    assert "single word" in str(refresh["messages"][-1])
    assert call.usage is not None and call.usage.output_tokens > 0
    assert read >= 0.9 * total


async def test_the_simulator_refuses_a_prewarm_before_gpt_5_6(bench: ModuleType) -> None:
    import openai

    sim = bench.Simulator(bench.policy, bench.SIM_PRICES, lambda: datetime(2026, 3, 1))
    with bench.running(sim) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sim")
        with pytest.raises(openai.BadRequestError):
            await client.responses.create(
                model="gpt-4.1",
                input="hello " * 300,
                prompt_cache_options={"prewarm": True},
            )
        done = await client.responses.create(
            model="gpt-5.6-terra", input="hello " * 300, prompt_cache_options={"prewarm": True}
        )
    assert done.output == [] and done.usage is not None and done.usage.output_tokens == 0
    assert done.usage.input_tokens_details.cache_write_tokens == done.usage.input_tokens


def test_prewarms_follows_the_model_profile() -> None:
    assert prewarms(ags.get_model("openai:gpt-5.6-terra", api_key="x"))
    assert not prewarms(ags.get_model("openai-chat:gpt-5.6-terra", api_key="x"))


@settings(max_examples=60, deadline=None)
@given(
    prefix=st.integers(10_000, 800_000),
    warm=st.integers(1, 64),
    gaps=st.lists(st.floats(20, 60_000), min_size=3, max_size=12),
    idle=st.floats(1600, 1790),
)
def test_a_smaller_refresh_never_makes_keeping_warm_dearer(
    prefix: int, warm: int, gaps: list[float], idle: float
) -> None:
    situation = IdleSituation(
        idle_seconds=idle,
        warm_seconds=1800 - idle,
        lifetime=1800,
        prefix_tokens=prefix,
        gaps=tuple(gaps),
        warm_tokens=warm,
    )
    price = PRICES["gpt-5.6-terra"]
    asked = option_costs(situation, price)
    prewarmed = option_costs(replace(situation, warm_tokens=0), price)
    assert prewarmed["kept_warm"] <= asked["kept_warm"] + 1e-12
    assert prewarmed["let_expire"] == pytest.approx(asked["let_expire"])
