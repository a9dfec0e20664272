"""``show`` marks a turn that ended without a reply: cancelled, failed, or left unfinished."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentsession as ags

from .cli_inprocess import cli_here


@ags.tool
def look(what: str) -> str:
    """Look at something."""
    return f"saw {what}"


async def test_show_marks_cancelled_and_failed_turns(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    model = ags.ScriptedModel(
        [[ags.ToolCall("look", {"what": "x"})], ValueError("bad gateway"), "fine"]
    )
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=model,
        tools=[look],
        project_dir=tmp_path,
        config=ags.Config(titles=False, provider_retries=0),
    )
    try:
        session = await runtime.create_session()
        async for event in session.stream("first, cancelled"):
            if isinstance(event, ags.ToolCallStarted):
                break  # leaving the stream cancels the turn
        with pytest.raises(ags.ProviderError):
            await session.prompt("second, failed")
        assert (await session.prompt("third")).text == "fine"
    finally:
        await runtime.close()

    shown = cli_here(tmp_path, "show", session.id, "--db", str(db))
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    first = lines.index("user: first, cancelled")
    assert lines[first + 3] == "  ✗ this turn was cancelled"
    second = lines.index("user: second, failed")
    assert lines[second + 1].startswith("  ✗ this turn failed: no answer was stored")
    assert lines[second + 2] == "user: third" and lines[-1] == "assistant: fine"

    as_json = cli_here(tmp_path, "--json", "show", session.id, "--db", str(db))
    marks = [json.loads(line) for line in as_json.out.splitlines() if '"turn_mark"' in line]
    assert len(marks) == 2
