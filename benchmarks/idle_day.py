"""A day of idle time: ``idle_policy="auto"`` beside three fixed rules and an oracle, in dollars.

Twenty coding-agent sessions over one day (fixed seed): each prompt is a burst of requests a few
seconds apart (the tool loop), prompts are minutes apart, some sessions pause for 10–90 minutes
and a few overnight — a heavy-tailed mixture of gaps. Each request sends the whole prefix (an
application prompt and tools of ~20K tokens, then the history) and adds a tool result of a few
thousand tokens; a session past ``--window`` tokens compacts whatever the policy (the same for
all of them).

Dollars come from the cost model the ledger bills with (``ledger.charge_usd``'s rule: a request
reads the cached prefix at ``cached_input``, writes the rest at ``cache_write`` — or
``cache_write_long`` with the 1-hour lifetime — and pays ``output``), with the shipped prices
(``ledger/prices.py``) and the cache lifetimes of the profiles (``providers/profiles.py``). The
requests are *not* sent through the SDKs to the simulator: this run computes the trace's bill
from the same pricing rule instead (a day of 20 sessions through the SDKs takes too long for
one figure); the keep-warm and compaction calls are priced like the package sends them (the
live request read from the cache plus a one-word question; the live request plus the summary
instruction, then the smaller prefix written by the next request).

Policies on the same trace, per gap between two requests:

- ``never``: do nothing; the cache expires after its lifetime;
- ``compact54``: compact after 54 idle minutes when the prefix is above 200K tokens;
- ``warm90``: keep warm at 90% of the lifetime, again and again until the next request;
- ``auto``: ``ledger.idle.decide_idle`` at 90% of the lifetime with the gaps measured so far in
  the session and, pooled beside them (``--pool-share`` of the evidence), every gap of the
  sessions run before it on the trace (what ``Runtime.tend_idle`` does on a timer); after a
  lift to the hour, a tenth of the session's own lifetime (30 s) before the hour's end, in the
  decision window the runtime gives a lifted prefix;
- ``oracle``: per gap, the cheapest of never / keep warm throughout / lift then keep warm at the
  same ticks as ``auto`` / compact at 90% of the
  lifetime, told the gap in advance (a limit, not a policy), compacting only where the gap
  outlasts what keeping warm pays for (the prefix is lost anyway) — the history rule ``auto``
  keeps, with hindsight;
- ``oracle_free``: the same without that rule: the cheapest per gap whatever history it drops.

Reported per shape: dollars per session of each, ``auto`` over the cheapest fixed rule and over
the oracles, and the mean history messages each keeps at a request; then the same ratios on
held-out traces (other seeds), since the decision was shaped on the first one.

Usage: ``python benchmarks/idle_day.py [--seed 7] [--held-out 101,202] [--sessions 20]
[--pool-share 0.5] [--floor 200000]``; writes
``benchmarks/results/idle_day.json``.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import save

from agentsession.ledger.idle import COMPACT_FLOOR, POOL_SHARE, IdleSituation, decide_idle
from agentsession.ledger.prices import PRICES, ModelPrice

BASE = 20_000  # application prompt and tool declarations
SUMMARY = 1_500  # summary tokens out
WARM_TOKENS = 16  # what a keep-warm request adds and gets back (a prewarm: nothing)
OUTPUT = 400  # output tokens of a request
SDK_READ_CAP = 25_000  # tokens: the SDK day's tool-result cut (100,000 characters)
# The smallest prefix auto and the oracle compact (``--floor``; default the package's, which is
# compact54's 200K).
SETTINGS: dict[str, float] = {
    "floor": COMPACT_FLOOR,
    "pool_share": POOL_SHARE,
    "told": 0,
    "ttl_choice": 1,
    "idle_keep": 0.0,
    "kept_requests": 0,
}
# The gaps of the sessions run before this one on the trace: the evidence the runtime pools
# (``Runtime.tend_idle`` passes the other sessions' gaps to each decision).
POOL: list[float] = []


@dataclass(frozen=True)
class Shape:
    name: str
    price: ModelPrice
    lifetime: float
    long: bool = False
    lift: float = 0.0  # a longer lifetime a keep-warm call may lift the prefix to (0: none)
    prewarm: bool = False  # the keep-warm call generates nothing (OpenAI Responses, GPT-5.6+)

    @property
    def warm_tokens(self) -> int:
        return 0 if self.prewarm else WARM_TOKENS


SHAPES = (
    Shape("anthropic 5m", PRICES["claude-sonnet-4-6"], 300.0, lift=3600.0),
    Shape("anthropic 1h", PRICES["claude-sonnet-4-6"], 3600.0, long=True),
    Shape("openai", PRICES["gpt-5.6-terra"], 1800.0, prewarm=True),
)
LIFT_12H = 12 * 3600.0
"""OpenAI Responses' longer lifetime (``prompt_cache_options.ttl="12h"``), whose write price is
not documented: ``--lift-12h MULT`` prices it at MULT x input, a what-if, not a list price."""
CHOSEN_TTL = SHAPES[0]
"""Where ``auto`` and the oracles run on Anthropic, either lifetime: the lifetime is theirs to
choose (the conversation writes at 5 minutes; a keep-warm call may lift the prefix to 1 hour).
The fixed rules keep the shape's lifetime; ``auto_fixed_ttl`` is ``auto`` on it, for reference."""


