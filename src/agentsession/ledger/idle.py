"""The idle decision: keep a session's cache warm, compact it while warm, or let it expire.

A pure function of what the session already knows: the gaps measured between its requests, how
long it has been idle, how long its cached prefix stays warm, the prefix's size and the model's
prices. It answers only near the end of the cache's lifetime (within ``horizon`` of it); before,
there is nothing to decide, and after, nothing is left to save.

The model, in USD, of the session's next request plus whatever is done meanwhile. The next gap
is drawn from the measured gaps longer than the idle time so far: the session's own, mixed with
the gaps of the other sessions the runtime tends (``pooled_gaps``, a share ``pool_share`` of
the evidence). A session's own few gaps say little about its long pauses; the runtime has seen
many, and a pause that has lasted ``t`` is judged by every measured pause that lasted as long.
Past every gap measured there is no evidence left, and the scale-free rule stands in: a pause
that has lasted ``t`` outlasts ``x`` with chance ``t / x`` (pauses are heavy-tailed; a first
long pause is then kept warm while that is likely to pay, not given up at once). With ``P`` the
prefix, ``r`` the cached read price, ``w`` the write price of the lifetime in use:

- **let it expire**: a request before the expiry reads ``P·r``, a later one writes ``P·w``;
- **keep it warm**: one small request that reads ``P·r`` now and restarts the lifetime, then
  the same choice again one lifetime later (solved backwards over the gaps measured: an
  optimal stopping rule, so "keep warm now, give up later" is weighed, and keeping warm never
  runs past ``w / r`` lifetimes, where the refreshes would cost more than writing again);
- **compact now**: the cache-reading summary call (``P·r`` in, the summary out), after which the
  next request writes the smaller prefix. Later requests reading the smaller prefix would save
  more; that saving is left out, so the model never argues for compaction on hope.

A summary drops history, which has no price; so compaction is weighed only where it replaces a
rewrite: when at least half the session's own gaps still running outlast what keeping warm pays for
(``write / read`` lifetimes from now, past which refreshing costs more than writing again;
``away_share``). A user who is likely back before then keeps the history and the warm cache.

The choice is the cheapest under this model; a tie goes to doing nothing (no call is made). No
price, too few measured gaps (the session's own and the pooled ones together) or no prefix:
nothing is done, and ``reason`` says why.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .prices import ModelPrice

__all__ = [
    "COMPACT_FLOOR",
    "MIN_IDLE_GAPS",
    "POOL_SHARE",
    "GapPool",
    "IdleAction",
    "IdleCall",
    "IdleDecision",
    "IdleOutcome",
    "IdleSituation",
    "decide_idle",
]

IdleAction = Literal["kept_warm", "compacted", "let_expire", "nothing"]

MIN_IDLE_GAPS = 3
"""Fewer gaps than this measured: no evidence of when the next request comes; nothing is done."""

COMPACT_FLOOR = 200_000
"""Tokens: below this prefix compaction is not weighed. The history a summary drops is worth
more than the cache's dollars until the session is large enough that a compaction is near
anyway; ``Runtime.tend_idle`` lowers it to half the session's token budget where that is less."""

POOL_SHARE = 0.5
"""The share of the evidence the other sessions' gaps carry beside the session's own."""

_MAX_STEPS = 400  # keep-warm lifetimes looked ahead; beyond, only expiring or compacting remain


@dataclass(frozen=True)
class IdleCall:
    """A model call the idle decision made (``Runtime.tend_idle``), as ``session.cost()`` lists it.

    ``purpose``: ``"keep_warm"`` or ``"compaction"``; ``reason``: the decision's, with the
    expected cost of each option; ``usd``: what it cost (``None``: the model has no price).
    """

    seq: int
    purpose: str
    reason: str
    usd: float | None
    kind: Literal["idle_call"] = "idle_call"


@dataclass(frozen=True)
class IdleSituation:
    """What the idle decision knows of one session, all by the runtime's clock.

    ``idle_seconds``: since the session's last request; ``warm_seconds``: how long its cached
    prefix stays warm from now (``<= 0``: already expired); ``lifetime``: the cache lifetime in
    use, ``long_lifetime`` whether it is the long one (its writes cost ``cache_write_long``);
    ``prefix_tokens``: the cached prefix; ``gaps``: seconds between the session's requests;
    ``compacted_tokens``: the prefix after a compaction (``None``: nothing to compact);
    ``summary_tokens``: the summary's expected length; ``warm_tokens``: what a keep-warm request
    adds and gets back; ``horizon``: the share of the lifetime before its end where a decision
    is made; ``compact_floor``: compaction is weighed only for a prefix at least this large;
    ``pooled_gaps``: gaps measured in the runtime's other sessions, which carry ``pool_share``
    of the evidence (all of it while the session has measured fewer than ``MIN_IDLE_GAPS``).
    """

    idle_seconds: float
    warm_seconds: float
    lifetime: float
    prefix_tokens: int
    gaps: Sequence[float] = ()
    long_lifetime: bool = False
    compacted_tokens: int | None = None
    summary_tokens: int = 1500
    warm_tokens: int = 16
    horizon: float = 0.1
    compact_floor: int = COMPACT_FLOOR
    pooled_gaps: Sequence[float] = ()
    pool_share: float = POOL_SHARE
    kind: Literal["idle_situation"] = "idle_situation"


