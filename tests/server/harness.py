"""Real server processes on loopback and a small SSE reader for the HTTP tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .openapi_check import check_event

APP = Path(__file__).with_name("app_main.py")
JSON = {"Content-Type": "application/json"}
#: Generous bounds: the machine may be busy; nothing here measures time.
TIMEOUT = httpx.Timeout(120.0, connect=30.0)


@dataclass(frozen=True)
class Frame:
    """One Server-Sent Event."""

    event: str
    data: dict[str, Any]
    id: int | None


def frames(lines: Iterator[str]) -> Iterator[Frame]:
    """Parse SSE lines into frames (comments skipped), each validated against the OpenAPI
    document's schema of its type."""
    event, data, ident = "message", "", None
    for line in lines:
        if line == "":
            if data:
                parsed = json.loads(data)
                check_event(event, parsed)
                yield Frame(event, parsed, ident)
            event, data, ident = "message", "", None
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data += value
            elif name == "id":
                ident = int(value)


class Server:
    """One ``app_main.py`` process listening on an ephemeral loopback port."""

    def __init__(self, db: str, gates: Path, *args: str) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, str(APP), db, str(gates), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.process.kill()
            raise RuntimeError(f"server did not start: {line!r} {self.process.stderr.read()}")  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"
        # A program's client, not a browser: it says its bodies are JSON (the server refuses
        # state-changing requests that do not, 415).
        self.client = httpx.Client(base_url=self.url, timeout=TIMEOUT, headers=JSON)
        self._wait_ready()

    def _wait_ready(self) -> None:
        for _ in range(600):
            try:
                if self.client.get("/openapi.json").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.process.poll() is not None:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(0.1)
        raise RuntimeError("server never answered")

    def kill(self) -> None:
        """End the process at once (SIGKILL: nothing is flushed or released)."""
        self.process.kill()
        self.process.wait(60)
        self.client.close()

    def stop(self) -> str:
        """Stop gracefully (SIGTERM); returns what it wrote to standard error."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _, err = self.process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        self.client.close()
        return err or ""


def printed_url(process: subprocess.Popen[str]) -> tuple[str, str]:
    """The URL ``agentsession serve`` printed on standard output, and the token it carries."""
    assert process.stdout is not None
    for line in process.stdout:
        found = re.search(r"(http://\S+/)\?token=(\S+)", line)
        if found:
            return found.group(1), found.group(2)
    raise AssertionError(f"serve printed no URL with a token: {process.communicate()}")


def free_port() -> int:
    """A loopback port free right now (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """``agentsession serve`` running: its client, then (once stopped) what it wrote."""

    client: httpx.Client
    stdout: str = ""
    stderr: str = ""
    pid: int = 0  # the server process's


@contextlib.contextmanager
def serve_cli(cwd: Path, *argv: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """Run ``agentsession ARGV… serve --port P`` (ARGV ends with ``serve`` and its options)."""
    port = free_port()
    command = [sys.executable, "-m", "agentsession", *argv, "--port", str(port)]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    headers = {}
    given = {"--token", "--token-file", "--no-auth"} & set(argv)
    given = given or {"AGENTSESSION_TOKEN"} & set(env or {})
    if not given:
        # Without a token given, serve makes one for the run and prints it first.
        headers = {"Authorization": f"Bearer {printed_url(process)[1]}"}
    base = f"http://127.0.0.1:{port}"
    served = Served(httpx.Client(base_url=base, timeout=TIMEOUT, headers=headers), pid=process.pid)
    try:
        for _ in range(1200):
            try:
                served.client.get("/healthz")
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(0.1)
        yield served
    finally:
        served.client.close()
        process.terminate()
        served.stdout, served.stderr = process.communicate(timeout=120)


async def until(condition: Callable[[], bool]) -> None:
    """Return once ``condition()`` holds; fail after two minutes of polling it."""
    for _ in range(12000):  # a condition, polled within a generous bound
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")
