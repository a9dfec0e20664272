"""Lifting a prefix to the long lifetime at a pause: the request's breakpoints, and the cache.

A session writing at Anthropic's 5 minutes whose pauses run past them may be kept warm by one
call that lifts its prefix to the hour (``CacheControls.lift``): the newest breakpoint moves
from the keep-warm question to the end of the live prefix, every breakpoint at the long
lifetime (Anthropic refuses a long one after a short one). Checked on the lowered body, and
through the official SDK on the provider simulator: the prompt 40 minutes later reads the
prefix the lift left, where without it the same prompt writes it again.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from datetime import datetime, timedelta
from types import ModuleType
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.engine.idle import situation_of
from agentsession.ledger import Charge
from agentsession.ledger.idle import IdleSituation, decide_idle
from agentsession.ledger.prices import PRICES
from agentsession.providers.cache_controls import CacheControls
from agentsession.providers.profiles import profile_for
from agentsession.providers.wire import controlled
from agentsession.request import AssistantMessage, Request, Usage, UserMessage

from .benchmark_modules import load_benchmarks, prompted_with_pauses, sim_runtime

PROFILE = profile_for("anthropic", "claude-opus-4-8")
LIVE = Request(
    system=(("core.agent", "You help with code."),),
    messages=(UserMessage("fix it"), AssistantMessage("Done."), UserMessage("(pause) ok?")),
)


def marks(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, cache_control) of every breakpoint, in prefix order."""
    found = [("tools", t["cache_control"]) for t in body.get("tools", []) if "cache_control" in t]
    found += [("system", b["cache_control"]) for b in body["system"] if "cache_control" in b]
    for message in body["messages"]:
        for block in message["content"]:
            if "cache_control" in block:
                found.append((message["role"], block["cache_control"]))
    return found


def test_a_lift_marks_the_end_of_the_live_prefix_at_the_long_lifetime() -> None:
    fmt = "anthropic-messages"
    plain = controlled(LIVE, fmt, PROFILE, "claude-opus-4-8", CacheControls(ttl="5m"))
    assert marks(plain)[-1] == ("user", {"type": "ephemeral"})  # on the question
    lift = CacheControls(ttl="1h", lift=True)
    body = controlled(LIVE, fmt, PROFILE, "claude-opus-4-8", lift)
    found = marks(body)
    assert found[-1][0] == "assistant"  # the live prefix's end: the last reply
    assert all("cache_control" not in b for b in body["messages"][-1]["content"])
    assert all(control.get("ttl") == "1h" for _, control in found)
    assert len(found) == len(marks(plain))  # moved, not added: still within four


def test_a_lift_leaves_a_request_without_a_reply_before_the_question_alone() -> None:
    alone = Request(system=LIVE.system, messages=(UserMessage("only a question"),))
    lift = CacheControls(ttl="1h", lift=True)
    body = controlled(alone, "anthropic-messages", PROFILE, "claude-opus-4-8", lift)
    assert [where for where, _ in marks(body)][-1] == "user"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    pytest.importorskip("anthropic")
    return load_benchmarks("provider_sim", "idle_sdk_day")


async def resumed_after_a_pause(bench: ModuleType, policy: str) -> tuple[str, tuple[int, ...]]:
    """Prompts with 40-minute pauses, a pass at 4.5 idle minutes, the prompt 40 minutes on.

    Returns what the pass did and the simulator's (input, read, written 5 min, written 1 h)
    of the resumed prompt's request.
    """
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    sim = bench.Simulator(bench.policy, bench.SIM_PRICES, lambda: clock["now"])
    with bench.running(sim) as url, tempfile.TemporaryDirectory() as tmp:
        model = ags.get_model("anthropic:claude-opus-4-8", base_url=url, api_key="sim")
        config = ags.Config(titles=False, cache_ttl="5m", idle_policy=policy)
        runtime = sim_runtime(bench, model, tmp, clock, config)
        async with runtime:
            session = await runtime.create_session()
            await prompted_with_pauses(session, clock)
            clock["now"] += timedelta(seconds=271)
            outcome = (await runtime.tend_idle([session]))[session.id]
            clock["now"] += timedelta(seconds=2400 - 271)
            await session.prompt("back after 40 minutes")
            return outcome.action + " " + outcome.reason, sim.details[-1]


async def test_a_lifted_prefix_is_read_by_the_prompt_after_a_long_pause(bench: ModuleType) -> None:
    did, (total, read, _, _) = await resumed_after_a_pause(bench, "auto")
    assert did.startswith("kept_warm") and "lifted" in did
    assert read >= 0.9 * total
    did, (total, read, written, _) = await resumed_after_a_pause(bench, "off")
    assert did.startswith("nothing")
    assert read == 0 and written >= 0.9 * total


