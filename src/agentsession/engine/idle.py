"""Tending an idle session: what the idle decision sees of it, and the keep-warm call.

``situation_of`` reads the session's charges (the gaps between its requests by the runtime's
clock, the prefix its last request sent) and the cache lifetime its last request asked for;
each decision records the session's gaps in the runtime's ``GapPool`` (``SessionDeps``) and
weighs how pauses of this length ended in the other sessions (a session's own few gaps say
little about its long pauses);
``keep_warm`` makes the smallest request that refreshes the provider's cache: the conversation's
request exactly as last admitted (read from the cache) with a one-word question appended, sent
with the session's cache key and lifetime (or, when the decision lifts the prefix to the long
lifetime, with the breakpoint at the live prefix's end at that lifetime, so the entry the next
prompt reads lives that long). Where the provider prepares a cache without generating output
(OpenAI Responses' ``prompt_cache_options.prewarm``, ``offers_prewarm``) the refresh is the
request as last admitted alone, prewarmed: it reads the live prefix and renews it, with no
question written and no reply billed. It is a ``SideCall`` with purpose ``"keep_warm"``
and the decision's reason, billed like any other call. The session (``Session._tend_idle``)
holds the session exclusively around both, so a running or approval-waiting session, or one
another process leases, is never touched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import datetime
from itertools import pairwise

from ..errors import AgentSessionError
from ..ledger import LONGEST_TTL, Charge, charge_usd
from ..ledger.idle import COMPACT_FLOOR, IdleDecision, IdleOutcome, IdleSituation, decide_idle
from ..ledger.prices import ModelPrice, price_for
from ..log import SideCall, now
from ..providers.base import Model
from ..providers.cache_controls import offers_prewarm
from ..providers.cache_policy import cache_lifetime, choose_ttl, lift_lifetime
from ..request import Request, UserMessage, text_of
from .admission import Admitter
from .deps import SessionDeps
from .guard import Guard
from .summary_call import cached_call
from .writer import LogWriter

__all__ = [
    "KEEP_WARM_QUESTION",
    "Decide",
    "IdleOutcome",
    "keep_warm",
    "prewarms",
    "situation_of",
    "tend",
]

Decide = Callable[[IdleSituation, ModelPrice | None], IdleDecision]
"""An idle decision rule: ``decide_idle`` by default; a benchmark passes a fixed rule."""

KEEP_WARM_QUESTION = "(A pause while the user is away, at {at}. Reply with the single word: ok)"
"""Appended to the live request so the refresh costs a few tokens out, whatever the provider.

It names the moment of the refresh, so no two refreshes send the same request: a provider
reads the longest prefix it holds, and a second identical refresh would read (and renew) the
first one's entry — the live prefix plus this question — instead of the live prefix the next
prompt needs (seen on the simulator: the prompt after two refreshes found its prefix expired).
"""


def prewarms(model: Model) -> bool:
    """Whether ``model``'s keep-warm call is a prewarm: the live request, no output generated."""
    return offers_prewarm(model.profile.wire_format, model.profile)


def _moment(charge: Charge) -> datetime | None:
    try:
        return datetime.fromisoformat(charge.sent_at or charge.timestamp)
    except ValueError:
        return None


