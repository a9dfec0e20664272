"""A process killed during compaction leaves the session usable with its old epoch."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import agentsession as ags
from agentsession.log import ContextEpoch

CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    import agentsession as ags

    db, marker, project = sys.argv[1:4]

    def slow_summary(request):
        Path(marker).write_text("summarising")
        time.sleep(60)
        return "never stored"

    async def main():
        runtime = ags.Runtime(
            store=ags.SQLiteStore(db),
            model=ags.ScriptedModel(["a", "b", "c"]),
            summarizer=ags.ScriptedModel(slow_summary),
            project_dir=project,
        )
        session = await runtime.create_session()
        print(session.id, flush=True)
        for text in ("one", "two", "three"):
            await session.prompt(text)
        await session.compact()

    asyncio.run(main())
    """
)


def test_kill_during_compaction(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    db, marker = tmp_path / "s.db", tmp_path / "marker"
    child = subprocess.Popen(
        [sys.executable, str(script), str(db), str(marker), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        session_id = child.stdout.readline().strip()
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline, "the child never reached the summariser"
            assert child.poll() is None, "the child exited early"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
        if child.stdout is not None:
            child.stdout.close()
    asyncio.run(check_reopened(db, session_id, tmp_path))


async def check_reopened(db: Path, session_id: str, project: Path) -> None:
    model = ags.ScriptedModel(["still works"])
    runtime = ags.Runtime(store=ags.SQLiteStore(db), model=model, project_dir=project)
    try:
        session = await runtime.open_session(session_id)
        log = await session.log()
        assert [r.seq for r in log] == list(range(len(log)))
        assert not any(r.entry.kind == "summary" for r in log)
        epochs = [r.entry for r in log if isinstance(r.entry, ContextEpoch)]
        assert [e.reason for e in epochs] == ["start"]
        result = await session.prompt("four")
        assert result.text == "still works"
        (request,) = model.requests
        assert [m.content for m in request.messages if m.role == "user"] == [
            "one",
            "two",
            "three",
            "four",
        ]
    finally:
        await runtime.close()