@dataclass(frozen=True)
class IdleDecision:
    """The action chosen, why, and the expected USD of each option weighed (empty: none was)."""

    action: IdleAction
    reason: str
    costs: Mapping[str, float] = field(default_factory=dict)
    kind: Literal["idle_decision"] = "idle_decision"


def decide_idle(situation: IdleSituation, price: ModelPrice | None) -> IdleDecision:
    """The cheapest of keeping warm, compacting and letting expire, or ``nothing`` to decide.

    Args:
        situation: What the session knows now (see ``IdleSituation``).
        price: The model's price; ``None`` (no price known) decides nothing.
    """
    s = situation
    if price is None:
        return IdleDecision("nothing", "no price known for the model")
    if s.prefix_tokens <= 0 or s.lifetime <= 0:
        return IdleDecision("nothing", "no cached prefix")
    if s.warm_seconds <= 0:
        return IdleDecision("nothing", "the cache has already expired")
    if s.warm_seconds > s.horizon * s.lifetime:
        return IdleDecision("nothing", f"the cache stays warm for {s.warm_seconds:.0f} s more")
    if len(s.gaps) < MIN_IDLE_GAPS and len(s.pooled_gaps) < MIN_IDLE_GAPS:
        return IdleDecision("nothing", f"fewer than {MIN_IDLE_GAPS} gaps measured")
    costs = option_costs(s, price)
    action = min(costs, key=lambda name: (costs[name], _PREFERENCE[name]))
    chosen: IdleAction = action  # type: ignore[assignment]
    return IdleDecision(chosen, _reason(chosen, costs), costs)


_PREFERENCE = {"let_expire": 0, "kept_warm": 1, "compacted": 2}


def _reason(action: str, costs: Mapping[str, float]) -> str:
    others = ", ".join(f"{k} ${v:.4f}" for k, v in costs.items() if k != action)
    return f"{action} expected ${costs[action]:.4f} (beside {others})"


def option_costs(situation: IdleSituation, price: ModelPrice) -> dict[str, float]:
    """The expected USD of each option now: ``let_expire``, ``kept_warm`` and ``compacted``.

    ``compacted`` is left out when there is nothing to compact or the prefix is below
    ``compact_floor``.

    Args:
        situation: What the session knows now.
        price: The model's price.
    """
    s = situation
    tokens = s.prefix_tokens / 1e6
    read, write = price.cached_input, price.write_long if s.long_lifetime else price.write
    warm_call = tokens * read + s.warm_tokens / 1e6 * (write + price.output)
    ev = Evidence.of(s)
    step = max(s.lifetime - s.warm_seconds, 1.0)
    compact = math.inf
    compactable = s.compacted_tokens is not None and s.prefix_tokens >= s.compact_floor
    compactable = compactable and away_share(s, write / read if read else math.inf) >= 0.5
    if compactable and s.compacted_tokens is not None:
        compact = tokens * read + s.summary_tokens / 1e6 * price.output
        compact += s.compacted_tokens / 1e6 * write
    # Backwards over the decision points t_k = idle + k·step, each with ``warm_seconds`` left,
    # as far as keeping warm can pay (``write / read`` lifetimes) or the longest gap measured.
    end = max(ev.longest, s.idle_seconds + (write / read if read else 0.0) * s.lifetime)
    steps = min(_MAX_STEPS, max(0, math.ceil((end - s.idle_seconds) / step)))
    later = min(tokens * write, compact)  # beyond the horizon: nobody keeps a cache warm forever
    let_now = keep_now = tokens * write
    for k in range(steps, -1, -1):
        at = s.idle_seconds + k * step
        alive = ev.beyond(at)
        if alive > _NEGLIGIBLE:
            hit = (alive - ev.beyond(at + s.warm_seconds)) / alive
            within = (alive - ev.beyond(at + step)) / alive
        else:
            # Idle longer than any gap measured: a pause that has lasted ``at`` outlasts ``x``
            # with chance at / x (the scale-free rule, fitting heavy-tailed pauses).
            hit = s.warm_seconds / (at + s.warm_seconds)
            within = step / (at + step)
        let_now = hit * tokens * read + (1 - hit) * tokens * write
        keep_now = warm_call + within * tokens * read + (1 - within) * later
        # a summary may replace a rewrite, never a cache that keeping warm would keep
        later = keep_now if keep_now < let_now else min(let_now, compact)
    costs = {"let_expire": let_now, "kept_warm": keep_now}
    if compactable:
        costs["compacted"] = compact
    return costs


