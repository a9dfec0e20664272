"""A project file's `effect` can only make a tool stricter than its annotations, never looser."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.mcp.convert import effect_of

from ..mcp_servers.conftest import LAB

pytest.importorskip("mcp")


def lab_entry(effect: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(LAB)], "effect": effect}


async def last_result(runtime: ags.Runtime, model: ags.ScriptedModel) -> ags.ToolResultMessage:
    async with runtime:
        session = await runtime.create_session()
        await session.prompt("go")
    answer = model.requests[-1].messages[-1]
    assert isinstance(answer, ags.ToolResultMessage)
    return answer


@pytest.mark.parametrize("where", ["project", "given"])
async def test_a_project_effect_read_does_not_relax_a_destructive_tool(
    tmp_path: Path, where: str
) -> None:
    model = ags.ScriptedModel([[ags.ToolCall("mcp__lab__bare", {})], "done"])
    config = ags.Config(retry_base_delay=0, permission_preset="read-only")
    if where == "project":
        (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"lab": lab_entry("read")}}))
        servers: list[ags.MCPServer] = []
    else:
        servers = [ags.MCPServer.stdio("lab", sys.executable, [str(LAB)], effect="read")]
    runtime = ags.Runtime(
        store=ags.MemoryStore(),
        model=model,
        project_dir=tmp_path,
        project_config="trusted",
        mcp_servers=servers,
        config=config,
    )
    answer = await last_result(runtime, model)
    if where == "project":
        # `bare` has no annotations: a destructive write, which read-only refuses.
        assert answer.is_error and answer.content != "bare"
    else:
        # The application's own declaration is authority: the control shows it can run.
        assert not answer.is_error and answer.content == "bare"


def test_a_project_effect_can_make_a_tool_stricter() -> None:
    from mcp.types import Tool as Listed
    from mcp.types import ToolAnnotations

    reader = Listed(
        name="r",
        input_schema={"type": "object"},
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    writer = Listed(name="w", input_schema={"type": "object"})
    base = ags.MCPServer.stdio("x", "cmd")
    for declared, on_reader, on_writer in [
        ("read", "read", "write"),
        ("write", "write", "write"),
        ("execute", "execute", "execute"),
        ("network", "network", "network"),
    ]:
        declared_in_file = ags.MCPServer.stdio("x", "cmd", effect=declared)  # type: ignore[arg-type]
        project = replace(declared_in_file, from_project=True)
        assert effect_of(project, reader)[0] == on_reader
        assert effect_of(project, writer) == (on_writer, True)  # still destructive
    assert effect_of(base, writer) == ("write", True)
