"""MCP servers as a context source: their tools join requests, their resources the System Context.

``MCPServers`` belongs to a runtime: it holds one ``ServerConnection`` per declared server, is the
runtime's source factory (the kind ``Runtime(context_sources=...)`` takes), and closes the
servers with the runtime. Each session gets an ``MCPSource``:

- ``components()``: per server, ``mcp.<server>`` (the instructions the server gives, absent when
  it gives none; sampling it is what starts the server and picks up announced tool changes),
  then ``mcp.<server>.<resource>`` for each resource named in its declaration, read at every
  boundary and hashed like any other component: a change is sent once, a resource the server no
  longer has is announced as removed, a server that is down leaves them *unavailable*;
- ``offered()``: the servers' tools as last listed, in declaration order, except a tool whose
  name an application tool already has (refused with a logged error);
- ``known()``: every declaration seen, so an epoch's tool list can be rebuilt after a tool left;
- ``run()``: the call through the server's connection (timeout from the declaration or
  ``Config.tool_timeout``, result bounded by ``Config.max_tool_result_chars``).

Calls and results are ordinary tool calls and results in the log, under the ``mcp__<server>__``
name; nothing else about MCP is stored, so a session reopened in a new process simply connects
again at its next boundary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from ..config import Config
from ..context.component import (
    ABSENT,
    Absent,
    ContextComponent,
    LoadResult,
    Rendered,
    Unavailable,
)
from ..engine.deps import SessionDeps
from ..errors import UsageError
from ..hygiene import clean_text
from ..log import LogEntry
from ..request import ToolCall, ToolSpec
from ..sources import Ran
from ..tools import Tool, ToolOutcome
from ..tools.context import ToolContext
from .config import MCPServer, resource_key
from .sdk import sdk_available

if TYPE_CHECKING:
    from .connection import ServerConnection

__all__ = ["MCPServers", "MCPSource"]

_log = logging.getLogger("agentsession.mcp")


class MCPServers:
    """The MCP servers of one runtime, started lazily and shared by its sessions."""

    def __init__(self, servers: Sequence[MCPServer], *, required: bool = True) -> None:
        if servers and not sdk_available():
            message = (
                "MCP servers need the MCP SDK: pip install 'agentsession[mcp]' "
                f"(servers: {', '.join(s.name for s in servers)})"
            )
            if required:
                raise UsageError(message)
            _log.warning("%s; they are left out", message)
            servers = ()
        self.connections: tuple[ServerConnection, ...] = ()
        if servers:
            # Imported here: a runtime without MCP servers (the usual one) never needs the
            # client, nor pays for importing it (about 1 ms of a fresh process's Runtime()).
            from .connection import ServerConnection

            self.connections = tuple(ServerConnection(s) for s in servers)

    def __bool__(self) -> bool:
        return bool(self.connections)

    def source(self, deps: SessionDeps, session_id: str, state: Sequence[LogEntry]) -> MCPSource:
        """The context source of one session (the runtime's factory)."""
        return MCPSource(self.connections, deps.config, {t.name for t in deps.tools})

    async def close(self) -> None:
        """Stop every server that was started."""
        await asyncio.gather(*(c.close() for c in self.connections))


class MCPSource:
    """One session's view of the runtime's MCP servers."""

    def __init__(
        self, connections: Sequence[ServerConnection], config: Config, app_tools: Collection[str]
    ) -> None:
        self._connections = tuple(connections)
        self._config = config
        self._app_tools = frozenset(app_tools)
        self._refused: set[str] = set()
        self._components = [c for conn in self._connections for c in self._build(conn)]

    async def prepare(self) -> None:
        """Connect (or reconnect) the servers before a stored step continues."""
        await asyncio.gather(*(conn.refresh() for conn in self._connections))

    def components(self) -> Sequence[ContextComponent]:
        """Per server: its instructions component, then one component per named resource."""
        return self._components

    def offered(self) -> Sequence[Tool]:
        """The servers' tools as last listed, in declaration order."""
        tools: list[Tool] = []
        for conn in self._connections:
            for tool in conn.tools():
                if tool.name in self._app_tools:
                    self._refuse(tool.name, conn.server)
                    continue
                tools.append(tool)
        return tools

    def known(self) -> Sequence[ToolSpec]:
        """Every declaration the servers' tools have had in this runtime."""
        return [
            spec
            for conn in self._connections
            for spec in conn.seen()
            if spec.name not in self._app_tools
        ]

    def allowed_tools(self) -> Collection[str] | None:
        """MCP servers never narrow what may be called."""
        return None

    async def run(self, tool: Tool, call: ToolCall, context: ToolContext, config: Config) -> Ran:
        """Call the tool on its server; the outcome is an ordinary (bounded) tool result."""
        for conn in self._connections:
            origin = conn.origin(tool.name)
            if origin is None:
                continue
            timeout = tool.timeout if tool.timeout is not None else config.tool_timeout
            limit = tool.max_result_chars
            if limit is None:
                limit = config.max_tool_result_chars
            arguments = dict(call.arguments)
            return Ran(await conn.call(origin, arguments, timeout, limit))
        return Ran(ToolOutcome(f"Unknown tool: {tool.name}", True))

    def _refuse(self, name: str, server: MCPServer) -> None:
        if name not in self._refused:
            self._refused.add(name)
            _log.error(
                "MCP server %r: its tool %s is not offered: an application tool has that name",
                server.name,
                name,
            )

    def _build(self, conn: ServerConnection) -> list[ContextComponent]:
        server = conn.server
        limit = self._config.max_tool_result_chars

        async def instructions() -> LoadResult:
            if not await conn.refresh():
                return Unavailable(conn.reason)
            text = (conn.instructions or "").strip()
            if not text:
                return ABSENT
            return Rendered(
                f"Instructions of MCP server '{server.name}':\n{clean_text(text, limit)}"
            )

        built = [
            ContextComponent(
                f"mcp.{server.key}",
                instructions,
                removal=f"[mcp.{server.key}] The instructions of MCP server '{server.name}' no "
                "longer apply.",
            )
        ]
        for name, uri in server.resources:
            built.append(self._resource(conn, name, uri, limit))
        return built

    @staticmethod
    def _resource(
        conn: ServerConnection, name: str, uri: str, limit: int | None
    ) -> ContextComponent:
        server = conn.server
        key = resource_key(server.name, name)

        async def load() -> LoadResult:
            result = await conn.read(uri)
            if isinstance(result, Absent | Unavailable):
                return result
            from .convert import render_resource  # with the first read: see __init__

            return Rendered(render_resource(server, uri, result, limit))

        return ContextComponent(
            key,
            load,
            removal=f"[{key}] Resource {uri} of MCP server '{server.name}' is gone; disregard "
            "what it said.",
        )
