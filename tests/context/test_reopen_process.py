"""Reopening a session in a new process reuses the stored baseline verbatim."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from datetime import datetime
    import agentsession as ags
    from agentsession.codec import encode

    db, session_id, text, status = sys.argv[1:5]

    async def main():
        model = ags.ScriptedModel(["reply"])
        runtime = ags.Runtime(
            store=ags.SQLiteStore(db),
            model=model,
            project_dir=sys.argv[5],
            clock=lambda: datetime(2026, 5, 5, 12, 0),
            components=[ags.ContextComponent("plugin.ci.status", lambda: status)],
        )
        if session_id == "new":
            session = await runtime.create_session()
        else:
            session = await runtime.open_session(session_id)
        await session.prompt(text)
        print(json.dumps({"id": session.id, "requests": encode(model.requests)}))
        await runtime.close()

    asyncio.run(main())
    """
)


def run_child(tmp_path: Path, session_id: str, text: str, status: str) -> dict[str, Any]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    db = str(tmp_path / "s.db")
    out = subprocess.run(
        [sys.executable, str(script), db, session_id, text, status, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_baseline_reused_across_processes(tmp_path: Path) -> None:
    first = run_child(tmp_path, "new", "one", "green")
    (request1,) = first["requests"]
    second = run_child(tmp_path, first["id"], "two", "green")
    (request2,) = second["requests"]
    assert request2["system"] == request1["system"]
    assert request2["messages"][: len(request1["messages"])] == request1["messages"]
    assert not any(m["role"] == "system" for m in request2["messages"])
    # A third process sees a changed source: the stored baseline still goes out verbatim and
    # the change arrives as one update after the new user message.
    third = run_child(tmp_path, first["id"], "three", "red")
    (request3,) = third["requests"]
    assert request3["system"] == request1["system"]
    assert ["plugin.ci.status", "green"] in request3["system"]
    assert request3["messages"][-2]["content"] == "three"
    assert request3["messages"][-1]["role"] == "system"
    assert "[plugin.ci.status]\nred" in request3["messages"][-1]["content"]
