"""Properties of loading in a session, for any sequence of ``load_skill`` calls.

After every load the request offers ``load_skill`` and then exactly the tools of the skills a
reference LRU says are loaded, in the order they were loaded; at most ``max_loaded_skills`` are
loaded; and a session reopened in a new runtime offers exactly the same tools and continues the
same LRU order.
"""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags

from .sessions import load, tool_names, tool_results, tool_skill

NAMES = ("ant", "bee", "cat", "dog", "eel")
SKILLS = [tool_skill(name) for name in NAMES]


def _reference(reads: list[str], limit: int) -> list[list[str]]:
    """The loaded skills in load order after each read (the LRU decides who leaves)."""
    recency: list[str] = []
    order: list[str] = []
    states = []
    for name in reads:
        if name in recency:
            recency.remove(name)
        else:
            order.append(name)
        recency.append(name)
        while len(recency) > limit:
            gone = recency.pop(0)
            order.remove(gone)
        states.append(list(order))
    return states


async def _check(reads: list[str], limit: int) -> None:
    store = ags.MemoryStore()
    config = ags.Config(max_loaded_skills=limit, titles=False)
    model = ags.ScriptedModel([*(load(n) for n in reads), "done"])
    runtime = ags.Runtime(store=store, model=model, skills=SKILLS, config=config)
    session = await runtime.create_session()
    await session.prompt("go")
    states = _reference(reads, limit)
    for request, loaded in zip(model.requests[1:], states, strict=True):
        assert tool_names(request) == ["load_skill", *(f"{n}_tool" for n in loaded)]
        assert len(tool_names(request)) - 1 <= limit  # the session's offer, not the reference
    digests = [json.loads(str(r.content)) for r in tool_results(model.requests[-1])]
    assert [d["contextChanged"]["active"] for d in digests] == reads

    # A new runtime on the same store: the same offer, the same LRU (one more read shows it).
    probe = NAMES[len(reads) % len(NAMES)]
    again = ags.ScriptedModel(["hello", load(probe), "done"])
    other = ags.Runtime(store=store, model=again, skills=SKILLS, config=config)
    reopened = await other.open_session(session.id)
    await reopened.prompt("still there?")
    await reopened.prompt("one more")
    assert tool_names(again.requests[0]) == tool_names(model.requests[-1])
    expected = _reference([*reads, probe], limit)[-1]
    assert tool_names(again.requests[-1]) == ["load_skill", *(f"{n}_tool" for n in expected)]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=9),
    st.integers(min_value=1, max_value=4),
)
def test_the_offer_follows_the_lru_and_survives_a_reopen(reads: list[str], limit: int) -> None:
    asyncio.run(_check(reads, limit))
