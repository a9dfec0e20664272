"""A response body another process wrote to a file: handed on in chunks, never held whole.

Why: a long session's report or export is tens of megabytes. Passed back through the process
pool's pipe it arrives as one bytes object that the serving process receives, copies and writes
in one piece; each of those steps holds its interpreter (the event loop included) for a time that
grows with the session. Spooled, the serving process never holds more than one ``CHUNK``.

How: the serving process makes an empty file (``spool_file``: private to its user) and sends its
name with the job; the child writes a body larger than ``INLINE`` into it (``spool``) and
answers only its size, a smaller one it answers inline. The serving process opens the file and
removes its name at once (``SpooledBody.open``): the data lives as long as that descriptor, so a
client that goes away, a child that dies or a server that stops leaves no file behind. Chunks
are read on a worker thread at explicit offsets (``os.pread``), so a read still in flight when
a request is cancelled never moves another file's position.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import weakref
from collections.abc import AsyncIterator, Mapping

from starlette.responses import Response, StreamingResponse

__all__ = ["CHUNK", "INLINE", "SpooledBody", "body_response", "spool", "spool_file"]

#: Bytes read from the file and handed to the server at a time.
CHUNK = 256 * 1024
#: Bodies up to this size go back inline through the pool's pipe (an error, a cost, a context).
INLINE = CHUNK


def spool_file() -> str:
    """A new empty file, readable by this user only, for one child's answer."""
    fd, path = tempfile.mkstemp(prefix="agentsession-", suffix=".body")
    os.close(fd)
    return path


def spool(body: bytes, path: str, inline: int = INLINE) -> int | None:
    """In the child: ``body`` written to ``path``, answering its size; ``None``: answer inline.

    Inline when the body has ``inline`` bytes or fewer, or when the file cannot be written
    (gone because the server gave up on the answer, or a full disk): nothing is lost to it.
    """
    if len(body) <= inline:
        return None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)  # never created here: see the module doc
    except OSError:
        return None
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        return None
    finally:
        os.close(fd)
    return len(body)


class SpooledBody:
    """An open, already unlinked body file of ``size`` bytes, read back in chunks."""

    def __init__(self, fd: int, size: int) -> None:
        self.size = size
        self._fd = fd
        # Closed when the stream ends, or when a response that was never sent is dropped.
        self._closer = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls, path: str, size: int) -> SpooledBody:
        """The body a child wrote to ``path``; the name is removed, the data kept while open."""
        fd = os.open(path, os.O_RDONLY)
        with contextlib.suppress(OSError):
            os.unlink(path)
        return cls(fd, size)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body, ``CHUNK`` bytes at a time; the file is closed when it ends or is left."""
        try:
            offset = 0
            while offset < self.size:
                size = min(CHUNK, self.size - offset)
                chunk = await asyncio.to_thread(os.pread, self._fd, size, offset)
                if not chunk:
                    raise OSError(f"the spooled body ended at {offset} of {self.size} bytes")
                offset += len(chunk)
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        """Close the file (again: nothing happens)."""
        self._closer()


def body_response(
    status: int,
    body: bytes | SpooledBody,
    *,
    media_type: str,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The response for a child's answer: sent whole when inline, streamed when spooled.

    A spooled body keeps the length header a whole one gets, so a client sees the same response.
    """
    if isinstance(body, bytes):
        return Response(body, status_code=status, media_type=media_type, headers=headers)
    sized = {**(headers or {}), "content-length": str(body.size)}
    return StreamingResponse(
        body.chunks(), status_code=status, media_type=media_type, headers=sized
    )
