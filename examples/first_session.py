"""A first session: create it, prompt it, watch a turn stream, and reopen it from the file.

Offline: the scripted model plays the replies a provider would send, and the session lives in
an SQLite file in a temporary folder. Run it with ``python examples/first_session.py``; swap
``ScriptedModel`` for ``ags.get_model("openai:gpt-4.1")`` to talk to a real model.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import agentsession as ags


async def main(folder: Path) -> None:
    """Talk, stream a turn, then reopen the session in a new runtime."""
    model = ags.ScriptedModel(["Hello! How can I help?", "Paris."])
    config = ags.Config(titles=False)  # the scripted model writes no titles anyway
    db = folder / "sessions.db"
    async with ags.Runtime(store=ags.SQLiteStore(db), model=model, config=config) as runtime:
        session = await runtime.create_session()
        result = await session.prompt("Hi!")
        print("reply:", result.text, f"({result.stop_reason})")

        # The same turn as typed events, as they happen.
        async with session.stream("What is the capital of France?") as events:
            async for event in events:
                if isinstance(event, ags.StepCommitted):
                    print(
                        f"committed: {event.what}, log entries {event.first_seq}-{event.last_seq}"
                    )
                elif isinstance(event, ags.TurnFinished):
                    print("reply:", event.result.text)
        session_id = session.id

    # A new runtime on the same file (a new process would do the same) finds it all.
    model = ags.ScriptedModel(["About 2.1 million."])
    async with ags.Runtime(store=ags.SQLiteStore(db), model=model, config=config) as runtime:
        session = await runtime.open_session(session_id)
        print("reopened with", [m.role for m in session.messages])
        result = await session.prompt("How many people live there?")
        print("reply:", result.text)
        print("sessions in the file:", len(await runtime.list_sessions()))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
