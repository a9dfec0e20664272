"""How ``Config.window_step`` trades window fullness for prompt-cache reuse.

Runs the same scripted conversation (tool-heavy turns, a context change now and then) once per
``window_step`` value, side by side in one process, and reports for each:

- ``hits``: the share of requests whose prefix extends the previous request (a cache hit with
  any provider that caches prefixes), from the dispatch records' cache diagnosis;
- ``reused``: the share of input tokens that lie in such a reused prefix;
- ``epochs``: how many context epochs the window advances started;
- ``avg msgs``: the mean number of history messages per request (how much the model saw).

Everything is a ratio or a count from one run: no timings. Usage:
``python benchmarks/window_step.py [--turns 300] [--cap 60]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import agentsession as ags
from agentsession.budget import measure
from agentsession.log import ContextEpoch, Dispatch

sys.path.insert(0, str(Path(__file__).parent))
from _results import save


@ags.tool
def lookup(n: int) -> str:
    """Look something up."""
    return f"result {n} " + "detail " * 20


async def run(step: int, turns: int, cap: int) -> dict[str, float]:
    state = {"calls": 0}

    def reply(request: ags.Request) -> Any:
        if state["calls"] > 0:
            state["calls"] -= 1
            return [ags.ToolCall("lookup", {"n": state["calls"]})]
        return "done " + "words " * 15

    moment = {"now": datetime(2026, 1, 1, 9)}
    model = ags.ScriptedModel(reply)
    with tempfile.TemporaryDirectory() as tmp:
        runtime = ags.Runtime(
            store=ags.MemoryStore(),
            model=model,
            project_dir=tmp,
            tools=[lookup],
            clock=lambda: moment["now"],
            config=ags.Config(max_transcript_messages=cap, window_step=step),
        )
        session = await runtime.create_session()
        for turn in range(turns):
            state["calls"] = turn % 4
            if turn % 25 == 24:
                moment["now"] += timedelta(days=1)
            await session.prompt(f"turn {turn}: " + "please " * 10)
        log = await session.log()
        await runtime.close()
    caches = [r.entry.cache for r in log if isinstance(r.entry, Dispatch)]
    epochs = sum(isinstance(r.entry, ContextEpoch) for r in log)
    counter = runtime.token_counter
    total = reused = 0
    previous: ags.Request | None = None
    for request in model.requests:
        tokens = measure(request, counter).total
        total += tokens
        if (
            previous is not None
            and request.messages[: len(previous.messages)] == (previous.messages)
            and request.system == previous.system
        ):
            reused += measure(previous, counter).total
        previous = request
    sizes = [sum(m.role != "system" for m in r.messages) for r in model.requests]
    return {
        "requests": len(caches),
        "hits": caches.count("hit") / max(1, len(caches) - 1),
        "reused": reused / total,
        "epochs": epochs,
        "avg msgs": sum(sizes) / len(sizes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--cap", type=int, default=60)
    args = parser.parse_args()
    print(f"{args.turns} turns, max_transcript_messages={args.cap}\n")
    print(
        f"{'window_step':>11}  {'requests':>8}  {'hits':>6}  {'reused':>6}  {'epochs':>6}  avg msgs"
    )
    rows = []
    for step in (1, 2, 4, 5, 10):
        r = asyncio.run(run(step, args.turns, args.cap))
        rows.append({"step": step, **r})
        print(
            f"{step:>11}  {r['requests']:>8.0f}  {r['hits']:>6.1%}  {r['reused']:>6.1%}"
            f"  {r['epochs']:>6.0f}  {r['avg msgs']:.1f}"
        )
    figures = {"turns": args.turns, "cap": args.cap, "rows": rows}
    save(
        "window_step",
        figures,
        command=" ".join(["python benchmarks/window_step.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
