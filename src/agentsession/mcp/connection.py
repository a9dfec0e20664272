"""One live MCP server, shared by every session of a runtime: start, tools, calls, restarts.

Nothing starts until a safe boundary (or a call) asks for the server. One task owns the SDK's
``Client`` for the life of a connection, because the SDK's contexts must be entered and left by
the same task; sessions send their requests through it. The tool list is read when the
connection opens and again at the first boundary after the server announces a change
(``notifications/tools/list_changed``: on 2026 connections through a ``subscriptions/listen``
stream) or after a call of one of its tools, when it is a server that announces changes (the
announcement may trail the call's result); between boundaries the list stays put, so a request
and the calls answering it see one list.

A server that cannot start, dies, or breaks its connection is *down*: its tools keep their last
declarations and answer with an error result naming the server, its components are unavailable,
and it is started again at the first boundary or call after a wait that doubles from
``MCPServer.backoff`` up to a minute. A call carries a timeout; a call that runs out of time or
whose session is cancelled is abandoned with ``notifications/cancelled`` (the SDK sends it).
While a call runs the server is pinged: a connection that closes fails the call at once, and a
server that stopped answering (alive, silent) is noticed within seconds (``liveness``) instead
of after the whole tool timeout.
Every SDK import happens here, lazily, so the package imports without the ``mcp`` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..context.component import ABSENT, Absent, Unavailable
from ..errors import UsageError
from ..request import ToolSpec
from ..tools import Tool, ToolOutcome
from .config import MCPServer, tool_name
from .convert import declared_tool, tool_outcome
from .liveness import ServerSilent, watched
from .sdk import client_version, describe, list_all, transport

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import IncomingMessage
    from mcp.types import ReadResourceResult
    from mcp.types import Tool as ListedTool

__all__ = ["ServerConnection"]

_log = logging.getLogger("agentsession.mcp")
_T = TypeVar("_T")
_MAX_BACKOFF = 60.0
_STOP_GRACE = 10.0
# resources/read of a URI the server does not know: -32002 before 2026, invalid params after.
_NOT_FOUND = (-32002, -32602)
State = Literal["idle", "up", "down"]


class ServerConnection:
    """The runtime's link to one MCP server; every method is safe to call from any session."""

    def __init__(self, server: MCPServer, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.server = server
        self.state: State = "idle"
        self.reason = ""
        self.instructions: str | None = None
        self._clock = clock
        self._reported: set[str] = set()
        self._capped = False
        self._tools: tuple[Tool, ...] = ()
        self._origin: dict[str, str] = {}
        self._seen: dict[str, ToolSpec] = {}
        self._dirty = False
        self._announces = False
        self._failures = 0
        self._retry_at = 0.0
        self._attempt = 0
        self._failed = 0  # the last attempt counted as a failure (each counts once)
        self._closed = False
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()

    # -- what sessions read between boundaries --------------------------------------------------

    def tools(self) -> tuple[Tool, ...]:
        """The server's tools as last listed (kept while the server is down)."""
        return self._tools

    def origin(self, name: str) -> str | None:
        """The server's own name for the offered tool ``name``."""
        return self._origin.get(name)

    def seen(self) -> list[ToolSpec]:
        """Every declaration this server's tools ever had here (tools that left included)."""
        return list(self._seen.values())

    # -- operations -----------------------------------------------------------------------------

    async def refresh(self) -> bool:
        """Connect if needed and allowed, re-list announced tool changes; whether it is up."""
        return await self._at_home(self._refresh)

    async def call(
        self, name: str, arguments: dict[str, Any], seconds: float | None, limit: int | None
    ) -> ToolOutcome:
        """Call the server's tool ``name``; every failure is an error result naming the server."""
        return await self._at_home(lambda: self._call(name, arguments, seconds, limit))

    async def read(self, uri: str) -> ReadResourceResult | Absent | Unavailable:
        """Read one resource: its contents, ``ABSENT`` when the server has no such resource."""
        return await self._at_home(lambda: self._read(uri))

    async def close(self) -> None:
        """Stop the server for good (the runtime is closing)."""
        self._closed = True
        if self._owner is not None:
            await self._at_home(self._halt)

    # -- inside the home loop -------------------------------------------------------------------

    async def _refresh(self) -> bool:
        async with self._lock:
            if self._closed:
                self.reason = "the runtime was closed"
                return False
            if self.state != "up":
                if self._clock() < self._retry_at:
                    return False
                if not await self._start():
                    return False
            if self._dirty:
                client = self._client
                assert client is not None
                try:
                    self._dirty = False
                    self._absorb(await list_all(client, self.server.max_tools))
                except Exception as exc:
                    await self._broken(f"listing its tools failed: {describe(exc)}")
                    return False
            return True

    async def _start(self) -> bool:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._attempt += 1
        self._stop = asyncio.Event()
        ready: asyncio.Future[None] = loop.create_future()
        owner = loop.create_task(
            self._own(ready, self._stop, self._attempt), name=f"agentsession-mcp-{self.server.key}"
        )
        self._owner = owner
        limit = self.server.startup_timeout or None
        try:
            async with asyncio.timeout(limit):
                await asyncio.shield(ready)
        except TimeoutError:
            ready.cancel()  # nobody will read what the abandoned start ends with
            self._down(f"it did not answer within {limit:g} seconds", self._attempt)
            await self._halt(cancel=True)
        except Exception as exc:
            self._down(f"it could not be started: {describe(exc)}", self._attempt)
        return self.state == "up"

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event, attempt: int) -> None:
        """Hold one connection open until ``stop`` is set or the connection breaks."""
        try:
            from mcp import Client
            from mcp.types import Implementation

            info = Implementation(name="agentsession", version=client_version())
            async with Client(
                transport(self.server),
                message_handler=self._on_message,
                cache=None,
                client_info=info,
            ) as client:
                listening = await self._listen_for_changes(client)
                tools = client.server_capabilities.tools
                self._announces = bool(tools is not None and tools.list_changed)
                self._client = client
                self._absorb(await list_all(client, self.server.max_tools))
                self.instructions = client.instructions
                self.state, self.reason, self._failures, self._dirty = "up", "", 0, False
                ready.set_result(None)
                try:
                    await stop.wait()
                finally:
                    if listening is not None:
                        listening.cancel()
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await listening
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                self._down(f"its connection broke: {describe(exc)}", attempt)
        finally:
            self._client = None
            if not ready.done():
                ready.set_exception(RuntimeError("the connection was stopped while starting"))

    async def _listen_for_changes(self, client: Client) -> asyncio.Task[None] | None:
        """On a 2026 connection whose server announces tool changes, a stream that hears them."""
        from mcp.types.version import MODERN_PROTOCOL_VERSIONS

        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (
            tools is not None and tools.list_changed
        ):
            return None
        acked = asyncio.Event()

        async def listen() -> None:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    acked.set()
                    async for _ in subscription:
                        self._dirty = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.warning("MCP server %r: change stream ended: %s", self.server.name, exc)
                self._dirty = True
            finally:
                acked.set()

        task = asyncio.get_running_loop().create_task(listen())
        try:
            async with asyncio.timeout(self.server.startup_timeout or None):
                await acked.wait()
        except TimeoutError:
            _log.warning("MCP server %r: no answer to subscriptions/listen", self.server.name)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            return None
        return task

    async def _on_message(self, message: IncomingMessage) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._dirty = True
        elif isinstance(message, Exception):
            _log.debug("MCP server %r: transport reported %r", self.server.name, message)

    async def _call(
        self, name: str, arguments: dict[str, Any], seconds: float | None, limit: int | None
    ) -> ToolOutcome:
        shown = tool_name(self.server.name, name)
        if not await self._refresh():
            return ToolOutcome(
                f"MCP server '{self.server.name}' is unavailable ({self.reason}); {shown} was "
                "not called. Its tools work again once the server is back.",
                True,
            )
        client = self._client
        assert client is not None
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        try:
            result = await watched(
                client, client.call_tool(name, arguments, read_timeout_seconds=seconds or None)
            )
        except ServerSilent as exc:
            await self._broken(str(exc))
            return self._lost_call(shown)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                return ToolOutcome(
                    f"{shown} did not finish within {seconds:g} seconds; MCP server "
                    f"'{self.server.name}' was told to cancel it and its result will not be used.",
                    True,
                )
            if exc.code == CONNECTION_CLOSED:
                await self._broken("its connection closed")
                return self._lost_call(shown)
            return ToolOutcome(f"MCP server '{self.server.name}' refused {shown}: {exc}", True)
        except ValidationError as exc:
            return ToolOutcome(
                f"MCP server '{self.server.name}' answered {shown} with a malformed result: {exc}",
                True,
            )
        except Exception as exc:
            await self._broken(f"its connection broke: {describe(exc)}")
            return self._lost_call(shown)
        finally:
            # A call is what usually changes a server's tools, and its announcement may arrive
            # after the call's result: a server that announces changes is asked again.
            self._dirty = self._dirty or self._announces
        return tool_outcome(result, limit)

    def _lost_call(self, shown: str) -> ToolOutcome:
        return ToolOutcome(
            f"MCP server '{self.server.name}' went away during {shown} ({self.reason}); the call "
            "may or may not have taken effect.",
            True,
        )

    async def _read(self, uri: str) -> ReadResourceResult | Absent | Unavailable:
        if not await self._refresh():
            return Unavailable(self.reason)
        client = self._client
        assert client is not None
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED

        try:
            return await client.read_resource(uri)
        except MCPError as exc:
            if exc.code in _NOT_FOUND:
                return ABSENT
            if exc.code == CONNECTION_CLOSED:
                await self._broken("its connection closed")
            return Unavailable(f"reading {uri} failed: {exc}")
        except Exception as exc:
            await self._broken(f"reading {uri} failed: {describe(exc)}")
            return Unavailable(self.reason)

    # -- state ----------------------------------------------------------------------------------

    def _absorb(self, listed: list[ListedTool]) -> None:
        """Take a fresh listing: declarations, names, collisions refused with a logged error.

        Past ``MCPServer.max_tools`` the rest are left out (one warning per connection), so a
        server offering thousands of tools cannot make every request too large to send.
        """
        # Deferred tools are not in requests: a large server is what deferring is for.
        defer = self.server.defers(len(listed))
        cap = len(listed) if defer else self.server.max_tools
        if len(listed) > cap:
            if not self._capped:
                self._capped = True
                _log.warning(
                    "MCP server %r offers more than %d tools; the rest are left out"
                    " (MCPServer(max_tools=...) raises the limit)",
                    self.server.name,
                    cap,
                )
            listed = listed[:cap]
        names: dict[str, list[ListedTool]] = {}
        for item in listed:
            names.setdefault(tool_name(self.server.name, item.name), []).append(item)
        tools: list[Tool] = []
        origin: dict[str, str] = {}
        for name, group in names.items():
            if len(group) > 1:
                clash = ", ".join(repr(g.name) for g in group)
                self._problem(f"tools {clash} all become {name}; none of them is offered")
                continue
            try:
                tool = declared_tool(self.server, group[0], name, defer=defer)
            except UsageError as exc:
                self._problem(f"tool {group[0].name!r} is not offered: {exc}")
                continue
            tools.append(tool)
            origin[name] = group[0].name
            self._seen[name] = tool.spec
        self._tools = tuple(tools)
        self._origin = origin

    def _problem(self, text: str) -> None:
        """Log a refused tool once (the same listing comes back at every re-list)."""
        if text not in self._reported:
            self._reported.add(text)
            _log.error("MCP server %r: %s", self.server.name, text)

    def _down(self, reason: str, attempt: int) -> None:
        """The connection of ``attempt`` failed: wait longer before the next start.

        Each attempt counts once, also a restart that fails while the server is down already:
        the wait doubles up to its cap instead of starting the server again at every step.
        """
        if attempt != self._attempt or attempt == self._failed:
            return
        self._failed = attempt
        self.state = "down"
        self.reason = reason
        self._failures += 1
        delay = min(self.server.backoff * 2 ** (self._failures - 1), _MAX_BACKOFF)
        self._retry_at = self._clock() + delay
        _log.warning(
            "MCP server %r (%s) is down: %s; next start in %.3g s",
            self.server.name,
            self.server.target(),
            reason,
            delay,
        )

    async def _broken(self, reason: str) -> None:
        self._down(reason, self._attempt)
        await self._halt()

    async def _halt(self, *, cancel: bool = False) -> None:
        """End the owning task: ask it to leave its connection, cancel it if it will not."""
        owner, stop = self._owner, self._stop
        if owner is None:
            return
        if stop is not None:
            stop.set()
        if cancel:
            owner.cancel()
        try:
            async with asyncio.timeout(_STOP_GRACE):
                await asyncio.shield(owner)
        except TimeoutError:
            owner.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                async with asyncio.timeout(_STOP_GRACE):
                    await asyncio.shield(owner)
        except (asyncio.CancelledError, Exception):
            if not owner.done():  # we were cancelled ourselves, not the owner
                raise
        self._owner = None

    async def _at_home(self, work: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``work`` on the loop that owns the connection (the SDK is bound to one loop)."""
        here = asyncio.get_running_loop()
        home = self._loop
        if home is None or home is here:
            return await work()
        if home.is_closed() or not home.is_running():
            self._forget()
            return await work()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_run(work), home))

    def _forget(self) -> None:
        """The loop that owned the connection is gone, and the connection with it."""
        self._loop, self._owner, self._client, self._stop = None, None, None, None
        self._lock = asyncio.Lock()
        if self.state == "up":
            self.state, self.reason, self._dirty = "idle", "", True


async def _run(work: Callable[[], Awaitable[_T]]) -> _T:
    return await work()
