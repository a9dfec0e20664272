"""The default window policy on other workloads than its own benchmark's: tuned on some, held out.

Figure 5 (``cache_economy.py``) measures the window policy on one scripted session. A policy
tuned there may only fit that session, so this script builds sessions of the same shape — turns
of prompt → tool calls → answer, the System Context changing every few turns (date, AGENTS.md,
permission preset, a plugin component, a skill load), lowered to ``anthropic-messages`` and
classified as Anthropic's cache diagnostics do — with other text and other seeds: each *shape*
draws how many tool calls a turn makes, how long prompts, tool results and answers are, and how
often the context changes, from its own seed. Shapes 1–10 are the tuning set (the policy was
chosen looking at them), shapes 11–16 are held out (measured once, after the choice).

For each shape and policy: prefix reuse (the share of a request's tokens in the prefix it shares
with the request before it) and the mean history messages per request, as in figure 5. Goal for
the default policy on the held-out shapes: prefix reuse ≥ 0.90 with ≥ 45 history messages on
average (the window cap is 60).

Usage: ``python benchmarks/window_policy.py [--turns 200] [--shapes 1-16] [--keep 0.6,0.65]
[--steps 4,8]``;
writes ``benchmarks/results/window_policy.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save
from cache_economy import PROFILE, classify, skill

import agentsession as ags
from agentsession.request import Request

TUNING = tuple(range(1, 11))
HELD_OUT = tuple(range(11, 17))
WORDS = " ".join(
    (
        "alpha branch cache delta event field graph index join kernel ledger merge node offset",
        "parser query record schema token update vector window yield zone build check deploy",
        "review commit module import export signal buffer stream socket thread worker",
    )
).split()


@dataclass(frozen=True)
class Shape:
    """One workload: how its turns and its context changes are drawn."""

    seed: int
    calls: tuple[int, ...]  # tool calls per turn, drawn uniformly from these
    prompt_words: tuple[int, int]
    result_words: tuple[int, int]
    answer_words: tuple[int, int]
    change_every: int  # turns between context changes


def shape(number: int) -> Shape:
    """Shape ``number``, drawn from its own seed (shape 0 is figure 5's own session)."""
    rng = random.Random(1_000 + number)
    low = rng.randint(0, 1)
    return Shape(
        seed=number,
        calls=tuple(range(low, low + rng.randint(1, 4))),
        prompt_words=(rng.randint(4, 10), rng.randint(12, 40)),
        result_words=(rng.randint(10, 40), rng.randint(50, 160)),
        answer_words=(rng.randint(5, 15), rng.randint(20, 60)),
        change_every=rng.randint(6, 14),
    )


def text(rng: random.Random, span: tuple[int, int]) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(*span)))