def situation_of(
    charges: Sequence[Charge],
    *,
    clock_now: datetime,
    last_touch: datetime | None,
    lifetime: float,
    compacted_tokens: int | None,
    long_writes: bool | None = None,
    lift_lifetime: float = 0.0,
    own_lifetime: float | None = None,
) -> IdleSituation | None:
    """What the idle decision knows of a session; ``None`` when no request was answered.

    After a lift the decision window (``horizon``) stays as many seconds as the session's own
    lifetime gives it: the application's timer already ticks inside that window (a tenth of
    five minutes), so a lifted hour is refreshed half a minute before it ends, not six
    minutes (a tenth of the hour), which paid for an hour every 54 minutes.

    Args:
        charges: The session's charges, oldest first.
        clock_now: Now, by the runtime's clock.
        last_touch: When the cache was last read or written (a keep-warm call included), if
            known; else the last request's time.
        lifetime: The cache lifetime the last request asked for, in seconds.
        compacted_tokens: The prefix after a compaction (``None``: nothing to compact).
        long_writes: Whether the next request writes at the long lifetime's price (``None``:
            whether ``lifetime`` is the long one).
        lift_lifetime: A longer lifetime a keep-warm call can lift the prefix to (``0``: none).
        own_lifetime: The lifetime the session's own requests ask for, where a lift may have
            raised the cache's (``None``: ``lifetime``).
    """
    turns = [c for c in charges if c.purpose == "turn" and c.usage is not None]
    if not turns:
        return None
    moments = [m for m in (_moment(c) for c in turns) if m is not None]
    if not moments:
        return None
    last = moments[-1]
    # A refresh recorded in the log restarts the lifetime too: a process that opened the
    # session after another kept it warm must not refresh it again.
    refreshes = [c for c in charges if c.purpose == "keep_warm"]
    refreshed = [_moment(c) for c in refreshes]
    touched = max([last, *(m for m in (*refreshed, last_touch) if m is not None)])
    asked = lifetime
    lifted = [c for c in refreshes if (m := _moment(c)) is not None and m > last]
    if any(c.usage is not None and c.usage.cache_write_long_tokens for c in lifted):
        # a refresh since the last request lifted the prefix to the long lifetime
        lifetime = max(lifetime, lift_lifetime)
    usage = turns[-1].usage
    assert usage is not None
    horizon = IdleSituation.horizon
    own = asked if own_lifetime is None else own_lifetime
    if 0 < own < lifetime <= lift_lifetime:  # lifted: the window of the session's own lifetime
        horizon *= own / lifetime
    return IdleSituation(
        idle_seconds=(clock_now - last).total_seconds(),
        horizon=horizon,
        warm_seconds=lifetime - (clock_now - touched).total_seconds(),
        lifetime=lifetime,
        prefix_tokens=usage.input_tokens,
        gaps=tuple((b - a).total_seconds() for a, b in pairwise(moments)),
        long_lifetime=asked >= LONGEST_TTL if long_writes is None else long_writes,
        compacted_tokens=compacted_tokens,
        lift_lifetime=lift_lifetime if lift_lifetime > lifetime else 0.0,
        # the live prefix past the cached one: the last reply, which a lift writes
        lift_tokens=usage.output_tokens,
    )


def _stamp(moment: datetime | str) -> str:
    return moment if isinstance(moment, str) else moment.isoformat(timespec="seconds")


async def keep_warm(
    deps: SessionDeps,
    writer: LogWriter,
    model: Model,
    rebuild: Callable[[Model], Awaitable[Request]],
    reason: str,
    *,
    lift: bool = False,
) -> SideCall:
    """Refresh the provider's cache of the session's prefix; the billed call, committed.

    ``lift``: lift the live prefix to the long lifetime (Anthropic's hour, OpenAI's 12 hours)
    on the way: the breakpoint at its end, at that lifetime (OpenAI: a prewarm asking for the
    12-hour retention), so the call writes the last reply at the long price and the entry the
    next prompt reads lives the long lifetime from now.

    Args:
        deps: The session's dependencies (config, clock).
        writer: The session's log writer (its ledger notes the refresh).
        model: The session's model.
        rebuild: Rebuilds the request as last admitted.
        reason: Why, recorded with the call.
        lift: Lift the prefix to the long lifetime.

    Raises:
        UsageError: The last request cannot be rebuilt.
        ProviderError: The provider failed (nothing is recorded).
    """
    live = await rebuild(model)
    moment = deps.clock() if deps.clock is not None else now()
    prewarm = prewarms(model)
    if prewarm:
        # Nothing is appended: the provider reads the live prefix's own entry (the longest it
        # holds) and renews it, so two prewarms in a row renew the same entry; a lift asks it
        # to retain the live prefix 12 hours (its last reply written there at that retention).
        request = live
    else:
        question = KEEP_WARM_QUESTION.format(at=_stamp(moment))
        request = Request(
            system=live.system,
            messages=(*live.messages, UserMessage(question)),
            tools=live.tools,
            sources=(*live.sources, ()),
        )
    done = await cached_call(deps, writer, model, request, lift=lift, prewarm=prewarm)
    if deps.clock is not None:
        writer.ledger.note(deps.clock())  # the cache's lifetime starts again now
    if lift:
        # until the next request asks for its own
        writer.ledger.ttl_seconds = lift_lifetime(model.profile)
    call = SideCall(
        "keep_warm",
        done.model or model.name,
        done.usage,
        usage_estimated=not model.profile.reports_usage,
        # by the runtime's clock, like a request's ``sent_at``: the refresh restarts the lifetime
        timestamp=_stamp(moment),
        reason=reason,
    )
    await writer.append([call])
    return call


