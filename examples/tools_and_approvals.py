"""Tools and approvals: plain functions as tools, a permission preset, and a call that asks first.

``@ags.tool`` makes a function a tool; its JSON schema comes from the type hints and the
docstring's ``Args:``. Each tool declares what it does (``effect``), and the session's
permission preset decides before every call: under ``workspace-write`` (the default) reading
runs, executing asks the user, and under ``read-only`` a write is refused with a result the
model reads. Offline: the scripted model plays the calls a provider would make.
Run it with ``python examples/tools_and_approvals.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import agentsession as ags

ran: list[str] = []


@ags.tool
def word_count(text: str) -> int:
    """Count the words of a text.

    Args:
        text: The text to count.
    """
    return len(text.split())


@ags.tool(effect="execute")
def deploy(target: str) -> str:
    """Deploy the current build.

    Args:
        target: Where to deploy: staging or production.
    """
    ran.append(target)
    return f"deployed to {target}"


@ags.tool(effect="write")
def save_note(text: str) -> str:
    """Save a note.

    Args:
        text: The note.
    """
    return "saved"


async def main(folder: Path) -> None:
    """A read, an approved and a denied call, and a write refused by the preset."""
    model = ags.ScriptedModel(
        [
            [ags.ToolCall("word_count", {"text": "ship it now"})],
            "Three words.",
            [ags.ToolCall("deploy", {"target": "staging"})],
            "Deployed to staging.",
            [ags.ToolCall("deploy", {"target": "production"})],
            "Production was not deployed: the user said no.",
            [ags.ToolCall("save_note", {"text": "remember"})],
            "I may not write under read-only.",
        ]
    )
    runtime = ags.Runtime(
        store=ags.SQLiteStore(folder / "sessions.db"),
        model=model,
        tools=[word_count, deploy, save_note],
        project_dir=folder,
        config=ags.Config(titles=False),
    )
    async with runtime:
        session = await runtime.create_session()
        print("preset:", session.permission_preset)

        # A read runs at once; the model reads its result and answers.
        result = await session.prompt("How many words in 'ship it now'?")
        print("reply:", result.text)

        # An execute call waits for the user; the turn stops and says so.
        result = await session.prompt("Deploy to staging.")
        print("stopped:", result.stop_reason)
        for request in result.approvals:
            print(f"asks: {request.name}({request.arguments}) because {request.reason}")
            await session.approve(request.call_id)
        result = await session.retry()  # runs the approved call, then the model goes on
        print("reply:", result.text, "| ran:", ran)

        # A denial becomes a result the model reads, with the user's note.
        result = await session.prompt("Deploy to production.")
        (request,) = result.approvals
        await session.deny(request.call_id, note="not on a Friday")
        result = await session.retry()
        print("reply:", result.text, "| ran:", ran)

        # Under read-only a write is refused without asking; the model reads why.
        session.set_permission_preset("read-only")
        result = await session.prompt("Save a note.")
        refused = [m for m in session.messages if m.role == "tool"][-1]
        print("tool result:", refused.content)
        print("reply:", result.text)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
