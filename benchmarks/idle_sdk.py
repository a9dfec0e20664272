"""The keep-warm call through the real SDKs (simulator): does it read the cache and refresh it?

``idle_day.py`` prices a day from the ledger's rule; this checks the one call that rule assumes
on the wire. Per shape (``provider_cache``'s: Anthropic Messages with the 5-minute lifetime,
OpenAI Responses and Chat Completions with the simulator's 30 minutes), one session runs 8
turns (a prompt → a tool call → the answer) whose pauses are first 20 s, then 1.3 lifetimes;
then it is left idle until 93% of the lifetime, ``await runtime.tend_idle()`` runs with
``idle_policy="auto"``, and the next prompt comes 1.3 lifetimes after the last one. Beside it,
the same session with ``idle_policy="off"``. Reported: what ``tend_idle`` did, the keep-warm
call's cached share and cost (its ``SideCall``), and the next turn's first request — read from
the cache or written again — with the dollars of both paths.

Usage: ``python benchmarks/idle_sdk.py``; writes ``benchmarks/results/idle_sdk.json``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save
from compaction_cache import lookup, policy
from provider_cache import APP_PROMPT, SHAPES, SIM_PRICES
from provider_sim import Simulator, running

import agentsession as ags
from agentsession.log import AssistantEntry, SideCall
from agentsession.providers.cache_policy import cache_lifetime

TURNS = 8


async def drive(shape: str, url: str, clock: dict[str, datetime], idle: str) -> dict[str, Any]:
    """One session, one idle pause, the next prompt; the figures of the pause."""
    base = url if shape == "anthropic" else f"{url}/v1"
    model = ags.get_model(SHAPES[shape], base_url=base, api_key="sim")
    lifetime = cache_lifetime(model.profile, "5m")
    if shape != "anthropic":
        lifetime = 1800.0  # the simulator's OpenAI lifetime with explicit breakpoints
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        config = ags.Config(titles=False, cache_ttl="5m", idle_policy=idle)
        runtime = ags.Runtime(
            store=ags.SQLiteStore(project / "s.db"),
            model=model,
            project_dir=project,
            instructions=APP_PROMPT,
            tools=[*ags.builtin_tools(), lookup],
            clock=lambda: clock["now"],
            config=config,
        )
        async with runtime:
            session = await runtime.create_session()
            for turn in range(TURNS):
                pause = 20.0 if turn < TURNS // 2 else 1.3 * lifetime
                clock["now"] += timedelta(seconds=pause)
                await session.prompt(f"turn {turn}: please check record {turn}")
            before = session.cost().total_usd or 0.0
            clock["now"] += timedelta(seconds=0.93 * lifetime)
            outcome = (await runtime.tend_idle())[session.id]
            clock["now"] += timedelta(seconds=0.37 * lifetime)
            await session.prompt("back again: please check record 99")
            after = session.cost().total_usd or 0.0
            log = await session.log()
    calls = [r.entry for r in log if isinstance(r.entry, SideCall)]
    turns = [r.entry for r in log if isinstance(r.entry, AssistantEntry)]
    back = turns[-2].usage  # the first request of the last turn (its tool call)
    row: dict[str, Any] = {
        "action": outcome.action,
        "reason": outcome.reason,
        "next_request_cached_share": back.cached_input_tokens / back.input_tokens,
        "pause_usd": after - before,
    }
    if calls:
        usage = calls[-1].usage
        row["keep_warm_cached_share"] = usage.cached_input_tokens / usage.input_tokens
        row["keep_warm_usd"] = outcome.side_call_usd
    return row


async def run_all() -> dict[str, Any]:
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    sim = Simulator(policy, SIM_PRICES, lambda: clock["now"])
    out: dict[str, Any] = {}
    with running(sim) as url:
        for shape in SHAPES:
            out[shape] = {idle: await drive(shape, url, clock, idle) for idle in ("auto", "off")}
    return out


def main() -> None:
    results = asyncio.run(run_all())
    for shape, rows in results.items():
        for idle, r in rows.items():
            warm = r.get("keep_warm_cached_share")
            call = (
                "" if warm is None else f" keep-warm cached {warm:.1%} ${r['keep_warm_usd']:.4f};"
            )
            print(
                f"{shape:17} {idle:4} {r['action']:10}{call} next request cached"
                f" {r['next_request_cached_share']:.1%}; the pause and the next turn"
                f" ${r['pause_usd']:.4f}"
            )
    save("idle_sdk", {"shapes": results}, command="python benchmarks/idle_sdk.py")


if __name__ == "__main__":
    main()
