"""The offline demo: a real session on SQLite with the scripted model and two small tools.

``demo_model()`` is the scripted model the CLI uses when no provider is configured: for a user
message it calls ``count_words`` on that text, and after the tool result it answers with it. So
every demo turn is a real multi-step turn — model, tool call, tool result, model — stored durably.
``python -m agentsession.demo`` runs two turns and then shows the transcript from a new process.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from .config import Config
from .context.component import ContextComponent
from .providers.scripted import Reply, ScriptedModel
from .request import Request, ToolCall, ToolResultMessage, UserMessage, text_of
from .tools import Tool, tool

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


def _demo_reply(request: Request) -> Reply:
    last = request.messages[-1] if request.messages else None
    for message in reversed(request.messages):
        if isinstance(message, ToolResultMessage):
            last = message
            break
        if isinstance(message, UserMessage):
            break
    if isinstance(last, ToolResultMessage):
        return f"(scripted demo model) `{last.name}` returned {text_of(last.content)!r}."
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    text = text_of(users[-1].content) if users else ""
    return [ToolCall("count_words", {"text": text})]


def demo_model() -> ScriptedModel:
    """The offline scripted model of the demo and of the CLI without a provider."""
    return ScriptedModel(_demo_reply, name="scripted:demo")


async def _run(db: Path) -> str:
    from .console import print_events
    from .runtime import Runtime
    from .store.sqlite import SQLiteStore

    # A plugin fact that changes between the turns: the second request carries it as one
    # mid-conversation system message, and everything before it stays byte-identical.
    mode = {"value": "Answer in full sentences."}
    style = ContextComponent("plugin.demo.style", lambda: mode["value"])
    model = demo_model()
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
        await print_events(session.stream(text))
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
    """Run the demo and show the stored transcript from a second process."""
    db = Path(os.environ.get("AGENTSESSION_DEMO_DB", ".demo/sessions.db"))
    db.parent.mkdir(parents=True, exist_ok=True)
    session_id = asyncio.run(_run(db))
    command = [sys.executable, "-m", "agentsession", "--db", str(db), "show", session_id]
    print(f"\n$ agentsession --db {db} show {session_id}   (a new process)")
    sys.stdout.flush()
    sys.exit(subprocess.run(command, check=False).returncode)


if __name__ == "__main__":
    main()