@dataclass(frozen=True)
class Step:
    """One request: seconds since the one before, tokens it adds, messages it adds."""

    gap: float
    added: int


def gap_after_prompt(rng: random.Random) -> float:
    """The pause before the next prompt: heavy-tailed."""
    roll = rng.random()
    if roll < 0.55:
        return rng.uniform(20, 60)
    if roll < 0.85:
        return rng.uniform(60, 600)
    if roll < 0.97:
        return rng.uniform(600, 5400)
    return rng.uniform(8 * 3600, 14 * 3600)  # overnight


def day(rng: random.Random) -> list[Step]:
    """One session's requests: prompts of a few tool-loop requests, pauses between prompts."""
    steps: list[Step] = []
    prompts = rng.randint(15, 40)
    for n in range(prompts):
        pause = 0.0 if n == 0 else gap_after_prompt(rng)
        for k in range(rng.randint(1, 6)):
            gap = pause if k == 0 else rng.uniform(2, 40)
            steps.append(Step(gap, int(rng.lognormvariate(math.log(2500), 0.8))))
    return steps


@dataclass
class Bill:
    usd: float = 0.0
    kept: list[int] = field(default_factory=list)  # history messages at each request
    actions: dict[str, int] = field(default_factory=dict)

    def count(self, action: str) -> None:
        self.actions[action] = self.actions.get(action, 0) + 1


@dataclass
class State:
    prefix: int = BASE  # tokens the next request sends before its new part
    messages: int = 0
    cached: int = 0  # tokens the provider holds warm
    warm_until: float = -1.0
    life: float = 0.0  # the lifetime of the entry holding them (a read renews it for that)
    sizes: list[int] = field(default_factory=list)  # tokens each request of the epoch added


Gap = Callable[[Shape, State, Bill, float, list[float]], None]
"""Acts during one gap: (shape, state, bill, the gap's length, gaps so far)."""


def _write(shape: Shape) -> float:
    return shape.price.write_long if shape.long else shape.price.write


def request(shape: Shape, state: State, bill: Bill, now: float, added: int) -> None:
    p = shape.price
    read = state.cached if now <= state.warm_until else 0
    written = state.prefix + added - read
    bill.usd += (read * p.cached_input + written * _write(shape) + OUTPUT * p.output) / 1e6
    state.prefix += added + OUTPUT
    state.messages += 2
    state.sizes.append(added + OUTPUT)
    state.cached, state.warm_until = state.prefix - OUTPUT, now + shape.lifetime
    state.life = shape.lifetime
    bill.kept.append(state.messages)


