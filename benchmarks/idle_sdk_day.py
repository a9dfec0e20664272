"""A day of idle time through the real SDKs on the provider simulator, in dollars per session.

The trace of ``idle_day.py`` (the same heavy-tailed pauses between prompts: most under a
minute, some 10–90 minutes, a few overnight) with 20 sessions, driven through ``Runtime`` and
the official SDKs against ``provider_sim`` for Anthropic Messages (5-minute and 1-hour
lifetimes) and OpenAI Responses (GPT-5.6 explicit caching, 30 minutes). Each prompt asks to
read a source file (a tool call whose result is a file of a coding agent's size, drawn
log-normally around 18,000 tokens, cut at 100,000 characters: about 25K tokens, what a coding
agent's file-read tool returns at most) and gets an answer; the application prompt and tools
are about 9K tokens. So sessions pass 200K tokens at long pauses and the compaction rules act.
The model's context is 1M tokens and the history cap 400 messages, so the idle policies, not
the budget, decide what history stays.

The runtime's clock and the simulator's are one virtual clock, moved, never slept. In every
pause the application's timer runs (what an application does with ``tend_idle``): it ticks
just inside the decision window (the last tenth of the session's own lifetime, in seconds:
also at the end of a lifted hour), again after each refresh. Policies:

- ``never``: ``idle_policy="off"``;
- ``compact54``: ``session.compact()`` after 54 idle minutes when the last request sent more
  than 200K tokens (Claude Code's fixed rule);
- ``warm90``: a keep-warm call at 90% of the lifetime, again until the next prompt
  (OpenCode's fixed rule);
- ``auto``: ``idle_policy="auto"``, ``await runtime.tend_idle()`` on the timer (each decision
  weighs the gaps the runtime recorded for the sessions it tended before, ``GapPool``);
- ``oracle``: per pause, told its length, the cheapest of never / keep warm throughout / lift
  (Anthropic: to the hour; OpenAI Responses: to 12 hours) then keep warm / compact at the
  first tick, compacting only where the pause outlasts what keeping warm pays for (the
  history rule ``auto`` keeps);
- ``told:<lam>`` (OpenAI): the oracle told also how many requests are left in the session and
  how many history messages a compaction now drops from each, compacting at any pause past the
  lifetime where that is cheapest with the history priced at ``lam`` dollars a message a
  request (``told:1.0`` never compacts): points of the history clause's limit.

The fixed rules run at the shape's lifetime. On Anthropic ``auto`` and the oracle choose the
lifetime: the conversation writes at 5 minutes and a keep-warm call may lift the prefix to the
hour, so their run is the same on both Anthropic shapes (made under ``anthropic 5m``; ``--merge``
sets it beside the 1-hour shape's fixed rules too). The fixed rules and the oracle act through
the same calls ``tend_idle`` makes (the session's keep-warm side call, lifted or not, and its
cache-reading compaction), chosen by their own rule instead of ``ledger.idle.decide_idle``.
Reported per shape: the simulator's bill per session for each, ``auto`` over the cheapest
fixed rule and over the oracle, the mean history messages of the turns' requests; and the
misses check of each policy run beside its all-hit run (``never`` with ``all-hit``, ``auto``
with ``auto-all-hit``, ``compact54-all-hit``…): the same trace with every pause cut to 5
seconds and the policy's idle calls (keep-warm, lift, compaction) made again in it, one a
second — the same requests, every prefix the cache could hold read. Every miss
``session.cost().misses`` lists must have a cause, a miss the all-hit run lacks must be
``expired`` and one both have the same cause, and the per-miss costs must add up to the bill's
excess over the all-hit run, per session and in all (within ``TOLERANCE``); the script exits
non-zero when they do not.

Usage: ``python benchmarks/idle_sdk_day.py [--seed 7] [--sessions 20] [--prompts 14]
[--shape openai] [--policies auto,auto-all-hit,oracle,warm90,never,all-hit,compact54]``
(an all-hit run after its policy, in the same process); writes
``benchmarks/results/idle_sdk_day_seed<seed>_<shape>_<policies>.json``; ``--merge`` joins
every saved run into ``benchmarks/results/idle_sdk_day.json`` and prints the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import RESULTS, save
from idle_day import gap_after_prompt
from provider_cache import APP_PROMPT, SIM_PRICES
from provider_shapes import Reply
from provider_sim import Simulator, running

import agentsession as ags
from agentsession.ledger.idle import COMPACT_FLOOR, IdleDecision, IdleSituation
from agentsession.ledger.prices import ModelPrice
from agentsession.request import SystemMessage

FILE_TOKENS = 18_000
DAY0 = datetime(2026, 3, 1, 9, 0).astimezone()
LIFT = 3600.0  # the shortest lifetime auto and the oracle may lift a prefix to (Anthropic's)
LIFE_5M = 300.0
READ_CAP = 100_000  # characters of one file read: about 25K tokens, a coding agent's read limit
SUMMARY = "## Goal\nFix the modules the user named.\n## Facts and decisions\n" + "fact " * 300


@ags.tool
def read_source(path: str, lines: int) -> str:
    """Read a source file of the repository."""
    return "".join(
        f"{path}:{i}: value_{i} = compute({i}, {path!r})  # as read\n" for i in range(lines)
    )


def policy(shape: str, text: str, tool_turn: bool) -> Reply:
    """The simulated model: a summary when asked, a file read per prompt, then an answer."""
    if "comes from the agent runtime" in text or "Conversation to summarise" in text:
        return Reply(text=SUMMARY)
    if "single word" in text:
        return Reply(text="ok")
    if tool_turn:
        return Reply(text="Done: the change is made and the module's tests pass.")
    words = text.split()
    if len(words) >= 4 and words[0] == "read":
        return Reply(tool="read_source", arguments={"path": words[1], "lines": int(words[3])})
    return Reply(text="ok")


@dataclass(frozen=True)
class Shape:
    name: str
    spec: str
    ttl: str
    lifetime: float
    wire: str  # the simulator's bill key


SHAPES = (
    Shape("anthropic 5m", "anthropic:claude-opus-4-8", "5m", 300.0, "anthropic"),
    Shape("anthropic 1h", "anthropic:claude-opus-4-8", "1h", 3600.0, "anthropic"),
    Shape("openai", "openai:gpt-5.6-terra", "5m", 1800.0, "openai-responses"),
)


def trace(seed: int, sessions: int, prompts: int) -> list[list[tuple[float, int]]]:
    """Per session: (pause before the prompt, lines of the file it reads)."""
    rng = random.Random(seed)
    days = []
    for _ in range(sessions):
        n = rng.randint(prompts // 2, prompts * 3 // 2)
        steps = []
        for k in range(n):
            pause = 0.0 if k == 0 else gap_after_prompt(rng)
            tokens = rng.lognormvariate(math.log(FILE_TOKENS), 0.6)
            steps.append((pause, max(20, int(tokens / 16))))  # a line is about 16 tokens
        days.append(steps)
    return days


Rule = Callable[[IdleSituation, ModelPrice | None], IdleDecision]


def warm_rule(situation: IdleSituation, price: ModelPrice | None) -> IdleDecision:
    return IdleDecision("kept_warm", "warm90: keep warm at 90% of the lifetime")


def compact_rule(situation: IdleSituation, price: ModelPrice | None) -> IdleDecision:
    if situation.prefix_tokens > 200_000 and situation.compacted_tokens is not None:
        return IdleDecision("compacted", "compact54: idle 54 minutes above 200K tokens")
    return IdleDecision("nothing", "compact54: below 200K tokens")


@dataclass(frozen=True)
class Told:
    """What the history-priced oracle (``told:<lam>``) is told besides the pause: the requests
    left in the session and the history messages a compaction now drops from each of them,
    priced at ``lam`` dollars a message a request (the bound of the history clause)."""

    lam: float
    left: int
    dropped: int


def oracle_rule(pause: float, shape: Shape, told: Told | None = None) -> Rule:
    """The cheapest for a pause of known length, chosen at its first tick and kept."""
    chosen: list[str] = []

    def rule(s: IdleSituation, price: ModelPrice | None) -> IdleDecision:
        if not chosen:
            chosen.append(_oracle_choice(s, price, pause, shape, told))
        action = chosen[0]
        if action == "compacted" and len(chosen) > 1:
            action = "nothing"
        first = len(chosen) == 1
        chosen.append(action)
        if action == "lifted":  # lift at the first tick, then keep the lifted entry warm
            lifetime = s.lift_lifetime if first else None
            why = f"oracle: lifted for a pause of {pause:.0f} s"
            return IdleDecision("kept_warm", why, {}, "lifted", lifetime)
        return IdleDecision(action, f"oracle: {action} for a pause of {pause:.0f} s")  # type: ignore[arg-type]

    return rule


def _oracle_choice(
    s: IdleSituation, price: ModelPrice | None, pause: float, shape: Shape, told: Told | None
) -> str:
    """Told the pause: never, keep warm throughout, lift then keep warm (where ``auto`` may
    lift), or compact at the first tick where the pause outlasts what keeping warm pays for;
    ``told``: compact at any pause past the lifetime, the history it drops priced."""
    if price is None:
        return "nothing"
    write = price.write_long if s.long_lifetime else price.write
    p = s.prefix_tokens / 1e6
    read = p * price.cached_input
    call = read + s.warm_tokens / 1e6 * (write + price.output)  # 0 tokens: a prewarm
    costs = {"nothing": read if pause <= shape.lifetime else p * write}
    refreshes = max(0, math.ceil((pause - s.idle_seconds) / (0.9 * shape.lifetime)))
    costs["kept_warm"] = refreshes * call + read
    longest = shape.lifetime
    if s.lift_lifetime > s.lifetime:
        longest = s.lift_lifetime
        lift = call + s.lift_tokens / 1e6 * price.write_long
        # refreshed inside the session's own window (Anthropic's hour, OpenAI's 12 hours)
        hourly = s.lift_lifetime - 0.1 * shape.lifetime
        later = max(0, math.ceil((pause - s.idle_seconds - hourly) / hourly))
        costs["lifted"] = lift + later * call + read
    reach = shape.lifetime + longest * write / price.cached_input
    allowed = pause > (reach if told is None else shape.lifetime)
    if s.compacted_tokens is not None and s.prefix_tokens >= COMPACT_FLOOR and allowed:
        summary = len(SUMMARY.split()) * 1.3e-6 * price.output
        costs["compacted"] = read + summary + s.compacted_tokens / 1e6 * write
        if told is not None:
            costs["compacted"] += told.lam * told.left * told.dropped
    return min(costs, key=lambda k: costs[k])


TOLD = "told:"
"""``told:<lam>``: the oracle told also the requests left and the messages a compaction drops,
compacting at any pause past the lifetime where that is cheapest with history priced at
``lam`` dollars a message a request (OpenAI's shape; swept, the bound of the history clause)."""

CHOOSING = ("auto", "oracle")
"""The policies that choose the lifetime on Anthropic: the conversation writes at 5 minutes
and a keep-warm call may lift the prefix to the hour; so their run is the same on both
Anthropic shapes (made once, under ``anthropic 5m``), beside each shape's fixed rules."""


ALL_HIT = "all-hit"
"""A policy's all-hit run (``<policy>-all-hit``; ``never``'s is ``all-hit``): the same trace
with every pause cut to 5 seconds and the calls the policy made in it made again, one a
second: the same requests, every prefix the cache could hold read."""


def base_of(name: str) -> str:
    """The policy an all-hit run repeats."""
    return "never" if name == ALL_HIT else name.removesuffix("-" + ALL_HIT)


def ttl_of(name: str, shape: Shape) -> str:
    return "5m" if base_of(name) in CHOOSING and shape.wire == "anthropic" else shape.ttl


@dataclass
class Run:
    usd: float = 0.0
    messages: list[int] | None = None
    misses: Counter[str] | None = None
    miss_usd: float = 0.0
    actions: Counter[str] | None = None
    # per session: the bill, and each listed miss as (seq, cause, usd)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    # per session, per pause: the calls the policy made, in order, each with its moment in the
    # pause ("kept_warm", "lifted", "compacted"), so its all-hit run can make the same ones
    script: list[list[list[tuple[float, str]]]] = field(default_factory=list)


async def tend(
    name: str, runtime: ags.Runtime, session: ags.Session, rule: Rule | None
) -> ags.IdleOutcome:
    if name == "auto":
        return (await runtime.tend_idle([session]))[session.id]
    assert rule is not None
    return await session._tend_idle(rule)


def replayed(call: str) -> Rule:
    """The rule of an all-hit run: the call the policy made at this tick, made again."""
    decision = {
        "lifted": IdleDecision("kept_warm", "all-hit: lifted again", {}, "lifted", LIFT),
        "kept_warm": IdleDecision("kept_warm", "all-hit: kept warm again"),
        "compacted": IdleDecision("compacted", "all-hit: compacted again"),
    }[call]
    return lambda situation, price: decision


async def pause_for(
    name: str,
    pause: float,
    shape: Shape,
    runtime: ags.Runtime,
    session: ags.Session,
    clock: dict[str, Any],  # "now", and "skipped": the pauses an all-hit run cuts
    actions: Counter[str],
    calls: list[tuple[float, str]],
) -> None:
    """Move the clock through one pause, running the policy's timer; ``calls`` gets the calls
    it made (an all-hit run: the calls to make again, one a second, and the pause cut to 5
    seconds for the provider's cache alone)."""
    start = clock["now"]
    end = start + timedelta(seconds=pause)
    if name == "never":
        clock["now"] = end
        return
    if name.endswith(ALL_HIT):
        # The runtime sees the policy's moments (its requests carry the same date and
        # keep-warm stamps as the policy's run); the provider's cache, one call a second.
        skipped = clock["skipped"]
        for k, (offset, call) in enumerate(calls):
            clock["now"] = start + timedelta(seconds=offset)
            clock["skipped"] = skipped + timedelta(seconds=offset - (k + 1))
            outcome = await session._tend_idle(replayed(call))
            assert outcome.action == ("compacted" if call == "compacted" else "kept_warm"), outcome
            actions[call] += 1
        clock["now"] = end
        clock["skipped"] = skipped + timedelta(seconds=max(0.0, pause - max(5, len(calls) + 1)))
        return
    if name == "compact54":
        if pause > 54 * 60:
            clock["now"] = start + timedelta(seconds=54 * 60)
            outcome = await session._tend_idle(compact_rule)
            actions[outcome.action] += 1
            if outcome.action == "compacted":
                calls.append((54 * 60.0, "compacted"))
        clock["now"] = end
        return
    rule = {"warm90": warm_rule, "oracle": oracle_rule(pause, shape)}.get(name)
    if name.startswith(TOLD):
        plan = await session._admitter.compaction_plan()
        dropped = sum(not isinstance(v.message, SystemMessage) for v in plan.head) if plan else 0
        told = Told(float(name.removeprefix(TOLD)), clock["left"], max(0, dropped - 1))
        rule = oracle_rule(pause, shape, told)
    touch, lifetime = start, shape.lifetime
    # The timer ticks inside the decision window: a tenth of the session's own lifetime, in
    # seconds, also at the end of a lifted hour (``warm90`` is its own rule: at 90%).
    five = shape.wire == "anthropic" and ttl_of(name, shape) == "5m"
    window = 0.1 * (LIFE_5M if five else shape.lifetime)
    while True:
        tick = 0.9 * lifetime if name == "warm90" else lifetime - window
        at = touch + timedelta(seconds=tick + 1)
        if at >= end:
            break
        clock["now"] = at
        before = session._guard.writer.ledger.ttl_seconds
        outcome = await tend(name, runtime, session, rule)
        if outcome.action != "kept_warm":
            actions[outcome.action] += 1
            if outcome.action == "compacted":
                calls.append(((at - start).total_seconds(), "compacted"))
            break
        # the timer's next tick: near the end of the lifetime the refresh left (a lift: 1 hour)
        lifetime = session._guard.writer.ledger.ttl_seconds
        actions["lifted" if lifetime > shape.lifetime else "kept_warm"] += 1
        calls.append(((at - start).total_seconds(), "lifted" if lifetime > before else "kept_warm"))
        touch = at
    clock["now"] = end


async def run(
    name: str,
    shape: Shape,
    days: list[list[tuple[float, int]]],
    clock: dict[str, Any],
    script: list[list[list[tuple[float, str]]]] | None = None,
) -> Run:
    """One policy over the whole trace on a fresh simulator; the bill and the history kept.

    ``script``: for a policy's all-hit run (``<policy>-all-hit``), the calls that policy made
    in each pause, made again in pauses cut to 5 seconds.
    """
    # the simulator's clock: the runtime's less the pauses an all-hit run cuts
    clock["skipped"] = timedelta(0)
    sim = Simulator(policy, SIM_PRICES, lambda: clock["now"] - clock["skipped"])
    result = Run(messages=[], misses=Counter(), actions=Counter())
    with running(sim) as url, tempfile.TemporaryDirectory() as tmp:
        base = url if shape.wire == "anthropic" else f"{url}/v1"
        plain = ags.get_model(shape.spec, base_url=base, api_key="sim")
        model = ags.get_model(
            shape.spec,
            base_url=base,
            api_key="sim",
            profile=replace(plain.profile, context_window=1_000_000),
        )
        config = ags.Config(
            titles=False,
            cache_ttl=ttl_of(name, shape),  # type: ignore[arg-type]
            idle_policy="auto" if name == "auto" else "off",
            context_window=1_000_000,
            max_transcript_messages=400,
            max_tool_result_chars=READ_CAP,
            # not the working directory: a temporary folder's random name would make a policy's
            # run and its all-hit run send requests a token apart
            environment=("platform", "git"),
        )
        runtime = ags.Runtime(
            store=ags.SQLiteStore(Path(tmp) / "s.db"),
            model=model,
            project_dir=Path(tmp),
            instructions=APP_PROMPT,
            tools=[*ags.builtin_tools(), read_source],
            clock=lambda: clock["now"],
            config=config,
        )
        async with runtime:
            for n, steps in enumerate(days):
                # each session's own week, at the same moment in every run (the date the
                # requests carry is the same in a policy's run and its all-hit run)
                clock["now"] = DAY0 + timedelta(days=7 * (n + 1))
                session = await runtime.create_session()
                billed = sim.bills[shape.wire].usd if shape.wire in sim.bills else 0.0
                result.script.append([])
                for k, (pause, lines) in enumerate(steps):
                    if k:
                        calls = list(script[n][k - 1]) if script is not None else []
                        clock["left"] = 2 * (len(steps) - k)  # a file read and an answer each
                        await pause_for(
                            name, pause, shape, runtime, session, clock, result.actions, calls
                        )
                        result.script[-1].append(calls)
                    before = len(sim.messages)
                    await session.prompt(f"read src/mod_{k}.py with {lines} lines, fix what fails")
                    result.messages.extend(sim.messages[before:])
                misses = session.cost().misses
                for miss in misses:
                    result.misses[miss.cause] += 1
                    result.miss_usd += miss.usd or 0.0
                result.sessions.append(
                    {
                        "usd": sim.bills[shape.wire].usd - billed,
                        "misses": [(m.seq, m.cause, m.usd or 0.0) for m in misses],
                    }
                )
        result.usd = sim.bills[shape.wire].usd
    return result


POLICIES = ("never", "all-hit", "compact54", "warm90", "auto", "auto-all-hit", "oracle")
FIXED = ("never", "compact54", "warm90")
ACTING = ("compact54", "warm90", "auto", "oracle")
KNOWN = (*POLICIES, *(f"{n}-{ALL_HIT}" for n in ACTING if n != "auto"))
CAUSED = ("context change", "window move", "expired", "compaction")
TOLERANCE = 1e-6
"""The misses check: the listed misses' sum within this share of the bill's excess (a session's:
of at least $1). Both runs send the same requests, so only rounding may part them."""


def miss_check(run: Run, all_hit: Run) -> dict[str, Any]:
    """Every miss of ``run`` and of its all-hit run caused, and their sums beside the bills.

    The all-hit run sends the same requests with every prefix the cache could hold read, so a
    miss of ``run`` it does not have is the pause's doing (``expired``), one both have has the
    same cause (a compaction's rewrite, which no pause changes), and the all-hit run has no
    miss ``run`` lacks. ``listed``: the sum of ``run``'s per-miss ``usd`` beyond the all-hit
    run's; ``excess``: the simulator's bill of ``run`` beyond the all-hit run's.
    """
    problems: list[str] = []
    residuals: dict[int, float] = {}  # per session, listed less excess where they differ
    for n, (ours, theirs) in enumerate(zip(run.sessions, all_hit.sessions, strict=True)):
        mine = {seq: cause for seq, cause, _ in ours["misses"]}
        base = {seq: cause for seq, cause, _ in theirs["misses"]}
        for seq, cause in sorted(mine.items()):
            want = base.get(seq, "expired")
            if cause != want:
                problems.append(f"session {n} seq {seq}: {cause}, expected {want}")
        problems += [
            f"session {n} seq {q}: only the all-hit run misses" for q in base.keys() - mine
        ]
        listed = sum(u for *_, u in ours["misses"]) - sum(u for *_, u in theirs["misses"])
        excess = ours["usd"] - theirs["usd"]
        if abs(listed - excess) > 1e-7:
            residuals[n] = listed - excess
        if abs(listed - excess) > TOLERANCE * max(abs(excess), 1.0):
            problems.append(f"session {n}: misses listed ${listed:.4f}, bill excess ${excess:.4f}")
    if "expired" in (all_hit.misses or {}):  # its cache never waits: a miss there is a fault
        problems.append(f"the all-hit run has {all_hit.misses['expired']} expired misses")
    for name, r in (("run", run), ("all-hit", all_hit)):
        problems += [
            f"{name}: {k} {c} misses" for k, c in (r.misses or {}).items() if k not in CAUSED
        ]
    listed, excess = run.miss_usd - all_hit.miss_usd, run.usd - all_hit.usd
    if abs(listed - excess) > TOLERANCE * abs(excess):
        problems.append(f"misses listed ${listed:.4f}, bill excess ${excess:.4f}")
    return {
        "misses": dict(run.misses or {}),
        "all_hit_misses": dict(all_hit.misses or {}),
        "listed_usd": listed,
        "excess_usd": excess,
        "residuals": residuals,
        "problems": problems,
    }


def figures(runs: dict[str, Run], sessions: int) -> dict[str, Any]:
    """The bill per session and history kept of each policy run; the goal's ratios when the
    fixed rules, ``auto`` and the oracle all ran (``merge`` joins runs made separately)."""
    per = {name: r.usd / sessions for name, r in runs.items()}
    kept = {name: sum(r.messages or []) / max(1, len(r.messages or [])) for name, r in runs.items()}
    row: dict[str, Any] = {
        "usd_per_session": per,
        "mean_messages": kept,
        "actions": {name: dict(r.actions or {}) for name, r in runs.items()},
        "misses": {name: dict(r.misses or {}) for name, r in runs.items()},
    }
    checks = {
        base_of(name): miss_check(runs[base_of(name)], r)
        for name, r in runs.items()
        if name.endswith(ALL_HIT) and base_of(name) in runs
    }
    if checks:
        row["miss_checks"] = checks
    return ratios(row)


def ratios(row: dict[str, Any]) -> dict[str, Any]:
    """Add the goal's ratios to a row holding every fixed rule, ``auto`` and the oracle."""
    per, kept = row["usd_per_session"], row["mean_messages"]
    if not all(n in per for n in (*FIXED, "auto", "oracle")):
        return row
    fixed = min(FIXED, key=lambda n: per[n])
    return row | {
        "cheapest_fixed": fixed,
        "auto_over_fixed": per["auto"] / per[fixed],
        "auto_over_oracle": per["auto"] / per["oracle"],
        "oracle_over_fixed": per["oracle"] / per[fixed],
        "auto_messages_over_fixed": kept["auto"] / kept[fixed],
    }


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    days = trace(args.seed, args.sessions, args.prompts)
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    out: dict[str, Any] = {"seed": args.seed, "sessions": args.sessions}
    for shape in SHAPES:
        if args.shape and shape.name not in args.shape:
            continue
        runs: dict[str, Run] = {}
        chosen = [n for n in args.policies.split(",") if n in KNOWN or n.startswith(TOLD)]
        if shape.name == "anthropic 1h":  # auto's and the oracle's run is the 5m shape's
            chosen = [n for n in chosen if base_of(n) not in CHOOSING]
        for name in chosen:
            base = runs.get(base_of(name)) if name.endswith(ALL_HIT) else None
            if name.endswith(ALL_HIT) and name != ALL_HIT and base is None:
                sys.exit(f"{name} repeats the calls of {base_of(name)}: run that first")
            script = base.script if base is not None and name != ALL_HIT else None
            runs[name] = r = await run(name, shape, days, clock, script)
            print(f"  {shape.name} {name}: ${r.usd / args.sessions:.4f}/session", flush=True)
        row = figures(runs, args.sessions)
        out[shape.name] = row
        print(f"\n{shape.name}:")
        for name in chosen:
            r = runs[name]
            print(
                f"  {name:9s} ${row['usd_per_session'][name]:8.4f}/session"
                f"  {row['mean_messages'][name]:6.1f} messages  misses {dict(r.misses or {})}"
                f"  {dict(r.actions or {})}"
            )
        if "cheapest_fixed" in row:
            print(
                f"  auto / cheapest fixed ({row['cheapest_fixed']}) = {row['auto_over_fixed']:.3f};"
                f" auto / oracle = {row['auto_over_oracle']:.3f}; history kept"
                f" {row['auto_messages_over_fixed']:.3f}x the fixed rule's"
            )
        for name, check in row.get("miss_checks", {}).items():
            print(
                f"  {name}: misses {check['misses']} (all-hit run: {check['all_hit_misses']});"
                f" listed ${check['listed_usd']:.4f} beyond the all-hit run's, bill excess"
                f" ${check['excess_usd']:.4f}"
            )
            if check["residuals"]:
                print(f"    per session, listed less excess: {check['residuals']}")
            for problem in check["problems"]:
                print(f"    MISSES CHECK FAILED: {problem}")
    return out


def merged() -> dict[str, Any]:
    """Every saved run of this script joined per seed and shape, with the goal's ratios."""
    table: dict[str, Any] = {}
    for path in sorted(RESULTS.glob("idle_sdk_day_seed*.json")):
        found = json.loads(path.read_text())["figures"]
        for shape, row in found.items():
            if not isinstance(row, dict):
                continue
            into = table.setdefault(f"seed {found['seed']}", {}).setdefault(
                shape, {"usd_per_session": {}, "mean_messages": {}, "actions": {}}
            )
            for key in ("usd_per_session", "mean_messages", "actions"):
                into[key].update(row.get(key, {}))
    for seed, shapes in table.items():
        five, hour = shapes.get("anthropic 5m"), shapes.get("anthropic 1h")
        if five and hour:  # the policies that choose the lifetime ran once for both
            for key in ("usd_per_session", "mean_messages", "actions"):
                hour[key].update({n: v for n, v in five[key].items() if n in CHOOSING})
        for shape, found in shapes.items():
            row = shapes[shape] = ratios(found)
            if "cheapest_fixed" not in row:
                continue
            per, kept = row["usd_per_session"], row["mean_messages"]
            print(
                f"{seed:8s} {shape:13s} "
                + " ".join(f"{n} ${per[n]:.3f}/{kept[n]:.1f}" for n in (*FIXED, "auto", "oracle"))
                + f" | auto/fixed {row['auto_over_fixed']:.3f} auto/oracle"
                f" {row['auto_over_oracle']:.3f} history {row['auto_messages_over_fixed']:.3f}"
            )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--prompts", type=int, default=14)
    parser.add_argument("--shape", action="append", default=[])
    parser.add_argument(
        "--policies",
        default=",".join(POLICIES),
        help="comma-separated, run in this order; never, the fixed rules, auto and oracle "
        "give the ratios; all-hit (never's) and <policy>-all-hit, each after its policy, the "
        "misses check",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="join the saved runs of every seed and shape into idle_sdk_day.json and print it",
    )
    args = parser.parse_args()
    command = " ".join(["python benchmarks/idle_sdk_day.py", *sys.argv[1:]])
    if args.merge:
        save("idle_sdk_day", merged(), command=command)
        return
    results = asyncio.run(run_all(args))
    shapes = "".join(f"_{n.replace(' ', '_')}" for n in args.shape)
    policies = args.policies.replace(",", "_").replace("-", "_")
    save(f"idle_sdk_day_seed{args.seed}{shapes}_{policies}", results, command=command)
    failed = [
        f"{shape} {name}"
        for shape, row in results.items()
        if isinstance(row, dict)
        for name, check in row.get("miss_checks", {}).items()
        if check["problems"]
    ]
    if failed:
        sys.exit(f"the misses check failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
