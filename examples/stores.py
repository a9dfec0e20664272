"""Stores: where sessions live, and how a session moves, branches and is caught up.

``SQLiteStore`` keeps sessions in one file (the default); ``PostgresStore`` serves many worker
processes; ``MemoryStore`` keeps them for one process, for tests. A session moves between
stores as a JSON Lines file (export, then import: the same bytes on the way back), branches
with ``fork``, and any runtime on the same file (or database) opens it again.
Run it with ``python examples/stores.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import agentsession as ags


async def main(folder: Path) -> None:
    """Move a session between stores, branch it, and reopen it."""
    config = ags.Config(titles=False)
    model = ags.ScriptedModel(["Blue.", "Green.", "Red, then."])
    sqlite = ags.Runtime(store=ags.SQLiteStore(folder / "sessions.db"), model=model, config=config)
    session = await sqlite.create_session()
    await session.prompt("Pick a colour.")
    await session.prompt("Another one?")

    # Export to a session file, import it into another store.
    path = folder / "session.jsonl"
    entries = await session.export(path)
    print(f"exported {entries} log entries")
    memory = ags.Runtime(store=ags.MemoryStore(), model=model, config=config)
    moved = await memory.import_session(path)
    print("imported:", moved.id == session.id, [m.content for m in moved.messages][:2])
    again = folder / "again.jsonl"
    await moved.export(again)
    print("same bytes after the round trip:", again.read_bytes() == path.read_bytes())

    # A branch: the log up to the end of the first turn, then another way.
    first_reply = next(r.seq for r in await session.log() if r.entry.kind == "assistant")
    branch = await session.fork(first_reply)
    result = await branch.prompt("Not blue: another one?")
    print("branch:", [m.content for m in branch.messages][:3])

    print("branch reply:", result.text)
    await sqlite.close()  # writes what is pending, releases the session's lease
    await memory.close()

    # Another runtime (another process would do the same) finds both in the file.
    other = ags.Runtime(store=ags.SQLiteStore(folder / "sessions.db"), model=model, config=config)
    async with other:
        for info in await other.list_sessions():
            print(f"stored: {info.message_count} messages, next seq {info.next_seq}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
