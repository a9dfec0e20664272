"""Deferred tools at scale: 500 MCP-shaped tools behind ``search_tools``, through the real SDKs.

For each wire shape (OpenAI Chat Completions and Responses, Anthropic Messages) one session runs
``--turns`` turns against the loopback provider simulator (``provider_sim``) with the
coding-agent-sized application prompt of ``provider_cache``, 500 deferred
tools named like an MCP server's (``mcp__crm__<verb>_<noun>``, each with a short description and
two typed arguments) and the default ``Config(max_loaded_tools=16)``. Each turn needs one tool
from a working set that drifts through the 500 (40 distinct tools over 200 turns); when that tool
is not loaded the simulated model first calls ``search_tools`` with its exact name, then calls it,
then answers. A reference LRU in the script predicts which tools are loaded, and every call's
result is checked: each needed tool must be found and run.

The tools are declared as application tools with ``defer=True``: the same ``Tool`` objects an MCP
server's ``defer_tools`` gives, without a server process per run (the tests run a real 500-tool
MCP server). Reported per shape: the provider-reported cached share of input tokens; the tool
tokens per request (every declaration a request carries: the top-level list and, on Anthropic,
the tools added in place; on Chat Completions, where loaded tools are called through
``call_tool``, every search result that gives declarations, counted whole) against the same
for one request that declares all 500 tools, counted by the simulator's own rule for that
shape; loads, evictions and failed calls.

Usage: ``python benchmarks/deferred_tools.py [--turns 200]``; writes
``benchmarks/results/deferred_tools.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save
from provider_cache import APP_PROMPT, SHAPES, SIM_PRICES
from provider_sim import Reply, Simulator, _openai_tokens, _tokens, running

import agentsession as ags
from agentsession.log import ToolLoaded, ToolResultEntry, ToolUnloaded

TOOLS = 500
#: How a search result that carries declarations (Chat Completions' ``call_tool``) says so.
DECLARED = "Call them with call_tool"
VERBS = ("get", "list", "create", "update", "archive", "export", "merge", "tag", "assign", "rank")
NOUNS = tuple(
    f"{kind}{n}" for kind in ("account", "lead", "deal", "ticket", "invoice") for n in range(10)
)


def make_tool(index: int, *, defer: bool) -> ags.Tool:
    verb, noun = VERBS[index % len(VERBS)], NOUNS[index // len(VERBS)]
    name = f"mcp__crm__{verb}_{noun}"

    def run(record_id: str, limit: int = 10) -> str:
        return f"{name} ran for {record_id}"

    description = (
        f"{verb.capitalize()} the {noun} records of the CRM. Returns the matching records as"
        " JSON, newest first, up to the limit."
    )
    return ags.tool(name=name, description=description, defer=defer)(run)


def needed(turn: int) -> int:
    """The tool turn ``turn`` needs: a working set of 8 that moves on every 40 turns."""
    base = (turn // 40) * 97
    return (base + (turn * 7) % 8 * 13) % TOOLS


class Script:
    """The simulated model's plan for the running turn, and the loaded set it predicts."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.recency: list[str] = []
        self.steps: list[Reply] = []
        self.lock = threading.Lock()

    def plan(self, name: str) -> None:
        steps: list[Reply] = []
        if name not in self.recency:
            steps.append(Reply(tool="search_tools", arguments={"query": name}))
        else:
            self.recency.remove(name)
        self.recency.append(name)
        del self.recency[: max(0, len(self.recency) - self.limit)]
        steps.append(Reply(tool=name, arguments={"record_id": "r-7"}))
        steps.append(Reply(text="Done: the records are listed above."))
        with self.lock:
            self.steps = steps

    def policy(self, shape: str, text: str, tool_turn: bool) -> Reply:
        with self.lock:
            if not self.steps:  # a side call (the title): a short answer
                return Reply(text="CRM work")
            reply = self.steps.pop(0)
        if shape == "openai-chat" and reply.tool and reply.tool != "search_tools":
            # Chat Completions offers loaded tools through the stable call_tool proxy.
            inner = {"name": reply.tool, "arguments": reply.arguments}
            return Reply(tool="call_tool", arguments=inner)
        return reply


