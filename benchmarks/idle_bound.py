"""The limit of the history clause on the SDK day's trace, OpenAI's shape, priced.

The priced model of ``idle_day.py`` (its bill, its compaction; ``--sdk-trace``'s days). A rule
told every pause in advance chooses, per session, which of its pauses longer than the cache's
lifetime it compacts in (at 90% of the lifetime, where the prefix is past the floor); every
other pause takes the cheaper of letting the cache expire and keeping it warm throughout. Each
session's every choice is priced with the whole rest of the session (so a compaction's later
savings count), and the sessions' choices are combined to keep at least ``--share`` (0.95) of
the cheapest fixed rule's mean history messages at the least dollars, relaxed (the Lagrangian
hull of the per-session options, a lower bound of the best combination). No policy choosing
among these calls, however well informed, is cheaper on that trace with that history. Where the
bound is above 0.9x the cheapest fixed rule, the goal's clauses cannot all be met by them.

``--idle-keep``: a compaction made while idle keeps the newest requests verbatim within that
share of the compaction floor (``--kept-requests`` at least: 4, the package's two user turns of
a file read and an answer each).

Usage: ``python benchmarks/idle_bound.py [--seeds 7,101,202,303,404,505] [--idle-keep 0]
[--share 0.95]``; writes ``benchmarks/results/idle_bound.json``.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import idle_day as day
from _results import save


def choice(compact: bool) -> day.Gap:
    """Told the pause: compact in it at 90% of the lifetime (where the prefix is past the
    floor), else the cheaper of letting the cache expire and keeping it warm throughout."""

    def rule(
        shape: day.Shape, state: day.State, bill: day.Bill, gap: float, seen: list[float]
    ) -> None:
        if compact and state.messages > 4 and state.cached >= day.SETTINGS["floor"]:
            day._compact_at_90(shape, state, bill, gap, seen)
            return
        start = state.warm_until - shape.lifetime
        costs: dict[str, float] = {}
        acts: dict[str, day.Gap] = {"never": day.never, "warm": day.warm90}
        for name, act in acts.items():
            trial, spent = day._copy(state), day.Bill()
            act(shape, trial, spent, gap, seen)
            day.request(shape, trial, spent, start + gap, 0)
            costs[name] = spent.usd
        acts[min(costs, key=lambda n: costs[n])](shape, state, bill, gap, seen)

    return rule


def exact(shape: day.Shape, steps: list[day.Step], window: int) -> list[tuple[float, int]]:
    """Every choice of the pauses a session compacts in (told every pause, each other pause the
    cheaper of letting expire and keeping warm throughout): (dollars, history message-requests).
    A compaction is made at 90% of the lifetime where the prefix is past the floor."""
    long = [n for n, step in enumerate(steps) if n and step.gap > shape.lifetime]
    out = []
    for mask in range(1 << len(long)):
        chosen = {n for i, n in enumerate(long) if mask >> i & 1}
        bill, state, now = day.Bill(), day.State(), 0.0
        for n, step in enumerate(steps):
            if n:
                choice(n in chosen)(shape, state, bill, step.gap, [])
            now += step.gap
            if state.prefix > window:
                day.compact(shape, state, bill, now, idle=False)
            day.request(shape, state, bill, now, step.added)
        out.append((bill.usd, sum(bill.kept)))
    return out


def lower_bound(sessions: list[list[tuple[float, int]]], target: float) -> tuple[float, float]:
    """The least dollars keeping ``target`` message-requests over all sessions, choosing one
    option a session, relaxed (the Lagrangian's hull): (dollars, message-requests) there."""
    points = []
    for lam in (0.0, *(1e-7 * 1.05**k for k in range(400))):
        picks = [min(opts, key=lambda o: o[0] - lam * o[1]) for opts in sessions]
        points.append((sum(p[0] for p in picks), float(sum(p[1] for p in picks))))
    points.sort(key=lambda p: p[1])
    above = [p for p in points if p[1] >= target]
    below = [p for p in points if p[1] < target]
    if not above:
        return math.inf, target
    hi = min(above, key=lambda p: p[0])
    if not below:
        return hi
    lo = max(below, key=lambda p: p[1])
    if hi[1] == lo[1]:
        return hi
    t = (target - lo[1]) / (hi[1] - lo[1])
    return lo[0] + t * (hi[0] - lo[0]), target


def bound(seed: int, sessions: int, share: float, window: int) -> dict[str, float]:
    rng = random.Random(seed)
    days = [day.sdk_day(rng) for _ in range(sessions)]
    shape = day.SHAPES[-1]  # openai
    fixed = {n: day.run(shape, days, day.POLICIES[n], window) for n in day.POLICIES}
    per = {n: b.usd / sessions for n, b in fixed.items()}
    cheapest = min(("never", "compact54", "warm90"), key=lambda n: per[n])
    requests = len(fixed[cheapest].kept)
    cheap_kept = sum(fixed[cheapest].kept) / requests
    options = [exact(shape, steps, window) for steps in days]
    usd, kept = lower_bound(options, share * cheap_kept * requests)
    free = sum(min(o)[0] for o in options)
    free_kept = sum(min(o)[1] for o in options)
    return {
        "cheapest_fixed": cheapest,  # type: ignore[dict-item]
        "fixed_usd": per[cheapest],
        "told_free_over_fixed": free / sessions / per[cheapest],
        "told_free_history": free_kept / requests / cheap_kept,
        "bound_over_fixed": usd / sessions / per[cheapest],
        "bound_history": kept / requests / cheap_kept,
        "auto_over_fixed": per["auto"] / per[cheapest],
        "auto_history": sum(fixed["auto"].kept) / requests / cheap_kept,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="7,101,202,303,404,505")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--idle-keep", default="0")
    parser.add_argument("--share", type=float, default=0.95)
    parser.add_argument("--window", type=int, default=600_000)
    parser.add_argument(
        "--kept-requests",
        type=int,
        default=4,
        help="requests a compaction keeps verbatim at least (4: the package's two user turns, "
        "a file read and an answer each; 0: the priced day's last 6K tokens)",
    )
    args = parser.parse_args()
    day.SETTINGS["kept_requests"] = args.kept_requests
    out: dict[str, object] = {"share": args.share, "kept_requests": args.kept_requests}
    for keep in (float(k) for k in args.idle_keep.split(",")):
        day.SETTINGS["idle_keep"] = keep
        for seed in (int(s) for s in args.seeds.split(",")):
            row = bound(seed, args.sessions, args.share, args.window)
            out[f"keep {keep:g} seed {seed}"] = row
            print(
                f"idle keep {keep:4g} seed {seed:4d}: cheapest fixed {row['cheapest_fixed']}"
                f" ${row['fixed_usd']:.3f}; auto {row['auto_over_fixed']:.3f}"
                f" (history {row['auto_history']:.3f}); told, history-blind"
                f" {row['told_free_over_fixed']:.3f} (history {row['told_free_history']:.3f});"
                f" bound at history >= {args.share} {row['bound_over_fixed']:.3f}"
                f" (history {row['bound_history']:.3f})",
                flush=True,
            )
    save("idle_bound", out, command=" ".join(["python benchmarks/idle_bound.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
