"""MCP servers as tool and context sources (the ``mcp`` extra: the official MCP Python SDK).

``MCPServer.stdio(...)`` / ``MCPServer.http(...)`` declare servers; ``Runtime(mcp_servers=[...])``
and, in a trusted project (``Runtime(project_config="trusted")``), the project's ``.mcp.json``
bring them in; ``load_mcp_config(path)`` reads any file in that
format (the CLI's ``--mcp-config``). The servers start at the first safe boundary that needs
them, are shared by the runtime's sessions and stop with the runtime. Their tools join requests
as ``mcp__<server>__<tool>`` with effects from their annotations; resources named in a
declaration become components ``mcp.<server>.<resource>``. The SDK is imported only when a
server starts, so this package imports without it. Submodules: ``config`` (declarations, names,
files), ``project`` (a project's own file, read as data until trusted), ``convert`` (MCP values
to ours), ``connection`` (one live server), ``source`` (the
sessions' view).
"""

from __future__ import annotations

from .config import MCPServer, load_mcp_config, merge_servers
from .project import ProjectMCP, project_servers, read_project_mcp
from .source import MCPServers, MCPSource

__all__ = [
    "MCPServer",
    "MCPServers",
    "MCPSource",
    "ProjectMCP",
    "load_mcp_config",
    "merge_servers",
    "project_servers",
    "read_project_mcp",
]
