"""Whether an MCP server still answers while one of its calls runs.

A server process can stay alive and never answer again (it failed while encoding a reply, or
hangs); its call would wait out the whole tool timeout. While a call runs the server is probed
every ``PING_INTERVAL`` seconds (``ping``; ``server/discover`` on 2026 connections, which have
no ping); a probe without an answer within ``PING_TIMEOUT`` ends the call with
``ServerSilent``. A live server answers between its own work. A connection that closes needs
no probe: the SDK fails the call at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["PING_INTERVAL", "PING_TIMEOUT", "ServerSilent", "watched"]

PING_INTERVAL = 5.0
PING_TIMEOUT = 15.0
_T = TypeVar("_T")


async def _probe(client: Client) -> object:
    """The cheapest request the connection's protocol has.

    ``ping``, or on 2026 connections (which dropped it) ``server/discover``, its answer unused.
    """
    from mcp.types.version import MODERN_PROTOCOL_VERSIONS

    version = client.protocol_version
    if version in MODERN_PROTOCOL_VERSIONS:
        return await client.session.send_discover(version)
    return await client.session.send_ping()


def _timed_out(probe: asyncio.Future[Any]) -> bool:
    """Whether the probe ended by the SDK's own timeout (no answer, like our own timeout)."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import REQUEST_TIMEOUT

    error = probe.exception() if not probe.cancelled() else None
    return isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT


class ServerSilent(Exception):
    """The server stopped answering during a call (its message says for how long)."""


async def watched(client: Client, request: Awaitable[_T]) -> _T:
    """Await ``request`` while pinging ``client``'s server; ``ServerSilent`` if it goes silent.

    Cancelling this cancels the request (the SDK then tells the server to cancel it).
    """
    call = asyncio.ensure_future(request)
    ping: asyncio.Future[Any] | None = None
    try:
        while True:
            done, _ = await asyncio.wait({call}, timeout=PING_INTERVAL)
            if done:
                return call.result()
            if ping is not None and not ping.cancelled():
                ping.exception()  # an error answer was looked at: asyncio must not warn of it
            ping = asyncio.ensure_future(_probe(client))
            done, _ = await asyncio.wait(
                {call, ping}, timeout=PING_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
            )
            if call in done:
                return call.result()
            # An error answer is an answer; a broken connection fails the call by itself.
            if ping not in done or _timed_out(ping):
                raise ServerSilent(
                    f"it stopped answering (no answer to a ping within {PING_TIMEOUT:g} seconds)"
                )
    finally:
        for pending in (call, ping):
            if pending is None:
                continue
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pending
            elif not pending.cancelled():
                pending.exception()  # looked at: an unread failure would be reported as lost