async def tend(
    session_id: str,
    deps: SessionDeps,
    admitter: Admitter,
    guard: Guard,
    model: Model | None,
    charges: Callable[[], list[Charge]],
    decide: Decide = decide_idle,
    pooled: Sequence[float] | None = None,
) -> IdleOutcome:
    """One idle decision for one session, acted on; never for a busy or waiting session.

    Args:
        session_id: The session's id.
        deps: The session's dependencies (config, clock, prices).
        admitter: The session's admitter (compaction, the request as last admitted).
        guard: The session's guard: held exclusively while a call is made.
        model: The session's model (``None``: nothing is done).
        charges: The session's charges, oldest first.
        decide: The rule that decides (``decide_idle``; benchmarks compare fixed rules).
        pooled: The gaps measured in other sessions (``None``: the runtime's ``GapPool``,
            after recording this session's own).
    """
    writer = guard.writer
    busy = guard.busy or bool(writer.pending) or guard.gate.paused_reason()
    if model is None or busy:
        why = "no model" if model is None else "the session is running or waiting on approval"
        return IdleOutcome(session_id, "nothing", why)
    clock = deps.clock or (lambda: datetime.now().astimezone())
    ledger = writer.ledger
    lifetime = ledger.ttl_seconds
    tended = deps.config.idle_policy == "auto"  # a pause may lift the prefix to the hour
    ttl = choose_ttl(deps.config.cache_ttl, ledger.gaps(), ledger.write_ratio(), lift=tended)
    if ledger.last_noted() is None:  # opened, no request since: the lifetime it would ask for
        lifetime = cache_lifetime(model.profile, ttl)
    situation = situation_of(
        charges(),
        clock_now=clock(),
        last_touch=ledger.last_noted(),
        lifetime=lifetime,
        compacted_tokens=None,
        long_writes=ttl == "1h" and bool(model.profile.cache_ttl),
        # a keep-warm call can lift the prefix: Anthropic's 5 minutes to the hour, OpenAI's
        # 30 minutes to 12 hours (Responses, explicit breakpoints)
        lift_lifetime=lift_lifetime(model.profile),
        own_lifetime=cache_lifetime(model.profile, ttl),
    )
    if situation is None:
        return IdleOutcome(session_id, "nothing", "no request answered yet")
    if pooled is None:
        deps.gap_pool.update(session_id, situation.gaps)
        pooled = deps.gap_pool.others(session_id)
    situation = replace(situation, pooled_gaps=tuple(pooled))
    if prewarms(model):  # the refresh adds nothing and gets nothing back
        situation = replace(situation, warm_tokens=0)
    price = price_for(model.name, deps.config.prices)
    if decide is decide_idle:
        # Nothing to decide (far from expiry, expired, no price, too few gaps) does not depend
        # on what a compaction would leave: skip counting the history for it.
        early = decide_idle(situation, price)
        if early.action == "nothing":
            return IdleOutcome(session_id, "nothing", early.reason)
    compacted = await _compacted_tokens(deps, admitter, situation.prefix_tokens)
    # A session at half its budget compacts soon anyway: compacting it while warm only moves
    # that forward, so the floor is at most half the budget.
    half = deps.budget.budget(model.profile.context_window) // 2
    floor = min(COMPACT_FLOOR, half)
    situation = replace(situation, compacted_tokens=compacted, compact_floor=floor)
    decision = decide(situation, price)
    outcome = IdleOutcome(session_id, decision.action, decision.reason, decision.costs)
    if decision.action in ("nothing", "let_expire"):
        return outcome
    try:
        async with guard.exclusive(upkeep=True):
            if (await deps.store.get_session(session_id)).next_seq != writer.next_seq:
                # Another process wrote meanwhile: this view is stale, and a call made from it
                # would be billed and then refused by the store.
                return IdleOutcome(session_id, "nothing", "the session changed elsewhere")
            if decision.action == "kept_warm":
                lift = decision.lifetime is not None and decision.lifetime > lifetime
                call: SideCall | None = await keep_warm(
                    deps, writer, model, admitter.rebuild, decision.reason, lift=lift
                )
            else:
                done = await admitter.compact(
                    await admitter.sample(), model, reason=decision.reason
                )
                call = _last_side_call(charges()) if done else None
    except AgentSessionError as exc:  # busy meanwhile, leased elsewhere, the provider failed
        return IdleOutcome(session_id, "nothing", f"{decision.action} not done: {exc}")
    usd = charge_usd(call.usage, price)[0] if call is not None and price is not None else None
    return replace(outcome, side_call_usd=usd)


def _last_side_call(charges: list[Charge]) -> SideCall | None:
    found = next((c for c in reversed(charges) if c.purpose == "compaction"), None)
    if found is None or found.usage is None:
        return None
    return SideCall("compaction", found.model, found.usage, reason=found.reason)


async def _compacted_tokens(deps: SessionDeps, admitter: Admitter, prefix: int) -> int | None:
    """The prefix a compaction now would leave: the kept part and the summary's length."""
    plan = await admitter.compaction_plan()
    if plan is None:
        return None
    counter = deps.budget.counter
    head = sum(counter.count(text_of(v.message.content)) for v in plan.head)
    return max(0, prefix - head) + IdleSituation.summary_tokens