_NEGLIGIBLE = 1e-12


@dataclass(frozen=True)
class Evidence:
    """The measured gaps longer than the idle time, weighted: own and pooled, sorted."""

    gaps: tuple[float, ...]
    tail: tuple[float, ...]  # tail[i]: the weight of gaps[i:]

    @classmethod
    def of(cls, s: IdleSituation) -> Evidence:
        own = [g for g in s.gaps if g > s.idle_seconds]
        pooled = [g for g in s.pooled_gaps if g > s.idle_seconds]
        share = min(1.0, max(0.0, s.pool_share)) if s.pooled_gaps else 0.0
        if len(s.gaps) < MIN_IDLE_GAPS and len(s.pooled_gaps) >= MIN_IDLE_GAPS:
            share = 1.0
        # Each source's weight is its share spread over all its gaps (the shorter ones too):
        # a source where few gaps outlast the idle time says the pause is likely to end.
        weighted = sorted(
            [(g, (1 - share) / len(s.gaps)) for g in own]
            + [(g, share / len(s.pooled_gaps)) for g in pooled]
        )
        tail = [0.0] * (len(weighted) + 1)
        for i in range(len(weighted) - 1, -1, -1):
            tail[i] = tail[i + 1] + weighted[i][1]
        return cls(tuple(g for g, _ in weighted), tuple(tail))

    @property
    def longest(self) -> float:
        return self.gaps[-1] if self.gaps else 0.0

    def beyond(self, at: float) -> float:
        """The weight of the gaps longer than ``at``."""
        return self.tail[bisect_right(self.gaps, at)]


def away_share(situation: IdleSituation, ratio: float) -> float:
    """The share of the session's own gaps still running that outlast keeping the cache warm.

    Keeping warm stops paying ``ratio`` (write over read price) lifetimes from now: past that,
    the refreshes cost more than writing the prefix again. A gap longer than that means the
    user left; only then is the prefix written again whatever is done, and only then does a
    summary replace a rewrite rather than history the cache could have kept.

    Only the session's own gaps count here: whether this user has left this session is its
    own habit, and the pooled gaps (which judge how a pause of this length ends) made the rule
    keep warm where the session had never paused this long, and compact half as often.
    """
    s = situation
    survivors = [g for g in s.gaps if g > s.idle_seconds]
    if not survivors:
        return 1.0
    reach = s.idle_seconds + s.warm_seconds + ratio * s.lifetime
    return sum(g > reach for g in survivors) / len(survivors)


class GapPool:
    """The gaps of the sessions a runtime tends, by session id: the evidence they share.

    Bounded: the ``sessions`` most recently updated, and the newest ``limit`` gaps of the
    others handed to a decision, so a long-running server's pass stays as cheap as a new one's.
    """

    def __init__(self, sessions: int = 256, limit: int = 4096) -> None:
        self._gaps: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._sessions = sessions
        self._limit = limit

    def update(self, session_id: str, gaps: Sequence[float]) -> None:
        """Record a session's gaps as measured now."""
        self._gaps[session_id] = tuple(gaps)
        self._gaps.move_to_end(session_id)
        while len(self._gaps) > self._sessions:
            self._gaps.popitem(last=False)

    def others(self, session_id: str) -> tuple[float, ...]:
        """Every gap recorded for the other sessions, newest sessions' last."""
        pooled = [g for sid, gaps in self._gaps.items() if sid != session_id for g in gaps]
        return tuple(pooled[-self._limit :])


@dataclass(frozen=True)
class IdleOutcome:
    """What ``Runtime.tend_idle()`` did for one session.

    ``action``: ``"kept_warm"``, ``"compacted"``, ``"let_expire"`` or ``"nothing"``; ``reason``
    why; ``costs`` the expected USD of each option weighed; ``side_call_usd`` what the call it
    made cost (``None``: no call, or no price).
    """

    session_id: str
    action: IdleAction
    reason: str
    costs: Mapping[str, float] = field(default_factory=dict)
    side_call_usd: float | None = None
    kind: Literal["idle_outcome"] = "idle_outcome"
