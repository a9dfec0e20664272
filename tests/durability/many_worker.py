"""One of the worker processes of the many-workers test: drive shared sessions to the end.

Every worker walks all sessions, in the same order, again and again: it runs the next prompt of
each session it can take, and releases the session's lease right after (``session.close()``),
as a worker pulling jobs from a queue would. Two workers meet all the time: a worker that finds
the lease taken, or whose view of the log is stale when it writes, gets ``ConflictError`` — the
lost race — and recovers with ``session.refresh()``, then moves on. It stops when every session
holds all its prompts. Prompt and answers name the worker, so the checker can tell who drove
each turn. Like the soak worker it notes every acknowledged append (``notes-<name>.jsonl``);
at the end it writes its counts to ``result-<name>.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import agentsession as ags

from .common import planned_reply, side_tool
from .soak_worker import Notes, NotingStore, open_store


def prompt_text(worker: str, number: int, k: int) -> str:
    """Prompt ``k`` of session ``number``, as ``worker`` sends it: every 4th one runs a tool."""
    return f"{worker} s{number} prompt {k}: {1 if k % 4 == 3 else 0}x1"


def config() -> ags.Config:
    return ags.Config(retry_base_delay=0, titles=False, environment=(), lease_ttl=10.0)


async def drive(job: dict[str, Any]) -> dict[str, int]:
    folder, name = Path(job["folder"]), job["name"]
    notes = Notes(folder / f"notes-{name}.jsonl")
    model = ags.ScriptedModel(lambda request: planned_reply(request, name))
    runtime = ags.Runtime(
        store=NotingStore(open_store(job["db"], job["postgres"]), notes),
        model=model,
        tools=[side_tool(folder / f"side-{name}.txt")],
        project_dir=folder / "project",
        config=config(),
    )
    counts = {"prompts": 0, "lease_races": 0, "append_races": 0, "wasted_responses": 0}
    ids: list[str] = job["sessions"]
    sessions: dict[str, ags.Session] = {}
    left = set(ids)
    try:
        while left:
            for number, session_id in enumerate(ids):
                if session_id not in left:
                    continue
                session = sessions.get(session_id) or await runtime.open_session(session_id)
                sessions[session_id] = session
                k = sum(m.role == "user" for m in session.messages)
                if k >= job["prompts"]:
                    left.discard(session_id)
                    continue
                await one_prompt(session, prompt_text(name, number, k), model, counts)
    finally:
        await runtime.close()
        notes.close()
    return counts


async def one_prompt(
    session: ags.Session, text: str, model: ags.ScriptedModel, counts: dict[str, int]
) -> None:
    """Run one prompt; a lost race is counted and recovered from."""
    asked = len(model.requests)
    try:
        await session.prompt(text)
        counts["prompts"] += 1
    except ags.ConflictError as exc:
        lease = "being driven by another process" in str(exc)
        counts["lease_races" if lease else "append_races"] += 1
        # A race may only be lost before the model is called: a paid response is never lost.
        counts["wasted_responses"] += len(model.requests) > asked
        await session.refresh()
    finally:
        await session.close()  # let the other worker in


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    folder = Path(job["folder"])
    go = folder / "go"
    while not go.exists():  # start together, so that the workers meet from the first session
        time.sleep(0.005)
    counts = asyncio.run(drive(job))
    (folder / f"result-{job['name']}.json").write_text(json.dumps(counts), encoding="utf-8")


if __name__ == "__main__":
    main()
