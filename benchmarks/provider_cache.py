"""Provider caches in their own terms: sessions through the real SDKs against ``provider_sim``.

For each wire shape — OpenAI Chat Completions and Responses (``gpt-5.6-terra``, explicit cache
breakpoints) and Anthropic Messages (``claude-opus-4-8``) — one session runs ``--turns`` turns
through the official SDK against the loopback simulator: a coding-agent-sized application prompt
and the built-in tools, each prompt → a tool call → the answer; the System Context changes every
10 turns (in turn: the date rolls over to the next day, AGENTS.md is edited, the permission
preset switches, a plugin value changes) and a skill is loaded every 25 turns; cap 60 and
otherwise the default ``Config`` and the default model settings: every reply streams (server-sent
events, as the SDKs ask for them), and the model names the session after the first turn (that
call is billed by the simulator and counted by ``session.cost()``). Turns
are 20 seconds apart by the runtime's clock, which the simulated caches share, so the night
between two dates expires every cache.

Reported per shape: the provider-reported cached share of input tokens, the unexplained misses
``session.cost()`` counts, ``session.cost()`` against the simulator's own bill, and
``preview_cost`` against the billed input of the request that followed it, before every turn
(the largest and the mean difference; the title call is awaited after the first turn so that
the next request billed is the turn's).

Usage: ``python benchmarks/provider_cache.py [--turns 200]``; writes
``benchmarks/results/provider_cache.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save
from provider_sim import Price, Reply, Simulator, running

import agentsession as ags
from agentsession.log import SideCall

SHAPES = {
    "openai-chat": "openai-chat:gpt-5.6-terra",
    "openai-responses": "openai:gpt-5.6-terra",
    "anthropic": "anthropic:claude-opus-4-8",
}
# Run on request (``--shape openai-chat-auto``): a model before GPT-5.6, whose automatic cache
# reads in steps of 128 tokens and bills no writes. Not in ``SHAPES``, which other benchmarks
# take as their default list.
ALL_SHAPES = {**SHAPES, "openai-chat-auto": "openai-chat:gpt-4.1"}
# The simulator's own prices, typed from the providers' pages (the package ships its own table).
SIM_PRICES = {
    "gpt-5.6-terra": Price(input=2.0, cached=0.2, write=2.5, write_long=2.5, output=12.0),
    "gpt-4.1": Price(input=2.0, cached=0.5, write=2.0, write_long=2.0, output=8.0),
    "claude-opus-4-8": Price(input=5.0, cached=0.5, write=6.25, write_long=10.0, output=25.0),
}
APP_PROMPT = "\n\n".join(
    f"## Rule {n}\nWhen you work on a repository, read before you write; keep changes small, "
    "run the tests that cover what you touched, and explain what you changed and why. "
    "Never invent file contents; quote what you read. " * 3
    for n in range(60)
)


@ags.tool
def lookup(n: int) -> str:
    """Look a record up."""
    return f"record {n}: " + "detail " * 30


def skill(name: str) -> ags.Skill:
    @ags.tool(name=f"{name}_run")
    def run(x: str) -> str:
        """Run the skill's step."""
        return f"{name} did {x}"

    return ags.Skill(
        name=name,
        description=f"The {name} procedure.",
        instructions=f"Follow the {name} procedure step by step. " * 20,
        tools=[run],
    )


def policy(shape: str, text: str, tool_turn: bool) -> Reply:
    """The simulated model: a tool call for each prompt, then the answer."""
    if tool_turn:
        return Reply(text="done: " + "the answer in some words " * 4)
    wanted = re.search(r"load skill (\w+)", text)
    if wanted:
        return Reply(tool="load_skill", arguments={"name": wanted.group(1)})
    return Reply(tool="lookup", arguments={"n": len(text)})


