"""A threaded HTTP server on a free loopback port, for the scripted model servers of the tests."""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    """Says what went wrong on the standard error of the test that started it.

    A command line run in-process stands its own streams in for ``sys.stderr`` while it runs;
    a broken connection's traceback from this server belongs to the test, not to its output.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.errors = sys.stderr

    def handle_error(self, request: Any, client_address: Any) -> None:
        print(f"error while serving {client_address}", file=self.errors)
        traceback.print_exc(file=self.errors)


@contextlib.contextmanager
def running(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` until the block ends; yields the server's base URL."""
    httpd = _Server(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    httpd.block_on_close = False  # a client that keeps its connection open cannot hang teardown
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