def charge(at: datetime, purpose: Literal["turn", "keep_warm"], usage: Usage) -> Charge:
    moment = at.isoformat()
    return Charge(0, "m", moment, "unknown", usage, sent_at=moment, purpose=purpose)


START = datetime(2026, 3, 1, 9, 0).astimezone()


def lifted_at(start: datetime = START, *, lifted: bool = True) -> list[Charge]:
    """Four turns 30 s apart, then at 360 s a refresh that lifted the prefix (or did not)."""
    turn = Usage(input_tokens=20_000, output_tokens=300)
    charges = [charge(start + timedelta(seconds=s), "turn", turn) for s in (0, 30, 60, 90)]
    refresh = Usage(
        input_tokens=20_320,
        cached_input_tokens=20_000,
        cache_write_tokens=320,
        cache_write_long_tokens=320 if lifted else 0,
    )
    return [*charges, charge(start + timedelta(seconds=360), "keep_warm", refresh)]


def seen_at(charges: list[Charge], seconds: float, **given: Any) -> IdleSituation:
    """What the decision sees ``seconds`` after the first turn (nothing to compact)."""
    found = situation_of(
        charges,
        clock_now=START + timedelta(seconds=seconds),
        last_touch=None,
        compacted_tokens=None,
        **given,
    )
    assert found is not None
    return found


def test_a_lift_in_the_log_is_the_lifetime_a_process_opening_the_session_sees() -> None:
    seen = seen_at(lifted_at(), 1200, lifetime=300.0, lift_lifetime=3600.0)
    # lifted 14 minutes ago: warm for 46 more, no lift left to offer, writes still at 5 minutes
    assert seen.lifetime == 3600.0 and seen.warm_seconds == pytest.approx(3600.0 - 840.0)
    assert seen.lift_lifetime == 0.0 and not seen.long_lifetime
    again = seen_at(lifted_at(lifted=False), 1200, lifetime=300.0, lift_lifetime=3600.0)
    assert again.lifetime == 300.0 and again.lift_lifetime == 3600.0
    assert again.lift_tokens == 300  # the last reply, which a lift would write


@pytest.mark.parametrize("asked", [300.0, 3600.0])  # the ledger's, before or after the lift
def test_a_lifted_hour_is_refreshed_inside_the_sessions_own_window(asked: float) -> None:
    # A session writing at 5 minutes is tended by a timer ticking inside their last tenth
    # (30 s). Its lifted hour is decided in the same 30 s, not in the hour's last six minutes:
    # a refresh at 54 minutes paid for an hour every 54 minutes.
    price = PRICES["claude-sonnet-4-6"]

    def seen(after_lift: float) -> IdleSituation:
        given = {"lifetime": asked, "lift_lifetime": 3600.0, "own_lifetime": 300.0}
        found = seen_at(lifted_at(), 360 + after_lift, **given)
        assert found.lifetime == 3600.0
        return replace(found, gaps=(30.0, 40.0, 50.0))

    assert seen(0).horizon * seen(0).lifetime == pytest.approx(30.0)
    early = decide_idle(seen(3241.0), price)
    assert early.action == "nothing" and "stays warm" in early.reason
    late = decide_idle(seen(3571.0), price)
    assert late.action != "nothing"


@pytest.mark.parametrize(
    ("lifted", "lifetime", "given"),
    [
        # written at the hour (nothing to lift), refreshed at 5 minutes, or one lifetime (OpenAI)
        (True, 3600.0, {"lift_lifetime": 3600.0, "own_lifetime": 3600.0}),
        (False, 300.0, {"lift_lifetime": 3600.0, "own_lifetime": 300.0}),
        (False, 1800.0, {"own_lifetime": 1800.0}),
    ],
)
def test_the_window_is_unchanged_without_a_lift(
    lifted: bool, lifetime: float, given: dict[str, float]
) -> None:
    found = seen_at(lifted_at(lifted=lifted), 600, lifetime=lifetime, **given)
    assert found.lifetime == lifetime
    assert found.horizon == IdleSituation.horizon


@given(
    st.floats(0.0, 7200.0),
    st.booleans(),
    st.sampled_from([300.0, 3600.0]),
    st.sampled_from([0.0, 3600.0]),
)
def test_the_decision_window_is_never_wider_than_the_sessions_own(
    after: float, lifted: bool, own: float, lift: float
) -> None:
    given = {"lifetime": own, "lift_lifetime": lift, "own_lifetime": own}
    found = seen_at(lifted_at(lifted=lifted), 360 + after, **given)
    window = found.horizon * found.lifetime
    assert window == pytest.approx(IdleSituation.horizon * own)
    # a lift raised the lifetime only where one was offered above the session's own
    assert found.lifetime == (lift if lifted and lift > own else own)
