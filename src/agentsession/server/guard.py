"""What a browser may make the server do: nothing, unless the page is the server's own.

A web page can send requests to any address its browser reaches, loopback included, and a
``no-cors`` ``text/plain`` POST needs no preflight, so a server that reads any body as JSON can be
driven by every page its user opens. This ASGI middleware, in front of every route, refuses:

- a ``Host`` that is neither a loopback name (``localhost``, ``*.localhost``, ``127.0.0.0/8``,
  ``::1``) nor one the server was told (``allowed_hosts``) — 403: a page on a rebound DNS name
  reaches the server under its own name (the health probes ``GET /healthz`` and ``/readyz``
  excepted: a load balancer names a process by its address);
- a present ``Origin`` other than the server's own (``Origin: null`` from a ``file://`` page
  included) — 403;
- a state-changing request (``POST``, ``PUT``, ``PATCH``; a ``DELETE`` that carries a body) whose
  ``Content-Type`` is not ``application/json`` (an import may also say ``application/x-ndjson``)
  — 415: no page can send those types without a preflight the server never answers.

A refusal is the server's JSON error body and happens before any route runs, so it changes
nothing; it is logged as a warning (``agentsession.server.guard``). Every response says it may
not be framed (``X-Frame-Options: DENY``, CSP ``frame-ancestors 'none'``); a response without
its own policy gets ``default-src 'none'``.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import UsageError
from .wire import error_body

__all__ = [
    "FRAME_POLICY",
    "ForbiddenRequestError",
    "Guard",
    "UnsupportedMediaTypeError",
    "host_allowed",
    "is_loopback_name",
]

_log = logging.getLogger(__name__)

#: The policy a response without its own gets: nothing loads, nothing frames it.
FRAME_POLICY = "frame-ancestors 'none'"
_DEFAULT_POLICY = f"default-src 'none'; {FRAME_POLICY}"
_STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_JSON = frozenset({"application/json"})
_SESSION_FILE = frozenset({"application/json", "application/x-ndjson", "application/jsonl"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}
#: Health probes answer whatever the ``Host``: a load balancer's or an orchestrator's probe names
#: the process by its address (``10.0.0.11:8000``, a pod's IP), not by the public name, and
#: what they say (``ok``, ready or a reason without details) is nothing a page could misuse.
_PROBES = frozenset({"/healthz", "/readyz"})


class ForbiddenRequestError(UsageError):
    """A request from a page that is not the server's own, or to a host name it does not serve."""


class UnsupportedMediaTypeError(UsageError):
    """A state-changing request whose body is not declared as JSON."""


def is_loopback_name(name: str) -> bool:
    """Whether a host name only ever names this machine (``localhost``, a loopback address)."""
    name = name.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, str]:
    """``(name, port)`` of a ``Host`` header value (port ``""`` when absent)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value.partition("]")
        return name + "]", rest[1:] if rest.startswith(":") else ""
    name, sep, port = value.rpartition(":")
    if not sep or ":" in name:  # no port, or a bare IPv6 address
        return value, ""
    return name, port


def host_allowed(host: str, allowed: frozenset[str]) -> bool:
    """Whether the server answers requests sent to ``host`` (a ``Host`` header value)."""
    if "*" in allowed:
        return True
    name, _ = _split_host(host)
    return bool(name) and (is_loopback_name(name) or name.strip("[]").rstrip(".") in allowed)


def _same_origin(origin: str, host: str) -> bool:
    """Whether ``origin`` (an ``Origin`` header) is the server as ``host`` names it."""
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep or scheme not in _DEFAULT_PORTS or "/" in rest:
        return False
    origin_name, origin_port = _split_host(rest)
    host_name, host_port = _split_host(host)
    default = _DEFAULT_PORTS[scheme]
    return origin_name == host_name and (origin_port or default) == (host_port or default)


def _media_type(headers: Headers) -> str | None:
    raw = headers.get("content-type")
    return None if raw is None else raw.partition(";")[0].strip().lower()


class Guard:
    """The ASGI middleware described in the module doc."""

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        # A name given with its port (``box.lan:8000``) is the name: ports are not compared.
        self.allowed = frozenset(_split_host(h)[0].strip("[]").rstrip(".") for h in allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse the request (JSON error, nothing run) or pass it on with the framing headers."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope)
        if refused is not None:
            status, exc = refused
            _log.warning("refused %s %s (%d): %s", scope["method"], scope["path"], status, exc)
            response = JSONResponse(error_body(exc), status_code=status)
            await response(scope, receive, _framed(send))
            return
        await self.app(scope, receive, _framed(send))

    def refusal(self, scope: Scope) -> tuple[int, UsageError] | None:
        """The status and error a request is refused with, or ``None`` when it may pass."""
        if scope["path"] in _PROBES and scope["method"] in ("GET", "HEAD"):
            return None
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not host_allowed(host, self.allowed):
            return 403, ForbiddenRequestError(
                f"this server does not answer requests for the host {host!r}: it serves loopback"
                " names and the names given with --allowed-host"
            )
        origin = headers.get("origin")
        if origin is not None and not _same_origin(origin, host):
            return 403, ForbiddenRequestError(
                f"a page from {origin!r} may not call this server: only its own pages may"
            )
        method = scope["method"]
        if method not in _STATE_CHANGING:
            return None
        media = _media_type(headers)
        if method == "DELETE" and media is None and not _has_body(headers):
            return None
        accepted = _SESSION_FILE if scope["path"].rstrip("/").endswith("/import") else _JSON
        if media not in accepted:
            sent = headers.get("content-type")
            return 415, UnsupportedMediaTypeError(
                f"a {method} request must say Content-Type: application/json"
                f" ({'it said ' + repr(sent) if sent is not None else 'it said none'})"
            )
        return None


def _has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    return "transfer-encoding" in headers or (length is not None and length.strip() != "0")


def _framed(send: Send) -> Send:
    """``send`` that adds the framing headers (and a default policy) to the response start."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message.setdefault("headers", [])
            headers = MutableHeaders(scope=message)
            headers.setdefault("X-Frame-Options", "DENY")
            headers.setdefault("X-Content-Type-Options", "nosniff")
            headers.setdefault("Referrer-Policy", "no-referrer")
            policy = headers.get("content-security-policy")
            if policy is None:
                headers["Content-Security-Policy"] = _DEFAULT_POLICY
            elif "frame-ancestors" not in policy:
                headers["Content-Security-Policy"] = f"{policy}; {FRAME_POLICY}"
        await send(message)

    return sending
