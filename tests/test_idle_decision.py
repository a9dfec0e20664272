"""The idle decision is a pure function: properties of its choice under its own cost model."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentsession.ledger.idle import GapPool, IdleSituation, away_share, decide_idle, option_costs
from agentsession.ledger.prices import PRICES, ModelPrice

SONNET = PRICES["claude-sonnet-4-6"]
GPT = PRICES["gpt-5.6-terra"]

gaps = st.lists(st.floats(1.0, 86_400.0), min_size=3, max_size=40)
lifetimes = st.sampled_from([300.0, 1800.0, 3600.0])


@st.composite
def situations(draw: st.DrawFn) -> IdleSituation:
    lifetime = draw(lifetimes)
    warm = draw(st.floats(1.0, lifetime * 0.1))
    prefix = draw(st.integers(1_000, 900_000))
    compacted = draw(st.none() | st.integers(500, prefix))
    # Anthropic at 5 minutes: a keep-warm call may lift the prefix to the hour
    lift = draw(st.sampled_from([0.0, 3600.0])) if lifetime == 300.0 else 0.0
    return IdleSituation(
        lift_lifetime=lift,
        lift_tokens=draw(st.integers(0, 20_000)),
        compact_floor=draw(st.integers(0, 400_000)),
        idle_seconds=draw(st.floats(0.0, 7200.0)),
        warm_seconds=warm,
        lifetime=lifetime,
        prefix_tokens=prefix,
        gaps=tuple(draw(gaps)),
        long_lifetime=lifetime == 3600.0,
        compacted_tokens=compacted,
    )


prices = st.sampled_from([SONNET, GPT, PRICES["claude-haiku-4-5"], PRICES["gpt-5"]])


@given(situations(), prices)
def test_the_choice_is_never_dearer_than_an_alternative(s: IdleSituation, p: ModelPrice) -> None:
    decision = decide_idle(s, p)
    assert decision.action in ("kept_warm", "compacted", "let_expire")
    chosen = decision.costs[decision.option]
    assert all(chosen <= other for other in decision.costs.values())
    assert all(math.isfinite(v) and v >= 0 for v in decision.costs.values())


@given(situations(), prices)
def test_letting_expire_costs_between_a_read_and_a_write(s: IdleSituation, p: ModelPrice) -> None:
    tokens = s.prefix_tokens / 1e6
    write = p.write_long if s.long_lifetime else p.write
    let = option_costs(s, p)["let_expire"]
    assert tokens * p.cached_input - 1e-12 <= let <= tokens * write + 1e-12


@given(situations())
def test_with_no_price_known_it_does_nothing(s: IdleSituation) -> None:
    decision = decide_idle(s, None)
    assert decision.action == "nothing" and decision.costs == {}


@given(situations(), prices)
def test_idle_longer_than_every_gap_is_judged_by_how_long_it_has_lasted(
    s: IdleSituation, p: ModelPrice
) -> None:
    # past every gap measured the gaps say nothing more: a pause that has lasted t outlasts x
    # with chance t / x, whatever the shorter gaps were
    s = replace(s, idle_seconds=max(s.gaps) + 1.0)
    shorter = replace(s, gaps=tuple(g / 2 for g in s.gaps))
    assert option_costs(s, p) == pytest.approx(option_costs(shorter, p))


def test_a_first_long_pause_of_a_large_session_is_kept_warm_for_a_while() -> None:
    # no gap measured this long yet: half the pauses that lasted 4.5 minutes end within 9
    s = IdleSituation(280.0, 20.0, 300.0, 150_000, gaps=(30.0, 40.0, 20.0, 50.0))
    assert decide_idle(s, SONNET).action == "kept_warm"


@given(situations(), prices)
def test_nothing_is_decided_while_the_cache_is_far_from_expiry(
    s: IdleSituation, p: ModelPrice
) -> None:
    early = replace(s, warm_seconds=s.lifetime * 0.5)
    late = replace(s, warm_seconds=-1.0)
    few = replace(s, gaps=s.gaps[:2])
    assert decide_idle(early, p).action == "nothing"
    assert decide_idle(late, p).action == "nothing"
    assert decide_idle(few, p).action == "nothing"


def test_short_gaps_keep_warm_and_overnight_gaps_compact_a_large_session() -> None:
    busy = IdleSituation(280.0, 20.0, 300.0, 150_000, gaps=(30, 20, 10, 400, 400, 400))
    assert decide_idle(busy, SONNET).action == "kept_warm"
    night = (30.0, 40.0, 3000.0, 40_000.0, 50_000.0)
    large = IdleSituation(280.0, 20.0, 300.0, 250_000, gaps=night, compacted_tokens=30_000)
    assert decide_idle(large, SONNET).action == "compacted"
    assert decide_idle(replace(large, compacted_tokens=None), SONNET).action == "let_expire"
    # below the floor the history is worth more than the write it saves
    assert decide_idle(replace(large, compact_floor=300_000), SONNET).action == "let_expire"


@given(situations(), prices)
def test_a_prefix_below_the_floor_is_never_compacted(s: IdleSituation, p: ModelPrice) -> None:
    below = replace(s, compact_floor=s.prefix_tokens + 1)
    assert "compacted" not in option_costs(below, p)
    assert decide_idle(below, p).action != "compacted"


@given(situations(), prices)
def test_keeping_warm_before_every_likely_request_costs_one_refresh_and_a_read(
    s: IdleSituation, p: ModelPrice
) -> None:
    # every gap longer than the idle time ends within the lifetime a refresh now gives
    step = s.lifetime - s.warm_seconds
    soon = s.idle_seconds + step / 2
    gaps = (*(g if g <= s.idle_seconds else soon for g in s.gaps), soon)
    near = replace(s, gaps=gaps)
    tokens = s.prefix_tokens / 1e6
    write = p.write_long if s.long_lifetime else p.write
    refresh = tokens * p.cached_input + s.warm_tokens / 1e6 * (write + p.output)
    assert option_costs(near, p)["kept_warm"] == pytest.approx(refresh + tokens * p.cached_input)


@given(situations(), prices)
def test_compaction_is_weighed_only_when_most_gaps_outlast_keeping_warm(
    s: IdleSituation, p: ModelPrice
) -> None:
    # a summary drops history: it may replace a rewrite, never a cache keeping warm would keep
    ratio = p.write_long / p.cached_input if s.long_lifetime else p.write / p.cached_input
    share = away_share(s, ratio)
    if "compacted" in option_costs(s, p):
        assert share >= 0.5
    elif s.compacted_tokens is not None and s.prefix_tokens >= s.compact_floor:
        assert share < 0.5


def test_a_half_hour_pause_keeps_history_that_an_overnight_one_compacts() -> None:
    # 5-minute lifetime: keeping warm pays up to about an hour (write 3.75 / read 0.30 lifetimes)
    back_soon = (30.0, 40.0, 1800.0, 1900.0, 2000.0)
    s = IdleSituation(280.0, 20.0, 300.0, 250_000, gaps=back_soon, compacted_tokens=30_000)
    assert away_share(s, SONNET.write / SONNET.cached_input) == 0.0
    assert decide_idle(s, SONNET).action == "kept_warm"
    away = replace(s, gaps=(30.0, 40.0, 40_000.0, 50_000.0, 60_000.0))
    assert away_share(away, SONNET.write / SONNET.cached_input) == 1.0
    assert decide_idle(away, SONNET).action == "compacted"


@st.composite
def pooled_situations(draw: st.DrawFn) -> IdleSituation:
    s = draw(situations())
    pooled = draw(st.lists(st.floats(1.0, 86_400.0), max_size=60))
    return replace(s, pooled_gaps=tuple(pooled), pool_share=draw(st.floats(0.0, 1.0)))


@given(pooled_situations(), prices)
def test_never_kept_warm_where_the_evidence_says_refreshing_costs_more_than_a_rewrite(
    s: IdleSituation, p: ModelPrice
) -> None:
    # every measured pause still running (own and pooled) lasts past write / read lifetimes
    # from now: keeping warm until it ends would cost more refreshes than writing again
    # (from write / read of the longest lifetime a refresh can give: a lift's, where offered)
    ratio = (p.write_long if s.long_lifetime else p.write) / p.cached_input
    reach = s.idle_seconds + s.warm_seconds + ratio * max(s.lifetime, s.lift_lifetime)
    away = replace(
        s,
        gaps=(*(g if g <= s.idle_seconds else reach + g for g in s.gaps), reach + 1.0),
        pooled_gaps=tuple(g if g <= s.idle_seconds else reach + g for g in s.pooled_gaps),
    )
    costs = option_costs(away, p)
    cheapest = min(costs["let_expire"], costs.get("compacted", math.inf))
    assert costs["kept_warm"] > cheapest and costs.get("lifted", math.inf) > cheapest
    assert decide_idle(away, p).action != "kept_warm"


@given(pooled_situations(), prices)
def test_pooled_gaps_like_the_sessions_own_change_nothing(s: IdleSituation, p: ModelPrice) -> None:
    # the pool is evidence of the same kind: more of the same evidence, the same expectation
    same = replace(s, pooled_gaps=s.gaps)
    alone = replace(s, pooled_gaps=())
    assert option_costs(same, p) == pytest.approx(option_costs(alone, p), rel=1e-9, abs=1e-12)
    assert decide_idle(replace(s, pool_share=0.0), p) == decide_idle(
        replace(s, pool_share=0.0, pooled_gaps=(1.0, 2.0, 3.0)), p
    )


@given(pooled_situations(), prices)
def test_a_new_session_is_decided_from_the_pool_alone(s: IdleSituation, p: ModelPrice) -> None:
    # fewer than three own gaps: no evidence of its own, but the runtime's other sessions
    new = replace(s, gaps=s.gaps[:2], pooled_gaps=(*s.pooled_gaps, 60.0, 600.0, 6000.0))
    assert decide_idle(new, p).action in ("kept_warm", "compacted", "let_expire")
    assert decide_idle(replace(new, pooled_gaps=()), p).action == "nothing"


def test_the_pool_judges_a_pause_longer_than_any_the_session_had() -> None:
    # the session never paused past a minute; at 4.5 minutes idle only the pool knows more
    own = (30.0, 40.0, 20.0, 50.0)
    s = IdleSituation(280.0, 20.0, 300.0, 150_000, gaps=own)
    back_soon = replace(s, pooled_gaps=(30.0,) * 20 + (360.0, 420.0, 480.0, 500.0))
    overnight = replace(s, pooled_gaps=(30.0,) * 20 + (40_000.0, 45_000.0, 50_000.0))
    assert decide_idle(back_soon, SONNET).action == "kept_warm"
    assert decide_idle(overnight, SONNET).action == "let_expire"


def test_the_session_own_gaps_keep_their_share_beside_a_large_pool() -> None:
    # the session comes back after 6 minutes every time; a pool of overnight pauses is half
    # the evidence, not all of it
    s = IdleSituation(280.0, 20.0, 300.0, 150_000, gaps=(30.0, 360.0, 370.0, 380.0))
    pool = (30.0,) * 50 + (40_000.0,) * 50
    assert decide_idle(replace(s, pooled_gaps=pool), SONNET).action == "kept_warm"
    assert decide_idle(replace(s, pooled_gaps=pool, pool_share=1.0), SONNET).action == (
        "let_expire"
    )


updates = st.lists(
    st.tuples(st.sampled_from("abcdef"), st.lists(st.floats(0.0, 1e5), max_size=8)), max_size=30
)


@given(updates, st.integers(1, 4), st.integers(1, 20), st.sampled_from("abcdefx"))
def test_the_pool_holds_the_newest_sessions_and_never_the_one_asked_about(
    done: list[tuple[str, list[float]]], sessions: int, limit: int, asked: str
) -> None:
    pool = GapPool(sessions=sessions, limit=limit)
    latest: dict[str, tuple[float, ...]] = {}
    for sid, gaps in done:
        pool.update(sid, gaps)
        latest.pop(sid, None)
        latest[sid] = tuple(gaps)  # re-inserted: the most recently updated last
    kept = list(latest.items())[-sessions:]
    expected = [g for sid, gaps in kept if sid != asked for g in gaps]
    assert pool.others(asked) == tuple(expected[-limit:])


@given(situations(), prices)
def test_a_lift_is_a_keep_warm_call_at_the_long_lifetime(s: IdleSituation, p: ModelPrice) -> None:
    decision = decide_idle(s, p)
    if decision.option == "lifted":
        assert decision.action == "kept_warm" and decision.lifetime == s.lift_lifetime
        assert s.lift_lifetime > s.lifetime
    else:
        assert decision.option == decision.action and decision.lifetime is None
    if not s.lift_lifetime:
        assert "lifted" not in option_costs(s, p)


@given(pooled_situations(), prices)
def test_offering_a_lift_changes_no_other_estimate_and_never_costs_more(
    s: IdleSituation, p: ModelPrice
) -> None:
    # the lift is one more option: the others are priced as without it, so the choice's
    # expected cost can only fall (compaction left out: its gate reads how far keeping warm
    # reaches, which a lift extends)
    lifted = replace(s, lifetime=300.0, lift_lifetime=3600.0, compacted_tokens=None)
    plain = replace(lifted, lift_lifetime=0.0)
    with_lift, without = option_costs(lifted, p), option_costs(plain, p)
    assert set(with_lift) == {*without, "lifted"}
    for key, value in without.items():
        assert with_lift[key] == pytest.approx(value, rel=1e-9, abs=1e-12)
    assert min(with_lift.values()) <= min(without.values())


@given(situations(), prices)
def test_a_lift_costs_at_least_its_call_and_a_read(s: IdleSituation, p: ModelPrice) -> None:
    s = replace(s, lifetime=300.0, lift_lifetime=3600.0)
    tokens = s.prefix_tokens / 1e6
    call = tokens * p.cached_input + (s.lift_tokens + s.warm_tokens) / 1e6 * p.write_long
    assert option_costs(s, p)["lifted"] >= call + tokens * p.cached_input - 1e-12


def test_a_session_that_pauses_for_half_an_hour_is_lifted_not_refreshed_six_times() -> None:
    # at 4.5 idle minutes its pauses past that last 40 minutes: one lift (a read and the
    # last reply written at the hour's price) beats a refresh every 4.5 minutes or a rewrite
    s = IdleSituation(
        280.0,
        20.0,
        300.0,
        150_000,
        gaps=(30.0, 2400.0, 2500.0, 2600.0),
        lift_lifetime=3600.0,
        lift_tokens=400,
    )
    decision = decide_idle(s, SONNET)
    assert decision.option == "lifted" and decision.lifetime == 3600.0
    assert decision.costs["lifted"] < decision.costs["kept_warm"] < decision.costs["let_expire"]
    # back within a few minutes: a plain refresh covers it without writing at the long price
    soon = replace(s, gaps=(30.0, 360.0, 370.0, 380.0))
    assert decide_idle(soon, SONNET).option == "kept_warm"


def test_a_pause_past_the_sessions_own_gaps_is_judged_away_by_the_pool_then_by_its_length() -> None:
    # no gap of its own ran this long: the other sessions' pauses that did decide, and past
    # every measured pause a pause of t outlasts x with chance t / x
    ratio = SONNET.write / SONNET.cached_input
    s = IdleSituation(1620.0, 180.0, 1800.0, 250_000, gaps=(30.0, 40.0, 600.0))
    reach = 1620.0 + 180.0 + ratio * 1800.0
    assert away_share(s, ratio) == pytest.approx(1620.0 / reach)
    pooled = replace(s, pooled_gaps=(30.0, 2000.0, 3000.0, 40_000.0))
    assert away_share(pooled, ratio) == pytest.approx(1 / 3)
    # with a lift offered, keeping warm reaches `ratio` long lifetimes: a night is not away
    night = replace(
        s, idle_seconds=280.0, warm_seconds=20.0, lifetime=300.0, gaps=(30.0, 40_000.0, 45_000.0)
    )
    assert away_share(night, ratio) == 1.0
    assert away_share(replace(night, lift_lifetime=3600.0), ratio) == 0.0


@given(pooled_situations(), prices)
def test_a_summary_on_offer_never_makes_waiting_dearer(s: IdleSituation, p: ModelPrice) -> None:
    # compacting at a later tick is one more choice in the stopping problem: keeping warm (or
    # lifting) now can only get cheaper for it, and letting expire now is untouched
    offered = replace(s, compacted_tokens=s.compacted_tokens or 500, compact_floor=0)
    without = option_costs(replace(offered, compacted_tokens=None), p)
    costs = option_costs(offered, p)
    assert costs["let_expire"] == pytest.approx(without["let_expire"])
    for option in ("kept_warm", "lifted"):
        if option in without:
            assert costs[option] <= without[option] * (1 + 1e-9) + 1e-12


def test_a_summary_waits_a_lifetime_for_the_users_who_come_back_soon() -> None:
    # OpenAI, 30 minutes: half the pauses still running at 27 minutes end at 40-50 minutes,
    # half overnight. Compacting now would drop the history of the first half; keeping warm
    # one more lifetime and compacting then (if the user is still away) costs less
    gaps = (30.0,) * 10 + (2400.0, 3000.0, 40_000.0, 45_000.0)
    s = IdleSituation(1620.0, 180.0, 1800.0, 250_000, gaps=gaps, compacted_tokens=40_000)
    ratio = GPT.write / GPT.cached_input
    assert away_share(s, ratio) == 0.5
    decision = decide_idle(s, GPT)
    assert decision.action == "kept_warm"
    assert decision.costs["kept_warm"] < decision.costs["compacted"]
    # one lifetime on, the pauses left are the nights: now it compacts
    later = replace(s, idle_seconds=3240.0)
    assert away_share(later, ratio) == 1.0
    assert decide_idle(later, GPT).action == "compacted"
    # where the users who return do so after hours, keeping warm until they have, then
    # compacting, beats letting the cache go now (without a later summary it would not)
    hours = replace(s, gaps=(30.0,) * 10 + (10_000.0, 12_000.0, 14_000.0, 40_000.0, 45_000.0))
    assert decide_idle(hours, GPT).action == "kept_warm"
    alone = option_costs(replace(hours, compacted_tokens=None), GPT)
    assert alone["kept_warm"] > alone["let_expire"]


def test_one_long_gap_of_its_own_does_not_make_a_pause_away() -> None:
    # the session paused once overnight, and its other pauses were short; at 27 minutes that
    # one gap alone would say "away" for certain. Fewer than three of its own gaps ran this
    # long, so the other sessions' pauses that did are counted beside it: most ended within
    # the hour, so the history stays and the cache is kept warm
    ratio = GPT.write / GPT.cached_input
    own = (30.0,) * 20 + (48_000.0,)
    pooled = (30.0,) * 40 + (2400.0, 2700.0, 3000.0, 3300.0, 4000.0, 5000.0, 40_000.0)
    s = IdleSituation(
        1620.0, 180.0, 1800.0, 250_000, gaps=own, pooled_gaps=pooled, compacted_tokens=40_000
    )
    assert away_share(s, ratio) == pytest.approx(2 / 8)
    assert decide_idle(s, GPT).action == "kept_warm"
    # three long gaps of its own, all nights: the session's habit decides alone
    habit = replace(s, gaps=(30.0,) * 20 + (40_000.0, 45_000.0, 48_000.0))
    assert away_share(habit, ratio) == 1.0
    assert decide_idle(habit, GPT).action == "compacted"
