"""Bounds on what a connection may hold: a deadline for each request head, a connection cap.

uvicorn closes an idle keep-alive connection, but a connection that sends half a request head and
then nothing is held open for as long as the client likes, so a few hundred of them hold the
server's sockets. ``deadline_protocol(seconds)`` is uvicorn's HTTP protocol with a deadline: from
the moment a connection opens, or a response ends, the next request head must arrive whole within
``seconds`` or the connection is closed. ``HeadDeadlineProtocol`` is it with ``HEAD_TIMEOUT``,
named by an import string (``agentsession.server.limits:HeadDeadlineProtocol``) so that
``serve --workers`` can hand it to its worker processes. ``MAX_CONNECTIONS`` is the cap ``serve``
gives uvicorn (``limit_concurrency``: beyond it new requests are answered 503).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

__all__ = ["HEAD_TIMEOUT", "MAX_CONNECTIONS", "HeadDeadlineProtocol", "deadline_protocol"]

#: Seconds a request head may take to arrive (from the connection or the previous response).
HEAD_TIMEOUT = 30.0
#: Connections and running requests one ``serve`` process accepts before answering 503.
MAX_CONNECTIONS = 512


def deadline_protocol(seconds: float) -> type[asyncio.Protocol]:
    """The HTTP protocol of uvicorn, closing a connection whose request head is late."""
    base: Any = AutoHTTPProtocol

    class Deadline(base):  # type: ignore[misc]
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self._waiting():
                self._disarm()  # a whole request head arrived

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            if self.transport.is_closing() or not self._waiting():
                return  # a pipelined request is already running
            self._timer = self.loop.call_later(seconds, self._late)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _waiting(self) -> bool:
            """Whether the connection waits for a request head (none yet, or the last answered)."""
            return self.cycle is None or bool(self.cycle.response_complete)

        def _late(self) -> None:
            self._timer = None
            if self._waiting() and not self.transport.is_closing():
                self.transport.close()

    Deadline.__name__ = Deadline.__qualname__ = "HeadDeadlineProtocol"
    return Deadline


HeadDeadlineProtocol = deadline_protocol(HEAD_TIMEOUT)
