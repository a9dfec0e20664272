"""A small MCP server written with the SDK, for the tests: tools and a resource that change.

Run as ``python lab_server.py`` (stdio) or ``python lab_server.py --http`` (streamable HTTP on a
free loopback port, printed as the first line of stdout). Tool calls change the server itself:
``grow``/``shrink`` add and remove the tool ``extra``, ``set_note``/``drop_note`` change and
remove the resource ``note://current``, each followed by the change notification of both
protocol eras. ``LAB_LOG`` names a file that gets one line per start and per cancelled call;
``LAB_COLLIDE=1`` adds two tools whose names meet once sanitised. The tool ``huge`` answers
with a result of the given size. ``freeze`` stops the process (alive and silent) and ``vanish``
ends it, each in the middle of its own call.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import socket
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

server = MCPServer("lab", instructions="The lab server: ask it to grow or shrink.")
state: dict[str, str | None] = {"note": "first note"}


def log(line: str) -> None:
    path = os.environ.get("LAB_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


async def announce_tools(ctx: Context) -> None:
    await ctx.notify_tools_changed()  # 2026 connections: the subscriptions/listen stream
    await ctx.session.send_tool_list_changed()  # earlier ones: a plain notification


async def announce_note(ctx: Context) -> None:
    await ctx.notify_resource_updated("note://current")
    await ctx.session.send_resource_updated("note://current")


def extra(text: str) -> str:
    """The tool that comes and goes."""
    return f"extra says {text}"


@server.tool(annotations=READ)
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool(annotations=WRITE)
async def grow(ctx: Context) -> str:
    """Add the tool extra."""
    server.add_tool(extra, annotations=READ)
    await announce_tools(ctx)
    return "grown"


@server.tool(annotations=WRITE)
async def shrink(ctx: Context) -> str:
    """Remove the tool extra."""
    server.remove_tool("extra")
    await announce_tools(ctx)
    return "shrunk"


@server.tool(annotations=WRITE)
async def set_note(text: str, ctx: Context) -> str:
    """Change the note resource."""
    state["note"] = text
    await announce_note(ctx)
    return "noted"


@server.tool(annotations=WRITE)
async def drop_note(ctx: Context) -> str:
    """Remove the note resource."""
    state["note"] = None
    await announce_note(ctx)
    return "dropped"


@server.tool(annotations=READ)
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool(annotations=READ)
async def slow(seconds: float) -> str:
    """Sleep, noting the start and a cancellation in the lab log."""
    log("slow started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        log("cancelled slow")
        raise
    return "slept"


@server.tool(annotations=READ)
def gallery() -> CallToolResult:
    """One part of every kind."""
    pixel = base64.b64encode(b"\x89PNG fake image bytes").decode()
    return CallToolResult(
        content=[
            TextContent(text="a caption"),
            ImageContent(data=pixel, mime_type="image/png"),
            ResourceLink(name="readme", uri="file:///lab/README.md", mime_type="text/markdown"),
            EmbeddedResource(
                resource=TextResourceContents(
                    uri="note://embedded", mime_type="text/plain", text="embedded text"
                )
            ),
        ]
    )


@server.tool(annotations=READ)
def table() -> dict[str, Any]:
    """Structured content only."""
    return {"rows": 2, "names": ["a", "b"]}


@server.tool(annotations=READ)
def fail() -> str:
    """Always an error result."""
    raise ToolError("the lab tool failed on purpose")


@server.tool()
def bare() -> str:
    """A tool without annotations."""
    return "bare"


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
def browse() -> str:
    """A read-only tool that reaches the open world."""
    return "browsed"


@server.tool(annotations=READ)
def freeze() -> str:
    """Stop answering anything, the process still alive (stopped by its own signal)."""
    log("frozen")
    os.kill(os.getpid(), signal.SIGSTOP)
    return "thawed"


@server.tool(annotations=READ)
def vanish() -> str:
    """End the process in the middle of the call, before any answer."""
    log("vanished")
    os._exit(3)


@server.resource("note://current")
def note() -> str:
    text = state["note"]
    if text is None:
        raise ResourceNotFoundError("no note")
    return text


@server.tool(annotations=READ)
def huge(megabytes: float) -> str:
    """A result of ``megabytes`` MB, on one line of the wire."""
    return "x" * int(megabytes * 1024 * 1024)


if os.environ.get("LAB_COLLIDE"):
    server.add_tool(extra, name="dup.name")
    server.add_tool(extra, name="dup_name")


def serve_http() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve([sock]))


if __name__ == "__main__":
    log(f"started {os.getpid()}")
    if "--http" in sys.argv:
        serve_http()
    else:
        server.run()
