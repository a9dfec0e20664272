"""The offline demo: a real session on SQLite with the scripted model and two small tools.

``demo_model()`` is the scripted model the CLI uses when no provider is configured: for a user
message it calls ``count_words`` on that text, and after the tool result it answers with it. So
every demo turn is a real multi-step turn — model, tool call, tool result, model — stored durably.
``python -m agentsession.cli.demo`` runs two turns and then shows the transcript and writes the HTML
report from new processes.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from ..config import Config
from ..context.component import ContextComponent
from ..providers.base import Model
from ..providers.scripted import demo_script
from ..tools import Tool, tool

__all__ = ["demo_model", "demo_tools", "main"]


@tool
def count_words(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text to count.
    """
    return len(text.split())


@tool
def shout(text: str) -> str:
    """Return the text in capital letters.

    Args:
        text: The text to convert.
    """
    return text.upper()


def demo_tools() -> list[Tool]:
    """The demo's tools."""
    return [count_words, shout]


def demo_model() -> Model:
    """The offline scripted model of the demo and of the CLI without a provider."""
    return demo_script()


async def _run(db: Path) -> str:
    from ..runtime import Runtime
    from ..store.sqlite import SQLiteStore
    from .console import PlainOutput, render

    # A plugin fact that changes between the turns: the second request carries it as one
    # mid-conversation system message, and everything before it stays byte-identical.
    mode = {"value": "Answer in full sentences."}
    style = ContextComponent("plugin.demo.style", lambda: mode["value"])
    model = demo_script()
    runtime = Runtime(
        store=SQLiteStore(db),
        model=model,
        tools=demo_tools(),
        components=[style],
        config=Config(retry_base_delay=0),
    )
    session = await runtime.create_session()
    print(f"session {session.id} in {db}\n")
    for text in ("How many words are in this sentence?", "And in this much shorter one?"):
        print(f"user: {text}")
        async with session.stream(text) as events:
            await render(events, PlainOutput(err=sys.stdout))
        print()
        mode["value"] = "Answer as briefly as possible."
    last, earlier = model.requests[-1], model.requests[1]
    kept = last.messages[: len(earlier.messages)] == earlier.messages
    print(f"the last request extends the earlier one byte for byte: {kept}")
    entries = await session.log()
    kinds = ", ".join(sorted({r.entry.kind for r in entries}))
    print(f"{len(entries)} log entries stored ({kinds})")
    print(f"title: {session.title}")
    await runtime.close()
    return session.id


def main() -> None:
    """Run the demo, then show the stored transcript and write the report from new processes."""
    if importlib.util.find_spec("rich") is None:  # the display of the cli extra
        sys.exit(
            "error: the demo shows its turns as the command line does:"
            " pip install 'agentsession[cli]'"
        )
    db = Path(os.environ.get("AGENTSESSION_DEMO_DB", ".demo/sessions.db"))
    db.parent.mkdir(parents=True, exist_ok=True)
    session_id = asyncio.run(_run(db))
    report = db.parent / "report.html"
    for command in (["show", session_id], ["report", session_id, "-o", str(report)]):
        print(f"\n$ agentsession --db {db} {' '.join(command)}   (a new process)")
        sys.stdout.flush()
        argv = [sys.executable, "-m", "agentsession", "--db", str(db), *command]
        done = subprocess.run(argv, check=False)
        if done.returncode:
            sys.exit(done.returncode)
    print(f"\nopen {report} in a browser: the session's timeline, epochs and prompt cache")


if __name__ == "__main__":
    main()
