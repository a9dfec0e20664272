"""The access log: one JSON line per HTTP request, on the ``agentsession.server.access`` logger.

Each line is ``{"kind": "access", "schema_version": 1, …}``, as every JSON line the command line
prints names its kind and version, so a reader of ``serve --json`` can tell the ``serving`` object,
an ``error`` and the access lines apart on one stream. It holds the request id (the client's
``X-Request-ID`` when it is a short plain token, else a fresh one; sent back in the response's
``X-Request-ID``), the method, the route's template (``/sessions/{id}/prompt`` — never the path,
which would carry ids into every line), the status, the duration in milliseconds (for a stream:
until it closed) and the owner as a digest. It never holds a token, a header's value, a query
string or anything from a body, so a prompt never reaches the log.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ACCESS_LOGGER", "ACCESS_SCHEMA_VERSION", "AccessLog"]

#: The version of an access line's fields; a field's removal or change of meaning raises it.
ACCESS_SCHEMA_VERSION = 1

#: The logger the lines go to (``serve`` writes it to standard output).
ACCESS_LOGGER = "agentsession.server.access"
_log = logging.getLogger(ACCESS_LOGGER)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _route(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "(no route)"


class AccessLog:
    """ASGI middleware writing the access log; ``owner_of`` maps an Authorization header."""

    def __init__(self, app: ASGIApp, owner_of: Callable[[str | None], str | None]) -> None:
        self._app = app
        self._owner_of = owner_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; write its line when the response is over."""
        if scope["type"] != "http" or not _log.isEnabledFor(logging.INFO):
            await self._app(scope, receive, send)
            return
        given = _header(scope, b"x-request-id")
        request_id = given if given and _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        status = 500
        started = time.monotonic()

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [*message.get("headers", ()), (b"x-request-id", request_id.encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self._app(scope, receive, sending)
        finally:
            self._write(scope, request_id, status, started)

    def _write(self, scope: Scope, request_id: str, status: int, started: float) -> None:
        owner = self._owner_of(_header(scope, b"authorization"))
        line: dict[str, Any] = {
            "kind": "access",
            "schema_version": ACCESS_SCHEMA_VERSION,
            "ts": round(time.time(), 3),
            "request_id": request_id,
            "method": scope.get("method"),
            "route": _route(scope),
            "status": status,
            "duration_ms": round((time.monotonic() - started) * 1000, 1),
            "owner": None if owner is None else hashlib.sha256(owner.encode()).hexdigest()[:16],
        }
        _log.info(json.dumps(line, separators=(",", ":")))
