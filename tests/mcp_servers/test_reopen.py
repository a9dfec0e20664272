"""A session that used an MCP server, reopened in a new process, connects again and goes on."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from .conftest import LAB

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    import agentsession as ags

    db, session_id, lab, log, text = sys.argv[1:6]

    async def main():
        server = ags.MCPServer.stdio("lab", sys.executable, [lab], env={"LAB_LOG": log})
        call = ags.ToolCall("mcp__lab__echo", {"text": text})
        model = ags.ScriptedModel([[call], "done"])
        runtime = ags.Runtime(
            store=ags.SQLiteStore(db), model=model, project_dir=sys.argv[6], mcp_servers=[server]
        )
        if session_id == "new":
            session = await runtime.create_session()
        else:
            session = await runtime.open_session(session_id)
        await session.prompt(f"echo {text}")
        tools = [m for m in model.requests[-1].messages if m.role == "tool"]
        print(json.dumps({"id": session.id, "results": [[t.content, t.is_error] for t in tools]}))
        await runtime.close()

    asyncio.run(main())
    """
)


def run_child(tmp_path: Path, session_id: str, text: str) -> dict[str, Any]:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    args = [str(tmp_path / "s.db"), session_id, str(LAB), str(tmp_path / "lab.log"), text]
    done = subprocess.run(
        [sys.executable, str(script), *args, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_reopened_session_reconnects_and_continues(tmp_path: Path) -> None:
    first = run_child(tmp_path, "new", "one")
    second = run_child(tmp_path, first["id"], "two")

    assert first["results"] == [["one", False]]
    assert second["id"] == first["id"]
    # the second process sees the first call's result in history and its own call answered
    assert second["results"] == [["one", False], ["two", False]]
    starts = (tmp_path / "lab.log").read_text(encoding="utf-8").splitlines()
    assert len([line for line in starts if line.startswith("started ")]) == 2
