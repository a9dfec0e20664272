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
- **lift it** (Anthropic, a session writing at 5 minutes): one keep-warm call that puts the
  breakpoint at the end of the live prefix at the hour's lifetime, so it reads ``P·r``, writes
  the last reply at the long price, and the prefix stays warm for an hour; then the same
  choice at the hour's end. The lifetime is chosen where the pause shows it is needed, not
  paid on every write (the hour's writes cost 2× input, the 5 minutes' 1.25×);
- **compact now**: the cache-reading summary call (``P·r`` in, the summary out), after which the
  next request writes the smaller prefix. Later requests reading the smaller prefix would save
  more; that saving is left out, so the model never argues for compaction on hope.

A summary drops history, which has no price; so compaction is weighed only where it replaces a
rewrite: when at least half the pauses still running like this one outlast what keeping warm
pays for (``write / read`` of the longest lifetime a refresh can give from now, past which
refreshing costs more than writing again; ``away_share``): the session's own, or where fewer
than ``MIN_IDLE_GAPS`` of them ran this long those and the pooled ones together, or past every
gap measured the scale-free rule. A user who
is likely back before then keeps the history and the warm cache. The same test is read at each
later tick of the stopping problem, so "keep warm now, compact a lifetime later if the user is
still away" is weighed beside compacting now: a pause whose early returns have not yet passed
waits for them instead of dropping their history.

