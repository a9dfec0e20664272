"""MCP tool listings → declared tools: effects from annotations, schemas as they are."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import Tool as ListedTool
from mcp.types import ToolAnnotations

import agentsession as ags
from agentsession.mcp.convert import declared_tool, effect_of

SERVER = ags.MCPServer.stdio("s", "x")
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "required": ["q"],
}


def listed(annotations: ToolAnnotations | None, schema: dict[str, Any] = SCHEMA) -> ListedTool:
    return ListedTool(name="t", description="d", input_schema=schema, annotations=annotations)


@pytest.mark.parametrize(
    ("hints", "effect", "destructive"),
    [
        (None, "write", True),
        (ToolAnnotations(read_only_hint=True), "read", False),
        (ToolAnnotations(read_only_hint=False, destructive_hint=False), "write", False),
        (ToolAnnotations(read_only_hint=False, destructive_hint=True), "write", True),
        (ToolAnnotations(read_only_hint=True, open_world_hint=True), "network", False),
        (ToolAnnotations(open_world_hint=True, destructive_hint=False), "network", False),
        (ToolAnnotations(open_world_hint=False), "write", True),
    ],
)
def test_effects_follow_the_annotations(
    hints: ToolAnnotations | None, effect: str, destructive: bool
) -> None:
    assert effect_of(SERVER, listed(hints)) == (effect, destructive)


def test_the_declarations_override_wins() -> None:
    server = ags.MCPServer.stdio("s", "x", effect="execute")
    readonly = listed(ToolAnnotations(read_only_hint=True, open_world_hint=True))
    assert effect_of(server, readonly) == ("execute", False)
    assert effect_of(server, listed(None)) == ("execute", True)


def test_schemas_pass_through_and_an_object_root_is_required() -> None:
    tool = declared_tool(SERVER, listed(None), "mcp__s__t")
    assert tool.parameters == SCHEMA and tool.parameters is not SCHEMA
    untyped = declared_tool(SERVER, listed(None, {"properties": {}}), "mcp__s__t")
    assert untyped.parameters == {"properties": {}, "type": "object"}
    with pytest.raises(ags.UsageError, match="describes 'array'"):
        declared_tool(SERVER, listed(None, {"type": "array"}), "mcp__s__t")
    with pytest.raises(ags.UsageError, match="call it in a session"):
        tool(q="x")
