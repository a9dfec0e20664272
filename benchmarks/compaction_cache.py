"""The compaction call's cached share: the summary request extends the live one (simulator).

For Anthropic Messages (``claude-opus-4-8``) and OpenAI Responses and Chat Completions
(``gpt-5.6-terra``), one session runs ``--turns`` turns through the official SDK against the
loopback simulator (``provider_sim``) with the setup of ``provider_cache``: a coding-agent-sized
application prompt, the built-in tools, each prompt → a tool call (a result of about a file
read's size, ~5,000 characters) → the answer, 20 seconds apart by the runtime's clock. Then
``await session.compact()`` summarises with the session's own model:
the summary request is the live request (same system part, tools and windowed history) with the
summary instruction appended, so its input should be read from the provider's cache.

Beside it, the same session shape compacts with a summariser that is the same model under another
name: the package cannot know it shares the cache, so it sends the plain-text render (the form a
summariser of another provider gets) — the cost the cache-reading request avoids.

With ``compaction="provider"`` the provider compacts: Anthropic's compaction block, and on
OpenAI Responses ``responses.compact`` — twice, once for the session with its tools and once for
a session that declares none (its prompts are answered in text of about a tool result's size):
the compact call takes no ``tools``, and OpenAI's prefix starts with them. Each provider row is
followed by one more turn that sends the block or items back (the simulator checks them).

Reported per shape and form: the summary call's input tokens, the share read from the cache
(provider-reported, from the ``SideCall`` in the log) and its cost by ``session.cost()``'s prices.

Usage: ``python benchmarks/compaction_cache.py [--turns 40]``; writes
``benchmarks/results/compaction_cache.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save
from provider_cache import APP_PROMPT, SHAPES, SIM_PRICES
from provider_cache import policy as turn_policy
from provider_sim import Reply, Simulator, running

import agentsession as ags
from agentsession.ledger import charge_usd
from agentsession.ledger.prices import price_for
from agentsession.log import SideCall, Summary
from agentsession.providers.base import ModelEvent


@ags.tool
def lookup(n: int) -> str:
    """Look a record up."""
    # About a file read's size: the history, not the system part, dominates the summary's input.
    lines = (f"line {i}: value {n * i} stays as read\n" for i in range(150))
    return f"record {n}:\n" + "".join(lines)


def policy(shape: str, text: str, tool_turn: bool) -> Reply:
    """The turns' model, and a summary whenever it is asked to compact."""
    if "comes from the agent runtime" in text or "Conversation to summarise" in text:
        return Reply(text="## Goal\nCheck records.\n## Facts and decisions\n" + "fact " * 60)
    if "without tools" in text:  # a session that declares no tools: a long answer instead
        return Reply(text="".join(f"line {i}: the answer stays as written\n" for i in range(150)))
    return turn_policy(shape, text, tool_turn)


class Renamed:
    """The same model under another name: the package treats it as another model."""

    def __init__(self, inner: ags.Model) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        return "plain-text-summariser"

    @property
    def profile(self) -> ags.ModelProfile:
        return self._inner.profile

    def stream(self, request: ags.Request) -> AsyncIterator[ModelEvent]:
        return self._inner.stream(request)


async def drive(
    shape: str,
    turns: int,
    url: str,
    clock: dict[str, datetime],
    *,
    plain: bool,
    provider: bool = False,
    sim: Simulator | None = None,
    tools: bool = True,
) -> dict[str, Any]:
    """One session of ``turns`` turns, then one compaction; the summary call's figures.

    ``provider``: ``Config(compaction="provider")`` — the provider compacts (Anthropic's
    compaction block, OpenAI's ``responses.compact``); one more turn then sends it back.
    ``tools=False``: the session declares no tools.
    """
    spec = SHAPES[shape]
    base = url if shape == "anthropic" else f"{url}/v1"
    model = ags.get_model(spec, base_url=base, api_key="sim")
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        runtime = ags.Runtime(
            store=ags.SQLiteStore(project / "s.db"),
            model=model,
            summarizer=Renamed(model) if plain else None,
            project_dir=project,
            instructions=APP_PROMPT,
            tools=[*ags.builtin_tools(), lookup] if tools else [],
            clock=lambda: clock["now"],
            config=ags.Config(
                max_transcript_messages=60,
                titles=False,
                compaction="provider" if provider else "local",
            ),
        )
        async with runtime:
            session = await runtime.create_session()
            ask = "please check record" if tools else "without tools, please tell record"
            for turn in range(turns):
                clock["now"] += timedelta(seconds=20)
                await session.prompt(f"turn {turn}: {ask} {turn}")
            clock["now"] += timedelta(seconds=20)
            assert await session.compact()
            replayed = _replayed(sim)
            if provider:
                clock["now"] += timedelta(seconds=20)
                await session.prompt("after the compaction: check record 1")
            log = await session.log()
    (call,) = [r.entry for r in log if isinstance(r.entry, SideCall)]
    form = "plain text" if plain else "extends the live request"
    form += "" if tools else ", no tools"
    if provider:
        (summary,) = [r.entry for r in log if isinstance(r.entry, Summary)]
        assert summary.block is not None, "the provider did not compact"
        form = "provider compaction" + ("" if tools else ", no tools")
    usage = call.usage
    price = price_for(call.model)
    billed, uncached = charge_usd(usage, price) if price is not None else (None, None)
    return {
        "model": spec,
        "form": form,
        "block_replayed": _replayed(sim) > replayed,
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cached_share": usage.cached_input_tokens / usage.input_tokens,
        "usd": billed,
        "uncached_usd": uncached,
    }


def _replayed(sim: Simulator | None) -> int:
    """Requests that sent a compaction block or item back, as the simulator accepted them."""
    return 0 if sim is None else sim.compactions.replayed + sim.openai_compactions.replayed


async def run_all(turns: int, shapes: list[str]) -> dict[str, Any]:
    clock = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}
    sim = Simulator(policy, SIM_PRICES, lambda: clock["now"])
    out: dict[str, Any] = {}
    with running(sim) as url:
        for shape in shapes:
            out[shape] = {
                "cached": await drive(shape, turns, url, clock, plain=False),
                "plain": await drive(shape, turns, url, clock, plain=True),
            }
            if shape in ("anthropic", "openai-responses"):
                out[shape]["provider"] = await drive(
                    shape, turns, url, clock, plain=False, provider=True, sim=sim
                )
            if shape == "openai-responses":
                for provider in (False, True):
                    out[shape]["no tools" + " provider" * provider] = await drive(
                        shape,
                        turns,
                        url,
                        clock,
                        plain=False,
                        provider=provider,
                        sim=sim,
                        tools=False,
                    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--shape", action="append", choices=list(SHAPES), default=[])
    args = parser.parse_args()
    results = asyncio.run(run_all(args.turns, args.shape or list(SHAPES)))
    for shape, forms in results.items():
        for r in forms.values():
            usd = "no price" if r["usd"] is None else f"${r['usd']:.4f}"
            print(
                f"{shape:17} {r['form']:25} input {r['input_tokens']:7,}"
                f"  cached share {r['cached_share']:6.1%}  cost {usd}"
            )
    save(
        "compaction_cache",
        {"turns": args.turns, "shapes": results},
        command=" ".join(["python benchmarks/compaction_cache.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
