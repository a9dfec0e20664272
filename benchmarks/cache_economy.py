"""Figure 5 — cache economy: what a changing System Context costs the provider's prompt cache.

A scripted session of ``--turns`` turns, each prompt → a tool call → the answer, whose System
Context changes every 10 turns, in turn: the date rolls over, the project's AGENTS.md is
edited, the permission preset switches, a plugin component joins (later leaves), and the model
loads a skill (with ``max_loaded_skills=1`` the next load unloads the previous one, so its tools
leave). Every request is lowered to ``anthropic-messages`` with a profile that has native
mid-conversation system messages and native tool changes (``claude-opus-4-8``), and each
consecutive pair of wire bodies is classified the way Anthropic's cache diagnostics do: the
first difference in prefix order names the miss — ``model_changed``, ``tools_changed``,
``system_changed``, ``messages_changed`` — else the request is a hit. ``cache_control``
markers are ignored (they move by design). Prefix reuse is the share of a request's estimated
tokens that lie in the prefix it shares with the request before it.

Runs: no window pressure (a cap of 100,000 messages); a cap of 60 with several
``window_step`` values; and a naive strategy computed from the no-pressure run's own requests:
every change rewritten into the system prompt (the update messages folded into the system
part, the tool list as currently offered). Goal: no miss caused by a context change.

Usage: ``python benchmarks/cache_economy.py [--turns 200]``; writes
``benchmarks/results/cache_economy.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save

import agentsession as ags
from agentsession.budget import EstimateCounter
from agentsession.providers import profile_for
from agentsession.request import Request, SystemMessage

PROFILE = profile_for("anthropic", "claude-opus-4-8")
COUNTER = EstimateCounter()
STEPS = (1, 2, 4, 8, 16)


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
        instructions=f"Follow the {name} procedure step by step. " * 5,
        tools=[run],
    )


async def session_requests(
    turns: int, cap: int, step: int | None, keep: float | None = None
) -> list[Request]:
    """The neutral requests of the scripted session under ``cap`` and ``step``."""
    moment = {"now": datetime(2026, 3, 1, 9, 0)}
    pending_skill: dict[str, str | None] = {"name": None}

    def reply(request: Request) -> Any:
        last = request.messages[-1]
        if last.role == "user":
            name = pending_skill["name"]
            if name is not None:
                pending_skill["name"] = None
                return [ags.ToolCall("load_skill", {"name": name})]
            return [ags.ToolCall("lookup", {"n": len(request.messages)})]
        if last.role == "tool" and str(last.content).startswith("contextChanged"):
            return [ags.ToolCall("lookup", {"n": 1})]
        return "done: " + "the answer in some words " * 4

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "AGENTS.md").write_text("Use four spaces.\n")
        model = ags.ScriptedModel(reply, profile=PROFILE)
        runtime = ags.Runtime(
            store=ags.SQLiteStore(project / "s.db"),
            model=model,
            project_dir=project,
            tools=[lookup],
            skills=[skill("alpha"), skill("beta")],
            clock=lambda: moment["now"],
            config=ags.Config(
                max_transcript_messages=cap,
                window_step=step,
                max_loaded_skills=1,
                **({} if keep is None else {"window_keep": keep}),
            ),
        )
        status = {"text": "build green"}
        handle = None
        session = await runtime.create_session()
        presets = ["read-only", "workspace-write"]
        for turn in range(turns):
            change = (turn // 10) % 5 if turn % 10 == 0 and turn else None
            if change == 0:
                moment["now"] += timedelta(days=1)
            elif change == 1:
                (project / "AGENTS.md").write_text(f"Use four spaces. Revision {turn}.\n")
            elif change == 2:
                session.set_permission_preset(presets[(turn // 50) % 2])
            elif change == 3:
                if handle is None:
                    handle = runtime.register_component(
                        ags.ContextComponent(
                            "plugin.ci.status",
                            lambda: ags.Rendered(f"CI: {status['text']}", f"CI: {status['text']}"),
                        )
                    )
                else:
                    handle.remove()
                    handle = None
            elif change == 4:
                pending_skill["name"] = "alpha" if (turn // 50) % 2 == 0 else "beta"
            await session.prompt(f"turn {turn}: please check record {turn}")
        await runtime.close()
        # The session's own requests (the titler asks the model once for a title, apart).
        return [r for r in model.requests if not (r.system and r.system[0][0] == "title")]


def strip_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    return value


def tokens(value: Any) -> int:
    return COUNTER.count(json.dumps(value, sort_keys=True))


def first_history(request: Request) -> Any:
    return next((m for m in request.messages if not isinstance(m, SystemMessage)), None)


def classify(requests: list[Request]) -> dict[str, Any]:
    """Hits, misses by reason and prefix reuse over consecutive wire bodies.

    A miss is put down to the window when the request's history starts elsewhere than the
    previous one's (the window moved); every other miss is put down to a context change.
    """
    bodies = lowered(requests)
    reasons: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    reused = total = 0
    for i, body in enumerate(bodies):
        parts = [body.get("tools", []), body.get("system", [])]
        total += tokens(parts[0]) + tokens(parts[1]) + sum(tokens(m) for m in body["messages"])
        if i == 0:
            continue
        previous = bodies[i - 1]
        old, new = previous["messages"], body["messages"]
        common = 0
        while common < min(len(old), len(new)) and old[common] == new[common]:
            common += 1
        if previous["model"] != body["model"]:
            reason = "model_changed"
        elif previous.get("tools", []) != parts[0]:
            reason = "tools_changed"
        elif previous.get("system", []) != parts[1]:
            reason = "system_changed"
            reused += tokens(parts[0])
        elif common < len(old):
            reason = "messages_changed"
            reused += tokens(parts[0]) + tokens(parts[1]) + sum(tokens(m) for m in new[:common])
        else:
            reason = "hit"
            reused += tokens(parts[0]) + tokens(parts[1]) + sum(tokens(m) for m in old)
        reasons[reason] += 1
        if reason != "hit":
            moved = first_history(requests[i]) != first_history(requests[i - 1])
            causes["window advance" if moved else "context change"] += 1
    pairs = sum(reasons.values())
    return {
        "requests": len(bodies),
        "hits": reasons["hit"],
        "hit_rate": reasons["hit"] / max(1, pairs),
        "misses": {k: v for k, v in reasons.items() if k != "hit"},
        "misses_by_cause": dict(causes),
        "context_change_misses": causes["context change"],
        "prefix_reuse": reused / max(1, total),
        "avg_history_messages": sum(
            sum(not isinstance(m, SystemMessage) for m in r.messages) for r in requests
        )
        / max(1, len(requests)),
    }


def lowered(requests: list[Request]) -> list[dict[str, Any]]:
    return [
        strip_markers(ags.lower(r, "anthropic-messages", profile=PROFILE, model="claude-opus-4-8"))
        for r in requests
    ]


def naive(requests: list[Request]) -> list[Request]:
    """The same requests with every change rewritten into the system prompt."""
    out: list[Request] = []
    for request in requests:
        updates = [m for m in request.messages if isinstance(m, SystemMessage)]
        offered = [t for t in request.tools]
        for update in updates:
            offered = [t for t in offered if t.name not in update.tools_removed]
        system = (*request.system, *((f"update:{i}", u.content) for i, u in enumerate(updates)))
        messages = tuple(m for m in request.messages if not isinstance(m, SystemMessage))
        out.append(replace(request, system=system, messages=messages, tools=tuple(offered)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    runs: dict[str, Any] = {}
    free = asyncio.run(session_requests(args.turns, 100_000, 1))
    runs["no window pressure"] = classify(free)
    runs["naive: changes rewritten into the system prompt"] = classify(naive(free))
    for step in STEPS:
        requests = asyncio.run(session_requests(args.turns, 60, step))
        runs[f"cap 60, window_step {step}"] = classify(requests)
    requests = asyncio.run(session_requests(args.turns, 60, None))
    runs["cap 60, default policy (window_step=None)"] = classify(requests)
    for name, result in runs.items():
        print(
            f"{name:48} hits {result['hit_rate']:6.1%}  reuse {result['prefix_reuse']:6.1%}"
            f"  avg msgs {result['avg_history_messages']:5.1f}  misses {result['misses']}"
            f" by cause {result['misses_by_cause']}"
        )
    save(
        "cache_economy",
        {"turns": args.turns, "runs": runs},
        command=" ".join(["python benchmarks/cache_economy.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