def keep_warm(shape: Shape, state: State, bill: Bill, at: float, lift: bool = False) -> None:
    """A refresh: the live prefix read, a few tokens out; ``lift``: the breakpoint at the end of
    the live prefix at the long lifetime, so the last reply is written at the long price and
    the whole prefix lives the long lifetime from now."""
    p = shape.price
    usd = state.cached * p.cached_input + shape.warm_tokens * (_write(shape) + p.output)
    if lift:
        usd += (state.prefix - state.cached) * p.write_long
        state.cached, state.life = state.prefix, shape.lift
    bill.usd += usd / 1e6
    state.warm_until = at + max(state.life, shape.lifetime)
    bill.count("lifted" if lift else "kept_warm")


def compact(shape: Shape, state: State, bill: Bill, at: float, idle: bool = True) -> None:
    """A summary call; ``idle``: made while the user is away, keeping the newest requests
    within ``idle_keep`` of the floor (``Runtime.tend_idle``), else the last turn alone."""
    p = shape.price
    warm = at <= state.warm_until
    read = state.cached if warm else 0
    sent = state.prefix + 200
    cost = read * p.cached_input + (sent - read) * _write(shape) + SUMMARY * p.output
    bill.usd += cost / 1e6
    kept, messages = kept_tail(state, idle)
    state.prefix, state.messages, state.sizes = BASE + SUMMARY + kept, messages, []
    state.cached, state.warm_until = 0, -1.0  # the new prefix is written by the next request
    bill.count("compacted")


def kept_tail(state: State, idle: bool) -> tuple[int, int]:
    """The tokens and history messages a compaction keeps verbatim (with the summary's)."""
    limit = SETTINGS["idle_keep"] * SETTINGS["floor"] if idle else 0.0
    least = int(SETTINGS["kept_requests"])  # kept whatever their size (0: the last 6K tokens)
    tokens = units = 0
    for size in reversed(state.sizes[1:]):  # the first request is always summarised
        if units >= least and tokens + size > limit:
            break
        tokens, units = tokens + size, units + 1
    if not units:
        return min(state.prefix - BASE, 6_000), 3  # the kept last turn
    return tokens, 1 + 2 * units


def compacted_tokens(state: State) -> int:
    return BASE + SUMMARY + kept_tail(state, True)[0]


def never(shape: Shape, state: State, bill: Bill, gap: float, seen: list[float]) -> None:
    return None


def compact54(shape: Shape, state: State, bill: Bill, gap: float, seen: list[float]) -> None:
    if gap > 54 * 60 and state.prefix > 200_000:
        compact(shape, state, bill, state.warm_until - shape.lifetime + 54 * 60)


def warm90(shape: Shape, state: State, bill: Bill, gap: float, seen: list[float]) -> None:
    start = state.warm_until - shape.lifetime
    at = start + 0.9 * shape.lifetime
    while at < start + gap:
        keep_warm(shape, state, bill, at)
        at += 0.9 * shape.lifetime


def window(shape: Shape) -> float:
    """Where a tick falls before a cached entry's end: a tenth of the session's own lifetime,
    in seconds, also at the end of a lifted hour (``situation_of(own_lifetime=...)``)."""
    return IdleSituation.horizon * shape.lifetime


def auto(shape: Shape, state: State, bill: Bill, gap: float, seen: list[float]) -> None:
    start = state.warm_until - shape.lifetime
    at = start + shape.lifetime - window(shape)
    while at < start + gap:
        life = max(state.life, shape.lifetime)
        situation = IdleSituation(
            idle_seconds=at - start,
            # lifted: the decision window of the session's own lifetime, as ``tend`` passes it
            horizon=IdleSituation.horizon * shape.lifetime / life,
            warm_seconds=state.warm_until - at,
            lifetime=life,
            prefix_tokens=state.cached,
            gaps=tuple(seen),
            long_lifetime=shape.long,
            compacted_tokens=compacted_tokens(state) if state.messages > 4 else None,
            compact_floor=int(SETTINGS["floor"]),
            summary_tokens=SUMMARY,
            warm_tokens=shape.warm_tokens,
            pooled_gaps=tuple(POOL),
            pool_share=SETTINGS["pool_share"],
            lift_lifetime=shape.lift if shape.lift > life else 0.0,
            lift_tokens=state.prefix - state.cached,
        )
        decision = decide_idle(situation, shape.price)
        if decision.action == "kept_warm":
            keep_warm(shape, state, bill, at, lift=decision.lifetime is not None)
            at += max(state.life, shape.lifetime) - window(shape)
            continue
        if decision.action == "compacted":
            compact(shape, state, bill, at)
        return


