"""``cache_ttl="auto"`` weighs the lift when the session's idle time is tended.

With ``idle_policy="auto"`` a pause between the lifetimes does not rewrite a 5-minute prefix:
a keep-warm call lifts it to the hour for one read and the next request reads it. The hour is
asked for on every write only where it still costs less than that.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.engine.next_controls import cache_controls
from agentsession.ledger import Ledger
from agentsession.providers.cache_policy import choose_ttl, expected_cost

SHORT, LONG = 300.0, 3600.0


def spelled_out(gaps: list[float], ratio: float) -> float:
    """The 5-minute lifetime with lifts, gap by gap: a read within 5 minutes; within the hour
    the cheaper of a lift's read and the next read, or writing everything again; past the hour
    everything again."""
    costs = []
    for gap in gaps:
        rewrite = 1.25 * (1 + ratio)
        if gap <= SHORT:
            costs.append(0.1 + 1.25 * ratio)
        elif gap <= LONG:
            costs.append(min(0.2 + 1.25 * ratio, rewrite))
        else:
            costs.append(rewrite)
    return sum(costs) / len(costs) if costs else 0.0


def test_a_tended_session_writes_at_5_minutes_where_its_long_pauses_can_be_lifted() -> None:
    gaps = [30.0] * 10 + [1200.0] * 10  # half within a turn, half 20-minute pauses
    assert choose_ttl("auto", gaps, 0.1) == "1h"  # without a lift every pause rewrites
    assert choose_ttl("auto", gaps, 0.1, lift=True) == "5m"
    # every pause 20 minutes and little new per request: the hour still costs less
    assert choose_ttl("auto", [1200.0] * 10, 0.05, lift=True) == "1h"
    # the settings that are not "auto" are what they say
    assert choose_ttl("1h", gaps, 0.1, lift=True) == "1h"
    assert choose_ttl("5m", [1200.0] * 10, 0.05, lift=True) == "5m"


@given(st.lists(st.floats(1.0, 20_000.0), max_size=40), st.floats(0.0, 3.0))
def test_the_lift_is_the_cost_model_it_states_and_never_argues_for_the_hour(
    gaps: list[float], ratio: float
) -> None:
    lifted = expected_cost("5m", gaps, ratio, lift=True)
    assert abs(lifted - spelled_out(gaps, ratio)) < 1e-9
    assert lifted <= expected_cost("5m", gaps, ratio) + 1e-12
    assert expected_cost("1h", gaps, ratio, lift=True) == expected_cost("1h", gaps, ratio)
    if choose_ttl("auto", gaps, ratio, lift=True) == "1h":
        assert choose_ttl("auto", gaps, ratio) == "1h"


async def test_the_next_request_asks_for_the_lifetime_the_idle_policy_makes_cheaper(
    tmp_path: Path,
) -> None:
    ledger = Ledger()
    ledger.stored_response_id = "msg_0"
    moment = datetime(2026, 3, 1, 9, 0)
    ledger.note(moment)
    for gap in [30.0, 1200.0] * 5:
        moment += timedelta(seconds=gap)
        ledger.note(moment)
    store = ags.SQLiteStore(tmp_path / "s.db")
    asked = {}
    for policy in ("off", "auto"):
        config = ags.Config(cache_ttl="auto", idle_policy=policy)
        asked[policy] = (await cache_controls(config, ledger, store, "s")).ttl
    assert asked == {"off": "1h", "auto": "5m"}
