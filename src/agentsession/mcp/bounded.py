"""A stdio transport that bounds every message while it is read, not after.

The SDK's own stdio reader keeps a line in memory until its newline arrives and joins it chunk by
chunk, so a server answering with 50 MB on one line holds the event loop for minutes, long after
the call's timeout gave up on it. This reader finds newlines in each new chunk only (linear
time) and never keeps more than ``limit`` bytes of a line: once a line grows past it, the rest
of that line is read and dropped as it arrives, and the request the line answers (its ``id`` is
near the start of a response) gets a JSON-RPC error at once, so the call ends now and the
connection stays usable. Spawning and stopping the server are the SDK's own (same process
group, same shutdown order); only the reading differs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import StdioServerParameters

__all__ = ["MAX_MESSAGE_BYTES", "LineBound", "bounded_stdio"]

#: The largest message a server may send over stdio (a larger one is dropped as it is read).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_log = logging.getLogger("agentsession.mcp")
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')
_HEAD = 512


class LineBound:
    """Splits a byte stream into lines of at most ``limit`` bytes; longer lines are dropped.

    ``feed`` returns the complete lines of a chunk, and for each line that went over the limit
    the first bytes it had (to name the request it answers), as ``(line, oversized_head)``
    pairs where exactly one is not ``None``. A line is reported oversized as soon as it passes
    the limit; its remaining bytes are dropped until its newline.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""
        self._dropping = False

    def feed(self, chunk: bytes) -> list[tuple[bytes | None, bytes | None]]:
        """The lines (or oversized heads) that ``chunk`` completes or reveals."""
        found: list[tuple[bytes | None, bytes | None]] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not self._dropping:
                if len(self._head) < _HEAD:
                    self._head += piece[: _HEAD - len(self._head)]
                if self._size + len(piece) > self.limit:
                    found.append((None, self._head))
                    self._parts, self._size, self._dropping = [], 0, True
                elif piece:
                    self._parts.append(piece)
                    self._size += len(piece)
            if end < 0:
                return found
            if not self._dropping:
                found.append((b"".join(self._parts), None))
            self._parts, self._size, self._head, self._dropping = [], 0, b"", False
            start = end + 1


def _refusal(head: bytes, limit: int) -> bytes | None:
    """A JSON-RPC error answering the request ``head`` belongs to, if its id can be read."""
    match = _ID.search(head)
    if match is None:
        return None
    error = {
        "code": -32603,
        "message": f"the server's message was larger than {limit} bytes and was not read",
    }
    body = json.dumps({"jsonrpc": "2.0", "error": error})
    return body[:-1].encode() + b', "id": ' + match.group(1) + b"}"


def _message(line: bytes) -> Any:
    from mcp import types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


@contextlib.asynccontextmanager
async def bounded_stdio(
    params: StdioServerParameters, limit: int = MAX_MESSAGE_BYTES
) -> AsyncIterator[Any]:
    """The SDK's stdio transport for ``params``, reading with ``LineBound(limit)``."""
    import anyio
    from mcp.client import stdio as sdk
    from mcp.shared.message import SessionMessage

    command = await sdk._get_executable_command(params.command)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=params.args,
        env=sdk.get_default_environment() | (params.env or {}),
        errlog=sys.stderr,
        cwd=params.cwd,
    )
    incoming, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def read() -> None:
        assert process.stdout is not None
        lines = LineBound(limit)
        with contextlib.suppress(
            anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError
        ):
            async with incoming:
                try:
                    async for chunk in process.stdout:
                        for line, head in lines.feed(chunk):
                            if line is not None:
                                if line.strip():
                                    await incoming.send(_message(line))
                                continue
                            assert head is not None
                            refusal = _refusal(head, limit)
                            _log.warning(
                                "MCP server %s sent a message over %d bytes; it was dropped",
                                params.command,
                                limit,
                            )
                            if refusal is not None:
                                await incoming.send(_message(refusal))
                finally:
                    await sdk._drain_stdout(process)

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with outgoing:
                async for message in outgoing:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await incoming.aclose()  # the server stopped reading: end the connection
        finally:
            writer_done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(2.0):
                    await writer_done.wait()
                await sdk._stop_server_process(process)
                for stream in (read_stream, write_stream, incoming, outgoing):
                    await stream.aclose()
            group.cancel_scope.cancel()
