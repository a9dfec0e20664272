"""Inspection and cost: what each request held, what a prompt cache could serve, what it cost.

``session.inspect()`` rebuilds every dispatched request from the log alone and proves it by the
digest stored when it was sent; nothing is admitted or written. ``session.cost()`` prices the
provider-reported usage of every response from a price table (``Config(prices=...)`` here, for
the scripted model), and ``ags.lower()`` shows the exact body a provider would get.
Offline: the scripted model reports usage as a provider would. Run it with
``python examples/inspection_and_cost.py``; ``agentsession report ID`` draws the same as HTML.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import agentsession as ags

# USD per million tokens; an entry of the shipped table also names its source and date.
PRICE = ags.ModelPrice(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)


async def main(folder: Path) -> None:
    """Run three turns, then inspect, price and lower them."""
    model = ags.ScriptedModel(
        ["Hello.", "Fine, thanks.", "Goodbye."],
        name="example-model",
        profile=ags.ModelProfile(provider="example", reports_usage=True),
    )
    runtime = ags.Runtime(
        store=ags.SQLiteStore(folder / "sessions.db"),
        model=model,
        project_dir=folder,
        instructions="You are a terse assistant.",
        config=ags.Config(titles=False, environment=(), prices={"example-model": PRICE}),
    )
    async with runtime:
        session = await runtime.create_session()
        for text in ("Hi.", "How are you?", "Bye."):
            await session.prompt(text)

        inspection = await session.inspect()
        print("turns:", [turn.outcome for turn in inspection.turns])
        print("epochs:", [(epoch.number, epoch.reason) for epoch in inspection.epochs])
        for info in inspection.requests:
            print(
                f"request {info.number}: {info.tokens} tokens, {info.cacheable} repeat the"
                f" previous prefix, exact={info.exact}, cache: {info.cache}"
            )

        cost = session.cost()
        print(f"cost: {cost.requests} requests, ${cost.total_usd:.6f} ({sorted(cost.by_model)})")

        # The next request, before sending it: what it holds, in the neutral form and lowered.
        request = await session.preview_request("One more thing.")
        print("system sections:", [key for key, _ in request.system])
        body = ags.lower(request, "anthropic-messages", model="claude-sonnet-4-5")
        print("anthropic body keys:", sorted(body))
        print("its last message:", json.dumps(body["messages"][-1])[:70])


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