The choice is the cheapest under this model; a tie goes to doing nothing (no call is made). No
price, too few measured gaps (the session's own and the pooled ones together) or no prefix:
nothing is done, and ``reason`` says why.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Literal

from .._frozen import frozen
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


@frozen
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


@frozen
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
    of the evidence (all of it while the session has measured fewer than ``MIN_IDLE_GAPS``);
    ``lift_lifetime``: a longer lifetime a keep-warm call can lift the prefix to (Anthropic's
    hour for a session that writes at 5 minutes; ``0``: none), writing ``lift_tokens`` (the
    live prefix past the cached one: the last reply) at the long write price.
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
    lift_lifetime: float = 0.0
    lift_tokens: int = 0
    kind: Literal["idle_situation"] = "idle_situation"


@frozen
class IdleDecision:
    """The action chosen, why, and the expected USD of each option weighed (empty: none was).

    ``option``: the key of ``costs`` chosen (``"lifted"`` is the action ``kept_warm`` at the
    longer lifetime); ``lifetime``: the lifetime a keep-warm call asks for (``None``: the
    session's own).
    """

    action: IdleAction
    reason: str
    costs: Mapping[str, float] = field(default_factory=dict)
    option: str = ""
    lifetime: float | None = None
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
    option = min(costs, key=lambda name: (costs[name], _PREFERENCE[name]))
    if option == "lifted":
        reason = _reason(option, costs) + f"; the prefix lifted to {s.lift_lifetime:.0f} s"
        return IdleDecision("kept_warm", reason, costs, option, s.lift_lifetime)
    chosen: IdleAction = option  # type: ignore[assignment]
    return IdleDecision(chosen, _reason(option, costs), costs, option)


_PREFERENCE = {"let_expire": 0, "kept_warm": 1, "lifted": 2, "compacted": 3}


def _reason(action: str, costs: Mapping[str, float]) -> str:
    others = ", ".join(f"{k} ${v:.4f}" for k, v in costs.items() if k != action)
    return f"{action} expected ${costs[action]:.4f} (beside {others})"


def option_costs(situation: IdleSituation, price: ModelPrice) -> dict[str, float]:
    """The expected USD of each option now: expire, keep warm, lift, compact.

    Keyed ``let_expire``, ``kept_warm``, ``lifted`` and ``compacted``.

    ``compacted`` is left out when there is nothing to compact or the prefix is below
    ``compact_floor``; ``lifted`` (a keep-warm call that lifts the prefix to
    ``lift_lifetime``) when no longer lifetime is offered.

    Args:
        situation: What the session knows now.
        price: The model's price.
    """
    s = situation
    tokens = s.prefix_tokens / 1e6
    read, write = price.cached_input, price.write_long if s.long_lifetime else price.write
    warm_call = tokens * read + s.warm_tokens / 1e6 * (write + price.output)
    ev = Evidence.of(s)
    summary = _Summary.of(s, price, read, write)
    plan = _Plan(s, ev, tokens, read, write, warm_call, summary)
    let_now, keep_now = plan.values(s.idle_seconds, max(s.lifetime - s.warm_seconds, 1.0))
    costs = {"let_expire": let_now, "kept_warm": keep_now}
    if s.lift_lifetime > s.lifetime and price.write_long > 0:
        costs["lifted"] = plan.lifted(price)
    compact = summary.at(s.idle_seconds)
    if compact < math.inf:
        costs["compacted"] = compact
    return costs


@frozen
class _Summary:
    """Compacting while warm at a pause that has lasted some time: the price, where weighed.

    The call reads the prefix and writes the summary; the next request writes the smaller
    prefix. Weighed only where the pause is more likely away than not (``away_share`` at least
    a half, read at that length of the pause), now or at a later tick of the stopping problem.
    """

    usd: float  # the call and the next request's smaller write (inf: nothing to compact)
    ratio: float  # write over read: how many lifetimes keeping warm pays for
    shares: _AwayShares | None

    @classmethod
    def of(cls, s: IdleSituation, price: ModelPrice, read: float, write: float) -> _Summary:
        ratio = write / read if read else math.inf
        if s.compacted_tokens is None or s.prefix_tokens < s.compact_floor:
            return cls(math.inf, ratio, None)
        usd = s.prefix_tokens / 1e6 * read + s.summary_tokens / 1e6 * price.output
        usd += s.compacted_tokens / 1e6 * write
        return cls(usd, ratio, _AwayShares.of(s))

    def at(self, idle: float) -> float:
        """The USD of compacting at a pause that has lasted ``idle`` (inf: not weighed there)."""
        if self.shares is None or self.shares.share(idle, self.ratio) < 0.5:
            return math.inf
        return self.usd


@frozen
class _Plan:
    """The stopping problem of one pause: keep warm, let expire or compact at each tick."""

    s: IdleSituation
    ev: Evidence
    tokens: float  # the prefix, in millions
    read: float
    write: float  # the price the next request writes the prefix at, once expired
    warm_call: float
    summary: _Summary

    def values(self, first: float, step: float) -> tuple[float, float]:
        """(let expire, keep warm) at the tick ``first``, ticks every ``step`` from there."""
        s, ev, tokens, read, write = self.s, self.ev, self.tokens, self.read, self.write
        # Backwards over the ticks t_k = first + k·step, each with ``warm_seconds`` left, as
        # far as keeping warm can pay (``write / read`` lifetimes) or the longest gap measured.
        reach = (write / read if read else 0.0) * (step + s.warm_seconds)
        end = max(ev.longest, first + reach)
        steps = min(_MAX_STEPS, max(0, math.ceil((end - first) / step)))
        # beyond: nobody keeps a cache warm forever
        later = min(tokens * write, self.summary.at(first + (steps + 1) * step))
        let_now = keep_now = tokens * write
        for k in range(steps, -1, -1):
            at = first + k * step
            hit = self.ends_within(at, s.warm_seconds)
            within = self.ends_within(at, step)
            let_now = hit * tokens * read + (1 - hit) * tokens * write
            keep_now = self.warm_call + within * tokens * read + (1 - within) * later
            # a later summary is weighed where its pause is away, as one now is
            later = min(keep_now, let_now, self.summary.at(at))
        return let_now, keep_now

    def ends_within(self, at: float, span: float) -> float:
        """The chance a pause that has lasted ``at`` ends within ``span`` more."""
        alive = self.ev.beyond(at)
        if alive > _NEGLIGIBLE:
            return (alive - self.ev.beyond(at + span)) / alive
        # Idle longer than any gap measured: a pause that has lasted ``at`` outlasts ``x``
        # with chance at / x (the scale-free rule, fitting heavy-tailed pauses).
        return span / (at + span)

    def lifted(self, price: ModelPrice) -> float:
        """A keep-warm call now that lifts the prefix to the long lifetime, then the same choice.

        The choice comes again at each long lifetime's tick (a read renews an entry for its
        own lifetime); once expired, the next request writes at the session's own price.
        """
        s = self.s
        call = self.tokens * self.read + s.warm_tokens / 1e6 * price.output
        call += (s.lift_tokens + s.warm_tokens) / 1e6 * price.write_long
        step = max(s.lift_lifetime - s.warm_seconds, 1.0)
        let_then, keep_then = self.values(s.idle_seconds + step, step)
        later = min(keep_then, let_then, self.summary.at(s.idle_seconds + step))
        within = self.ends_within(s.idle_seconds, step)
        return call + within * self.tokens * self.read + (1 - within) * later


_NEGLIGIBLE = 1e-12


@frozen
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


@frozen
class _AwayShares:
    """``away_share`` at any length of the pause, from the gaps sorted once.

    The session's own gaps still running, topped up by the pooled ones where fewer than
    ``MIN_IDLE_GAPS`` of its own ran this long.
    """

    s: IdleSituation
    own: tuple[float, ...]
    pooled: tuple[float, ...]

    @classmethod
    def of(cls, s: IdleSituation) -> _AwayShares:
        # The pool tops the session's own gaps up only where ``Evidence`` weighs it at all: a
        # ``pool_share`` of 0 leaves a session with enough gaps of its own to them alone.
        weighed = s.pool_share > 0 or (
            len(s.gaps) < MIN_IDLE_GAPS and len(s.pooled_gaps) >= MIN_IDLE_GAPS
        )
        pooled = tuple(sorted(s.pooled_gaps)) if weighed else ()
        return cls(s, tuple(sorted(s.gaps)), pooled)

    def share(self, idle: float, ratio: float) -> float:
        s = self.s
        reach = idle + s.warm_seconds + ratio * max(s.lifetime, s.lift_lifetime)
        alive = away = 0
        for source in (self.own, self.pooled):
            alive += len(source) - bisect_right(source, idle)
            away += len(source) - bisect_right(source, reach)
            if alive >= MIN_IDLE_GAPS:
                return away / alive
        if alive:
            return away / alive
        return idle / reach if reach > 0 else 1.0


def away_share(situation: IdleSituation, ratio: float) -> float:
    """The share of the pauses still running like this one that outlast keeping the cache warm.

    Keeping warm stops paying ``ratio`` (write over read price) lifetimes from now: past that,
    the refreshes cost more than writing the prefix again. The lifetime is the longest a
    keep-warm call can give (``lift_lifetime`` where offered: one lifted refresh an hour keeps
    a prefix for ``ratio`` hours). A gap longer than that means the user left; only then is the
    prefix written again whatever is done, and only then does a summary replace a rewrite
    rather than history the cache could have kept.

    The session's own gaps still running judge first: whether this user has left this
    session is its own habit (pooling them always made the rule keep warm where the session
    had never paused this long, and compact half as often). Where fewer than
    ``MIN_IDLE_GAPS`` of its own gaps ran this long (the least evidence the decision acts on),
    the other sessions' pauses that did are counted beside them (``pooled_gaps``): one
    overnight gap of its own said "away" for certain, and the session was compacted at a
    40-minute pause; past every gap measured, the scale-free rule (a pause of ``t`` outlasts
    ``x`` with chance ``t / x``). Counting such a pause as away outright compacted sessions at
    their first pause past half an hour, which most users come back from.
    """
    return _AwayShares.of(situation).share(situation.idle_seconds, ratio)


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


@frozen
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
