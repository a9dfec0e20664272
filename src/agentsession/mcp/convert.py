"""MCP values → this package's values: tool declarations with effects, results, resource text.

Effects come from what the user configured (a project's own file may only make a tool stricter
than its annotations: ``read`` < ``write`` < ``execute`` < ``network``) and, failing that, from
the tool's annotations, read conservatively: ``openWorldHint: true`` → ``network``;
``readOnlyHint: true`` → ``read``; anything else → ``write``. A tool that is not read-only is
``destructive`` unless it says ``destructiveHint: false`` (MCP's own default), so presets
that ask for anything ask before it runs. The permission gate decides on the ``Tool`` built
here, never on a description or a result, so nothing a server writes can widen what the
preset allows.

A tool result's content is a string in this package: text parts are kept as they are, every
other part (image, audio, resource link, embedded resource) becomes a one-line description
naming its type, MIME type, size and URI; structured content is added as JSON when no text part
carries it. The whole result passes ``clean_text`` with the configured limit, like every tool
result.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..hygiene import clean_text
from ..tools import Effect, Tool, ToolOutcome
from .config import MCPServer

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock, ReadResourceResult
    from mcp.types import Tool as ListedTool

__all__ = ["declared_tool", "effect_of", "render_content", "render_resource", "tool_outcome"]

_DESCRIPTION_LIMIT = 10_000
_STRICTNESS: dict[Effect, int] = {"read": 0, "write": 1, "execute": 2, "network": 3}


def effect_of(server: MCPServer, listed: ListedTool) -> tuple[Effect, bool]:
    """The effect and destructiveness a tool is declared with."""
    hints = listed.annotations
    read_only = bool(hints is not None and hints.read_only_hint)
    open_world = bool(hints is not None and hints.open_world_hint)
    destructive = not read_only and not (hints is not None and hints.destructive_hint is False)
    annotated: Effect = "network" if open_world else ("read" if read_only else "write")
    if server.effect is None:
        return annotated, destructive
    if server.from_project:
        # A folder's file is data: it may ask for more care, never for less.
        stricter = max(annotated, server.effect, key=_STRICTNESS.__getitem__)
        return stricter, destructive
    return server.effect, destructive and server.effect != "read"


def declared_tool(server: MCPServer, listed: ListedTool, name: str, *, defer: bool = False) -> Tool:
    """The ``Tool`` the session offers for ``listed`` under ``name`` (``UsageError`` if unfit).

    ``defer``: it is offered only once ``search_tools`` found it.
    """
    schema = _schema(listed.input_schema)
    effect, destructive = effect_of(server, listed)
    description = listed.description or listed.title or listed.name

    def not_direct(**_: Any) -> Any:
        raise UsageError(f"{name} is a tool of MCP server {server.name!r}: call it in a session")

    return Tool(
        name=name,
        description=clean_text(description, _DESCRIPTION_LIMIT),
        parameters=schema,
        fn=not_direct,
        effect=effect,
        destructive=destructive,
        timeout=server.timeout,
        defer=defer,
    )


def _schema(raw: Any) -> dict[str, Any]:
    """A plain-JSON copy of an input schema whose root is an object (``type`` added if left out)."""
    if not isinstance(raw, dict):
        raise UsageError("its input schema is not a JSON object")
    try:
        schema: dict[str, Any] = json.loads(json.dumps(raw))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"its input schema is not plain JSON: {exc}") from exc
    kind = schema.setdefault("type", "object")
    if kind != "object":
        raise UsageError(f"its input schema describes {kind!r}, not an object of arguments")
    schema.setdefault("properties", {})
    return schema


def tool_outcome(result: CallToolResult, limit: int | None) -> ToolOutcome:
    """The neutral result of one call: rendered content, bounded; ``isError`` kept."""
    parts = [render_content(block) for block in result.content]
    texts = [block for block in result.content if block.type == "text"]
    if result.structured_content is not None and not texts:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(p for p in parts if p) or "(no content)"
    return ToolOutcome(clean_text(text, limit), bool(result.is_error))


def render_content(block: ContentBlock) -> str:
    """One content part as text; a part that is not text is described in one line."""
    match block.type:
        case "text":
            return block.text
        case "image" | "audio":
            size = _decoded_size(block.data)
            return f"[{block.type}: {block.mime_type}, {size} bytes, not shown]"
        case "resource_link":
            about = f" - {block.description}" if block.description else ""
            mime = f", {block.mime_type}" if block.mime_type else ""
            return f"[resource link: {block.name} <{block.uri}>{mime}{about}]"
        case "resource":
            inner = block.resource
            mime = inner.mime_type or "unknown type"
            if hasattr(inner, "text"):
                return f"[resource <{inner.uri}>, {mime}]\n{inner.text}"
            size = _decoded_size(getattr(inner, "blob", ""))
            return f"[resource <{inner.uri}>: {mime}, {size} bytes, not shown]"
    return f"[{block.type} content, not shown]"


def render_resource(
    server: MCPServer, uri: str, result: ReadResourceResult, limit: int | None
) -> str:
    """The text a resource component states: its text contents; binary ones described."""
    parts: list[str] = []
    for item in result.contents:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            size = _decoded_size(getattr(item, "blob", ""))
            parts.append(f"[{item.mime_type or 'binary'} content of {item.uri}, {size} bytes]")
    body = clean_text("\n".join(parts), limit)
    return f"Resource {uri} of MCP server '{server.name}':\n{body}"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