async def drive(
    shape: str, turns: int, sim: Simulator, url: str, clock: dict[str, datetime]
) -> dict[str, Any]:
    """One session of ``turns`` turns over the real SDK of ``shape``; its figures."""
    spec = ALL_SHAPES[shape]
    base = url if shape == "anthropic" else f"{url}/v1"
    model = ags.get_model(spec, base_url=base, api_key="sim")  # streaming, as by default
    streamed_before = sim.streamed
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "AGENTS.md").write_text("Use four spaces.\n")
        value = {"text": "build green"}
        runtime = ags.Runtime(
            store=ags.SQLiteStore(project / "s.db"),
            model=model,
            project_dir=project,
            instructions=APP_PROMPT,
            tools=[*ags.builtin_tools(), lookup],
            skills=[skill("alpha"), skill("beta")],
            components=[
                ags.ContextComponent(
                    "plugin.ci.status",
                    lambda: ags.Rendered(f"CI: {value['text']}", f"CI: {value['text']}"),
                )
            ],
            clock=lambda: clock["now"],
            config=ags.Config(max_transcript_messages=60),
        )
        async with runtime:
            session = await runtime.create_session()
            presets = ["read-only", "workspace-write"]
            previews: list[float] = []
            warm: list[float] = []  # the differences at turns whose cache was warm
            worst: dict[str, dict[str, int]] = {}  # the turns of the largest differences
            for turn in range(turns):
                clock["now"] += timedelta(seconds=20)
                change = (turn // 10) % 4 if turn % 10 == 0 and turn else None
                if change == 0:
                    clock["now"] += timedelta(days=1)
                elif change == 1:
                    (project / "AGENTS.md").write_text(f"Use four spaces. Revision {turn}.\n")
                elif change == 2:
                    session.set_permission_preset(presets[(turn // 40) % 2])
                elif change == 3:
                    value["text"] = f"build {turn} green"
                text = f"turn {turn}: please check record {turn}"
                if turn % 25 == 24:
                    text += f" and load skill {'alpha' if (turn // 25) % 2 == 0 else 'beta'}"
                estimate = await session.preview_cost(text)
                count = len(sim.inputs)
                await session.prompt(text)
                billed = sim.inputs[count][1]
                previews.append(abs((estimate.input_usd or 0.0) - billed) / billed)
                total, read, w5, w1 = sim.details[count]
                figures = {
                    "turn": turn,
                    "preview_cached": estimate.cached_tokens,
                    "preview_uncached": estimate.uncached_tokens,
                    "billed_input": total,
                    "billed_read": read,
                    "billed_written": w5 + w1,
                }
                if previews[-1] >= max(previews):
                    worst["any"] = figures
                if read and previews[-1] >= max(warm or [0.0]):
                    worst["warm"] = figures
                if read:
                    warm.append(previews[-1])
                if turn == 0:
                    await session.named()  # the title call is over before the next preview
            summary = session.cost()
            log = await session.log()
            side = [r.entry.purpose for r in log if isinstance(r.entry, SideCall)]
            title = session.title
    bill = sim.bills[shape.removesuffix("-auto")]
    return {
        "model": spec,
        "requests": bill.requests,
        "streamed_requests": sim.streamed - streamed_before,
        "side_calls": side,
        "title": title,
        "preview_counted_by": "local" if estimate.reason else "provider",
        "cached_share": bill.cached_tokens / bill.input_tokens,
        "session_cached_share": summary.cached_share,
        "unexplained_misses": summary.unexplained_misses,
        "misses_by_cause": _by_cause(summary.misses),
        "simulator_bill_usd": bill.usd,
        "session_cost_usd": summary.total_usd,
        "uncached_usd": summary.uncached_usd,
        "bill_difference": abs((summary.total_usd or 0.0) - bill.usd) / bill.usd,
        "preview_input_usd": estimate.input_usd,
        "next_request_billed_input_usd": billed,
        "preview_difference": previews[-1],
        "preview_difference_max": max(previews),
        "preview_difference_mean": sum(previews) / len(previews),
        "previews": len(previews),
        "preview_difference_warm_max": max(warm or [0.0]),
        "preview_worst": worst,
    }


def _by_cause(misses: tuple[ags.CacheMiss, ...]) -> dict[str, dict[str, float]]:
    """Each cause's count and cost (``session.cost().misses``)."""
    out: dict[str, dict[str, float]] = {}
    for miss in misses:
        row = out.setdefault(miss.cause, {"count": 0, "usd": 0.0})
        row["count"] += 1
        row["usd"] += miss.usd or 0.0
    return out


async def run_all(turns: int, shapes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for shape in shapes:  # a simulator each: two shapes may bill under one route
        clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
        sim = Simulator(policy, SIM_PRICES, lambda c=clock: c["now"])
        with running(sim) as url:
            out[shape] = await drive(shape, turns, sim, url, clock)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--shape", action="append", choices=list(ALL_SHAPES), default=[])
    args = parser.parse_args()
    results = asyncio.run(run_all(args.turns, args.shape or list(SHAPES)))
    for shape, r in results.items():
        print(
            f"{shape:17} requests {r['requests']:4}  cached share {r['cached_share']:6.1%}"
            f"  unexplained {r['unexplained_misses']}  bill ${r['simulator_bill_usd']:.4f}"
            f"  session.cost() ${r['session_cost_usd']:.4f} (diff {r['bill_difference']:.2%})"
            f"  preview diff max {r['preview_difference_max']:.2%}"
            f" mean {r['preview_difference_mean']:.2%} ({r['preview_counted_by']})"
            f" warm max {r['preview_difference_warm_max']:.2%} worst {r['preview_worst']}"
            f"  streamed {r['streamed_requests']}  side calls {r['side_calls']}"
        )
        for cause, row in r["misses_by_cause"].items():
            print(f"{'':17} misses: {cause} {row['count']:.0f} ${row['usd']:.4f}")
    save(
        "provider_cache",
        {"turns": args.turns, "shapes": results},
        command=" ".join(["python benchmarks/provider_cache.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
