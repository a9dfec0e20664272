"""A loopback HTTP server that records every request it gets (method, path, headers) and refuses.

A hostile ``.mcp.json`` points an HTTP server at it: if anything arrives, the file acted.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from ..loopback import running


@dataclass
class Recorder:
    """The base URL and what reached it."""

    url: str = ""
    seen: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self) -> list[dict[str, str]]:
        with self.lock:
            return list(self.seen)


@contextlib.contextmanager
def recorder() -> Iterator[Recorder]:
    """A running recorder; every request is answered 404."""
    found = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            with found.lock:
                found.seen.append(
                    {"path": self.path, **{k.lower(): v for k, v in self.headers.items()}}
                )
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _record

    with running(Handler) as url:
        found.url = url
        yield found