def lift90(shape: Shape, state: State, bill: Bill, gap: float, seen: list[float]) -> None:
    """Lift the prefix to the long lifetime at 90% of the short one, then keep it warm, each
    refresh a tenth of the short lifetime before the lifted entry's end (the runtime's ticks)."""
    start = state.warm_until - shape.lifetime
    at = start + 0.9 * shape.lifetime
    if at < start + gap:
        keep_warm(shape, state, bill, at, lift=True)
        at += state.life - window(shape)
    while at < start + gap:
        keep_warm(shape, state, bill, at)
        at += state.life - window(shape)


def reach(shape: Shape) -> float:
    """The longest gap keeping warm pays for: past it the refreshes cost more than a rewrite."""
    p = shape.price
    return shape.lifetime + max(shape.lifetime, shape.lift) * _write(shape) / p.cached_input


def oracle(shape: Shape, state: State, bill: Bill, gap: float, seen: list[float]) -> None:
    """The cheapest per gap, told the gap, compacting only where the prefix is lost anyway."""
    _oracle(shape, state, bill, gap, seen, history=True)


def oracle_free(shape: Shape, state: State, bill: Bill, gap: float, seen: list[float]) -> None:
    """The cheapest per gap, told the gap, whatever history a compaction drops."""
    _oracle(shape, state, bill, gap, seen, history=False)


def _oracle(
    shape: Shape, state: State, bill: Bill, gap: float, seen: list[float], *, history: bool
) -> None:
    """Per gap: priced on copies, then the cheapest done on the real state."""
    start = state.warm_until - shape.lifetime
    options: dict[str, tuple[float, State, Bill]] = {}
    choices: list[tuple[str, Gap]] = [("never", never), ("warm", warm90)]
    if shape.lift > shape.lifetime:
        choices.append(("lift", lift90))
    if not history or gap > reach(shape):
        choices.append(("compact", _compact_at_90))
    for name, act in choices:
        trial, spent = _copy(state), Bill()
        act(shape, trial, spent, gap, seen)
        request(shape, trial, spent, start + gap, 0)  # the next request's prefix
        options[name] = (spent.usd, trial, spent)
    best = min(options, key=lambda n: options[n][0])
    _, _, spent = options[best]
    acts = {"never": never, "warm": warm90, "lift": lift90, "compact": _compact_at_90}
    acts[best](shape, state, bill, gap, seen)


def _compact_at_90(shape: Shape, state: State, bill: Bill, gap: float, seen: list[float]) -> None:
    if gap > shape.lifetime and state.messages > 4 and state.cached >= SETTINGS["floor"]:
        compact(shape, state, bill, state.warm_until - 0.1 * shape.lifetime)


def _copy(state: State) -> State:
    return State(
        state.prefix, state.messages, state.cached, state.warm_until, state.life, [*state.sizes]
    )


POLICIES: dict[str, Gap] = {
    "never": never,
    "compact54": compact54,
    "warm90": warm90,
    "auto": auto,
    "oracle": oracle,
    "oracle_free": oracle_free,
    "auto_fixed_ttl": auto,
}
CHOOSING = ("auto", "oracle", "oracle_free")