class Counting(Simulator):
    """The simulator, also counting the tool declarations each request carries."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tool_tokens: dict[str, list[int]] = {}

    def anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        deferred = {t["name"]: t for t in body.get("tools", []) if t.get("defer_loading")}
        tools = [t for t in body.get("tools", []) if t["name"] not in deferred]
        for message in body["messages"]:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_addition":
                    tools.append(block["tool"])
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    parts = block.get("content") or []
                    tools += [
                        deferred[p["tool_name"]] for p in parts if p.get("type") == "tool_reference"
                    ]
        self.tool_tokens.setdefault("anthropic", []).append(sum(_tokens(t) for t in tools))
        return super().anthropic(body)

    def openai(self, shape: str, body: dict[str, Any]) -> dict[str, Any]:
        tools = list(body.get("tools", []))
        for item in body.get("input", []):
            if isinstance(item, dict) and item.get("type") == "tool_search_output":
                tools.extend(item["tools"])
        declared = 0  # on Chat: the declarations the search results give as text, in full
        for message in body.get("messages", []):
            content = message.get("content")
            if message.get("role") == "tool" and isinstance(content, str) and DECLARED in content:
                declared += _openai_tokens(content)
        self.tool_tokens.setdefault(shape, []).append(
            declared + sum(_openai_tokens(t) for t in tools)
        )
        return super().openai(shape, body)


async def drive(
    shape: str, turns: int, sim: Counting, script: Script, url: str, clock: Callable[[], datetime]
) -> dict[str, Any]:
    """One session of ``turns`` turns over the real SDK of ``shape``; its figures."""
    base = url if shape == "anthropic" else f"{url}/v1"
    model = ags.get_model(SHAPES[shape], base_url=base, api_key="sim")
    start = len(sim.tool_tokens.get(shape, []))
    with tempfile.TemporaryDirectory() as tmp:
        runtime = ags.Runtime(
            store=ags.SQLiteStore(Path(tmp) / "s.db"),
            model=model,
            project_dir=tmp,
            instructions=APP_PROMPT,
            tools=[make_tool(i, defer=True) for i in range(TOOLS)],
            clock=clock,
            config=ags.Config(titles=False),
        )
        async with runtime:
            session = await runtime.create_session()
            for turn in range(turns):
                script.plan(make_tool(needed(turn), defer=True).name)
                await session.prompt(f"turn {turn}: look the records up")
            log = [r.entry for r in await session.log()]
    bill = sim.bills[shape]
    results = [e for e in log if isinstance(e, ToolResultEntry) and e.name != "search_tools"]
    ran = [e for e in results if not e.is_error and str(e.content).endswith("ran for r-7")]
    sent = sim.tool_tokens[shape][start:]
    return {
        "model": SHAPES[shape],
        "requests": bill.requests,
        "cached_share": bill.cached_tokens / bill.input_tokens,
        "calls": len(results),
        "calls_ran": len(ran),
        "loads": sum(isinstance(e, ToolLoaded) for e in log),
        "evictions": sum(isinstance(e, ToolUnloaded) for e in log),
        "tool_tokens_mean": sum(sent) / len(sent),
        "tool_tokens_max": max(sent),
    }


async def all_tools_request(shape: str, sim: Counting, url: str) -> int:
    """The tool tokens of one request that declares all 500 tools (nothing deferred)."""
    base = url if shape == "anthropic" else f"{url}/v1"
    model = ags.get_model(SHAPES[shape], base_url=base, api_key="sim")
    start = len(sim.tool_tokens.get(shape, []))
    with tempfile.TemporaryDirectory() as tmp:
        tools = [make_tool(i, defer=False) for i in range(TOOLS)]
        runtime = ags.Runtime(
            store=ags.MemoryStore(),
            model=model,
            project_dir=tmp,
            tools=tools,
            config=ags.Config(titles=False),
        )
        async with runtime:
            await (await runtime.create_session()).prompt("hello")
    return sim.tool_tokens[shape][start]


async def run_all(turns: int, shapes: list[str]) -> dict[str, Any]:
    moment = {"now": datetime(2026, 3, 1, 9, 0).astimezone()}

    def clock() -> datetime:
        return moment["now"]

    script = Script(ags.Config().max_loaded_tools)
    sim = Counting(script.policy, SIM_PRICES, clock)
    out: dict[str, Any] = {}
    with running(sim) as url:
        for shape in shapes:
            script.recency = []
            moment["now"] += timedelta(days=1)  # each shape starts with cold caches
            figures = await drive(shape, turns, sim, script, url, clock)
            script.steps = [Reply(text="hello")]
            figures["all_tools_tool_tokens"] = await all_tools_request(shape, sim, url)
            figures["tool_token_ratio"] = (
                figures["tool_tokens_mean"] / figures["all_tools_tool_tokens"]
            )
            out[shape] = figures
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--shape", action="append", choices=list(SHAPES), default=[])
    args = parser.parse_args()
    results = asyncio.run(run_all(args.turns, args.shape or list(SHAPES)))
    for shape, r in results.items():
        print(
            f"{shape:17} requests {r['requests']:4}  cached share {r['cached_share']:6.1%}"
            f"  tool tokens/request {r['tool_tokens_mean']:7.0f} (max {r['tool_tokens_max']})"
            f" vs all 500: {r['all_tools_tool_tokens']} ({r['tool_token_ratio']:.3f})"
            f"  calls ran {r['calls_ran']}/{r['calls']}  loads {r['loads']}"
            f"  evictions {r['evictions']}"
        )
    save(
        "deferred_tools",
        {"turns": args.turns, "tools": TOOLS, "shapes": results},
        command=" ".join(["python benchmarks/deferred_tools.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