async def requests_of(form: Shape, turns: int, config: dict[str, Any]) -> list[Request]:
    """The neutral requests of one session of ``form`` under the window ``config``."""
    rng = random.Random(form.seed)
    moment = {"now": datetime(2026, 3, 1, 9, 0)}
    plan = {"calls": 0, "skill": None}

    @ags.tool
    def lookup(n: int) -> str:
        """Look a record up."""
        return f"record {n}: " + text(rng, form.result_words)

    def reply(request: Request) -> Any:
        last = request.messages[-1]
        if last.role == "user" and plan["skill"] is not None:
            name, plan["skill"] = plan["skill"], None
            return [ags.ToolCall("load_skill", {"name": name})]
        if int(plan["calls"] or 0) > 0:
            plan["calls"] = int(plan["calls"] or 0) - 1
            return [ags.ToolCall("lookup", {"n": len(request.messages)})]
        return "done: " + text(rng, form.answer_words)

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "AGENTS.md").write_text("Use four spaces.\n")
        model = ags.ScriptedModel(reply, profile=PROFILE)
        runtime = ags.Runtime(
            store=ags.MemoryStore(),
            model=model,
            project_dir=project,
            tools=[lookup],
            skills=[skill("alpha"), skill("beta")],
            clock=lambda: moment["now"],
            config=ags.Config(max_transcript_messages=60, max_loaded_skills=1, **config),
        )
        handle = None
        session = await runtime.create_session()
        for turn in range(turns):
            due = turn % form.change_every == 0 and turn
            change = (turn // form.change_every) % 5 if due else None
            if change == 0:
                moment["now"] += timedelta(days=1)
            elif change == 1:
                (project / "AGENTS.md").write_text(f"Use four spaces. Revision {turn}.\n")
            elif change == 2:
                session.set_permission_preset(["read-only", "workspace-write"][turn % 2])
            elif change == 3:
                if handle is None:
                    component = ags.ContextComponent("plugin.ci.status", lambda: "CI: green")
                    handle = runtime.register_component(component)
                else:
                    handle.remove()
                    handle = None
            elif change == 4:
                plan["skill"] = "alpha" if turn % 2 else "beta"
            plan["calls"] = rng.choice(form.calls)
            moment["now"] += timedelta(seconds=rng.randint(5, 90))
            await session.prompt(f"turn {turn}: " + text(rng, form.prompt_words))
        await runtime.close()
        return [r for r in model.requests if not (r.system and r.system[0][0] == "title")]


def measure(numbers: tuple[int, ...], turns: int, config: dict[str, Any]) -> dict[str, Any]:
    rows = {}
    for number in numbers:
        found = classify(asyncio.run(requests_of(shape(number), turns, config)))
        rows[str(number)] = {
            "prefix_reuse": found["prefix_reuse"],
            "avg_history_messages": found["avg_history_messages"],
            "misses": found["misses"],
        }
    reuse = [r["prefix_reuse"] for r in rows.values()]
    held = [r["avg_history_messages"] for r in rows.values()]
    return {
        "shapes": rows,
        "min_reuse": min(reuse),
        "mean_reuse": sum(reuse) / len(reuse),
        "min_avg_messages": min(held),
        "mean_avg_messages": sum(held) / len(held),
    }


def numbers(spec: str) -> tuple[int, ...]:
    low, _, high = spec.partition("-")
    return tuple(range(int(low), int(high or low) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--shapes", default="1-16")
    parser.add_argument("--keep", default="", help="window_keep values to compare, e.g. 0.6,0.65")
    parser.add_argument("--steps", default="", help="window_step values to compare, e.g. 4,8")
    args = parser.parse_args()
    chosen = numbers(args.shapes)
    policies: dict[str, dict[str, Any]] = {"default policy": {}}
    for keep in filter(None, args.keep.split(",")):
        policies[f"window_keep {keep}"] = {"window_keep": float(keep)}
    for step in filter(None, args.steps.split(",")):
        policies[f"window_step {step}"] = {"window_step": int(step)}
    runs: dict[str, Any] = {}
    for name, config in policies.items():
        for label, group in (("tuning", TUNING), ("held out", HELD_OUT)):
            picked = tuple(n for n in group if n in chosen)
            if not picked:
                continue
            result = measure(picked, args.turns, config)
            runs[f"{name} · {label}"] = result
            print(
                f"{name:20} {label:9} reuse min {result['min_reuse']:6.1%}"
                f" mean {result['mean_reuse']:6.1%}  avg msgs min"
                f" {result['min_avg_messages']:5.1f} mean {result['mean_avg_messages']:5.1f}  "
                + "  ".join(
                    f"{k}: {v['prefix_reuse']:.3f}/{v['avg_history_messages']:.1f}"
                    for k, v in result["shapes"].items()
                ),
                flush=True,
            )
    save(
        "window_policy",
        {"turns": args.turns, "shapes": {n: asdict(shape(n)) for n in chosen}, "runs": runs},
        command=" ".join(["python benchmarks/window_policy.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
