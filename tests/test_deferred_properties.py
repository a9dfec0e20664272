"""Deferred tools, for any sequence of searches and calls (issue 39, spec 003).

Each step the model either searches for one tool by name or calls one. A reference LRU says
which tools are loaded; a call succeeds exactly when its tool is loaded at that step (found in
an earlier step and not pushed out since), and is refused with ``Unknown tool`` otherwise. The
session runs on a real SQLite file; a reopened session offers the same loaded tools.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Literal

from hypothesis import example, given, settings
from hypothesis import strategies as st

import agentsession as ags

WORDS = ("ant", "bee", "cat", "dog", "eel", "fox")
Step = tuple[Literal["search", "call"], str]


def _tool(word: str) -> ags.Tool:
    def run() -> str:
        return f"{word} ran"

    return ags.tool(name=f"{word}_gadget", description=f"Works the {word}.", defer=True)(run)


TOOLS = [_tool(w) for w in WORDS]


def _reply(step: Step) -> list[ags.ToolCall]:
    action, word = step
    if action == "search":
        return [ags.ToolCall("search_tools", {"query": word})]
    return [ags.ToolCall(f"{word}_gadget", {})]


def _expected(steps: list[Step], limit: int) -> tuple[list[bool], list[str]]:
    """Whether each call succeeds, and the loaded tools in load order at the end."""
    recency: list[str] = []
    order: list[str] = []
    outcomes: list[bool] = []
    for action, word in steps:
        if action == "call":
            outcomes.append(word in recency)
            continue
        if word in recency:
            recency.remove(word)
        else:
            order.append(word)
        recency.append(word)
        while len(recency) > limit:
            order.remove(recency.pop(0))
    return outcomes, order


async def _check(steps: list[Step], limit: int, folder: Path) -> None:
    store = ags.SQLiteStore(folder / "sessions.db")
    config = ags.Config(max_loaded_tools=limit, titles=False, retry_base_delay=0)
    model = ags.ScriptedModel([*(_reply(s) for s in steps), "done"])
    async with ags.Runtime(store=store, model=model, tools=TOOLS, config=config) as runtime:
        session = await runtime.create_session()
        await session.prompt("go")
    results = [
        m
        for m in model.requests[-1].messages
        if isinstance(m, ags.ToolResultMessage) and m.name != "search_tools"
    ]
    outcomes, order = _expected(steps, limit)
    for result, succeeds, (_, word) in zip(
        results, outcomes, [s for s in steps if s[0] == "call"], strict=True
    ):
        if succeeds:
            assert result.content == f"{word} ran" and not result.is_error
        else:
            assert result.content == f"Unknown tool: {word}_gadget" and result.is_error
    loaded = [f"{w}_gadget" for w in order]
    assert [t.name for t in model.requests[-1].tools] == ["search_tools", *loaded]

    again = ags.ScriptedModel(["still"])
    store = ags.SQLiteStore(folder / "sessions.db")
    async with ags.Runtime(store=store, model=again, tools=TOOLS, config=config) as other:
        await (await other.open_session(session.id)).prompt("reopened")
    assert [t.name for t in again.requests[0].tools] == ["search_tools", *loaded]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["search", "call"]), st.sampled_from(WORDS)),
        min_size=1,
        max_size=12,
    ),
    st.integers(min_value=1, max_value=4),
)
# A tool evicted and found again goes to the end of the request, after a reopen too.
@example([("search", "ant"), ("search", "bee"), ("search", "cat"), ("search", "ant")], 2)
def test_a_call_succeeds_iff_its_tool_is_loaded(steps: list[Step], limit: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_check(steps, limit, Path(folder)))
