"""The few places this package touches the MCP SDK's plumbing: transports, listings, errors.

Every SDK import is inside a function, so importing the package never needs the ``mcp`` extra.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .config import MCPServer

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import Tool as ListedTool

__all__ = ["client_version", "describe", "list_all", "sdk_available", "transport"]

_MAX_PAGES = 100


def sdk_available() -> bool:
    """Whether the ``mcp`` SDK can be imported."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        return False
    return True


def transport(server: MCPServer) -> Any:
    """What the SDK's ``Client`` connects through for ``server``."""
    if server.transport == "stdio":
        from mcp import StdioServerParameters

        from .bounded import bounded_stdio  # with the SDK: a runtime without servers never reads

        # Our own reader: a message is bounded while it is read (see ``bounded``).
        return bounded_stdio(
            StdioServerParameters(
                command=server.command,
                args=list(server.args),
                env=dict(server.env) if server.env is not None else None,
                cwd=server.cwd,
            )
        )
    return _http_transport(server.url, dict(server.headers))


async def list_all(client: Client, enough: int | None = None) -> list[ListedTool]:
    """Every tool the server lists, following pagination (bounded).

    With ``enough``, no further page is asked for once more than that many are in hand.
    """
    tools: list[ListedTool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor or (enough is not None and len(tools) > enough):
            break
    return tools


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # The SDK's own defaults: a server may hold a response stream open for minutes.
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def describe(exc: BaseException) -> str:
    """An exception in one line; exception groups show their first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def client_version() -> str:
    """The version of agentsession, as the client names itself to servers."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentsession")
    except PackageNotFoundError:
        return "0"