def sdk_day(rng: random.Random, prompts: int = 14) -> list[Step]:
    """The trace ``idle_sdk_day.py`` sends: one file read and an answer a prompt, 7–21 prompts,
    the same pauses; a read is log-normal around 18K tokens, cut at ``SDK_READ_CAP``."""
    steps: list[Step] = []
    for n in range(rng.randint(prompts // 2, prompts * 3 // 2)):
        pause = 0.0 if n == 0 else gap_after_prompt(rng)
        read = rng.lognormvariate(math.log(18_000), 0.6)
        steps += [Step(pause, int(min(SDK_READ_CAP, read))), Step(0.0, 200)]
    return steps


def run(shape: Shape, days: list[list[Step]], policy: Gap, window: int) -> Bill:
    bill = Bill()
    POOL.clear()
    for steps in days:
        if SETTINGS["told"]:  # the limit of learning the pauses: told their distribution
            told = random.Random(5)
            POOL[:] = [gap_after_prompt(told) for _ in range(20_000)]
        state, now, seen = State(), 0.0, []
        for n, step in enumerate(steps):
            if n:
                policy(shape, state, bill, step.gap, seen)
                seen.append(step.gap)
            now += step.gap
            if state.prefix > window:  # the context is full: every policy compacts alike
                compact(shape, state, bill, now, idle=False)
                bill.count("compacted")
                bill.actions["compacted"] -= 1
            request(shape, state, bill, now, step.added)
        POOL.extend(seen)
    return bill


def shapes() -> tuple[Shape, ...]:
    """The shapes run; with ``--lift-12h`` OpenAI's may lift a prefix to 12 hours (a what-if)."""
    mult = SETTINGS.get("lift_12h", 0.0)
    if not mult:
        return SHAPES
    *rest, openai = SHAPES
    price = replace(openai.price, cache_write_long=openai.price.input * mult)
    return (*rest, replace(openai, price=price, lift=LIFT_12H))


def evaluate(shape: Shape, days: list[list[Step]], window: int) -> dict[str, object]:
    """One shape on one trace: dollars per session, the ratios the goal names, history kept."""
    chosen = CHOSEN_TTL if shape.price is CHOSEN_TTL.price and SETTINGS["ttl_choice"] else shape
    bills = {
        name: run(chosen if name in CHOOSING else shape, days, p, window)
        for name, p in POLICIES.items()
    }
    per = {name: b.usd / len(days) for name, b in bills.items()}
    fixed = min(("never", "compact54", "warm90"), key=lambda n: per[n])
    kept = {name: sum(b.kept) / len(b.kept) for name, b in bills.items()}
    return {
        "usd_per_session": per,
        "cheapest_fixed": fixed,
        "auto_over_fixed": per["auto"] / per[fixed],
        "auto_over_oracle": per["auto"] / per["oracle"],
        "auto_over_oracle_free": per["auto"] / per["oracle_free"],
        "oracle_over_fixed": per["oracle"] / per[fixed],
        "auto_messages_over_fixed": kept["auto"] / kept[fixed],
        "mean_messages": kept,
        "actions": {name: b.actions for name, b in bills.items()},
    }


def met(row: dict[str, object]) -> bool:
    """The issue's goal: ≤ 0.9× the cheapest fixed rule, ≤ 1.1× the oracle, ≥ 0.95× history."""
    return (
        float(row["auto_over_fixed"]) <= 0.9  # type: ignore[arg-type]
        and float(row["auto_over_oracle"]) <= 1.1  # type: ignore[arg-type]
        and float(row["auto_messages_over_fixed"]) >= 0.95  # type: ignore[arg-type]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--held-out", default="101,202,303,404,505")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--window", type=int, default=600_000)
    parser.add_argument("--floor", type=int, default=COMPACT_FLOOR)
    parser.add_argument("--pool-share", type=float, default=POOL_SHARE)
    parser.add_argument(
        "--idle-keep",
        type=float,
        default=0.0,
        help="an idle compaction keeps the newest requests within this share of the floor",
    )
    parser.add_argument(
        "--sdk-trace", action="store_true", help="the SDK day's trace: a file read a prompt"
    )
    parser.add_argument(
        "--told",
        action="store_true",
        help="auto's pool is 20,000 draws of the pause distribution itself (a limit)",
    )
    parser.add_argument(
        "--lift-12h",
        type=float,
        default=0.0,
        help="what-if: OpenAI may lift a prefix to 12 hours, written at this multiple of input",
    )
    parser.add_argument(
        "--fixed-ttl",
        action="store_true",
        help="auto and the oracles keep the shape's lifetime (no lift to 1 hour)",
    )
    args = parser.parse_args()
    if args.lift_12h:
        SETTINGS["lift_12h"] = args.lift_12h
    SETTINGS["told"] = float(args.told)
    SETTINGS["ttl_choice"] = float(not args.fixed_ttl)
    make = sdk_day if args.sdk_trace else day
    SETTINGS["floor"] = args.floor
    SETTINGS["pool_share"] = args.pool_share
    SETTINGS["idle_keep"] = args.idle_keep
    rng = random.Random(args.seed)
    days = [make(rng) for _ in range(args.sessions)]
    gaps = [s.gap for d in days for s in d[1:]]
    under_minute = sum(g < 60 for g in gaps) / len(gaps)
    long = sum(600 <= g <= 5400 for g in gaps)
    overnight = sum(g > 8 * 3600 for g in gaps)
    print(
        f"{args.sessions} sessions, {len(gaps) + args.sessions} requests; gaps: "
        f"{under_minute:.0%} under a minute, {long} of 10-90 min, {overnight} overnight"
    )
    figures: dict[str, object] = {
        "seed": args.seed,
        "sessions": args.sessions,
        "floor": args.floor,
        "pool_share": args.pool_share,
        "sdk_trace": args.sdk_trace,
        "told": args.told,
    }
    for shape in shapes():
        row = evaluate(shape, days, args.window)
        figures[shape.name] = row
        per, kept, actions = row["usd_per_session"], row["mean_messages"], row["actions"]
        assert isinstance(per, dict) and isinstance(kept, dict) and isinstance(actions, dict)
        print(f"\n{shape.name} (lifetime {shape.lifetime:.0f} s):")
        for name in POLICIES:
            print(
                f"  {name:11s} ${per[name]:8.3f}/session  {kept[name]:6.1f} messages"
                f"  {actions[name]}"
            )
        print(
            f"  auto / cheapest fixed ({row['cheapest_fixed']}) = {row['auto_over_fixed']:.3f};"
            f" auto / oracle = {row['auto_over_oracle']:.3f}"
            f" (history-blind oracle {row['auto_over_oracle_free']:.3f});"
            f" history kept {row['auto_messages_over_fixed']:.3f}× the fixed rule's;"
            f" goal {'met' if met(row) else 'NOT met'}"
        )
    held: dict[str, list[dict[str, object]]] = {}
    seeds = [int(x) for x in args.held_out.split(",") if x]
    for seed in seeds:
        trace = random.Random(seed)
        other = [make(trace) for _ in range(args.sessions)]
        for shape in shapes():
            held.setdefault(shape.name, []).append(evaluate(shape, other, args.window))
    if seeds:
        print(f"\nheld-out seeds {seeds}: auto/fixed, auto/oracle, history ratio per seed")
    for name, rows in held.items():
        cells = "  ".join(
            f"{r['auto_over_fixed']:.3f}/{r['auto_over_oracle']:.3f}/{r['auto_messages_over_fixed']:.3f}"
            for r in rows
        )
        print(f"  {name:13s} {cells}  met {sum(met(r) for r in rows)}/{len(rows)}")
        figures[f"held_out {name}"] = [
            {
                k: r[k]
                for k in (
                    "cheapest_fixed",
                    "auto_over_fixed",
                    "auto_over_oracle",
                    "auto_messages_over_fixed",
                    "usd_per_session",
                )
            }
            for r in rows
        ]
    figures["held_out_seeds"] = seeds
    name = "idle_day" + ("_sdk_trace" if args.sdk_trace else "") + ("_told" if args.told else "")
    name += f"_lift12h_{args.lift_12h:g}" if args.lift_12h else ""
    save(name, figures, command=" ".join(["python benchmarks/idle_day.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
