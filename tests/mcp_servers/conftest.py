"""Fixtures for the MCP tests: the lab server over stdio and over streamable HTTP on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags

pytest.importorskip("mcp")

LAB = Path(__file__).with_name("lab_server.py")
NOTE = {"note": "note://current"}


@dataclass
class Lab:
    """A lab server declaration and the means to kill the process serving it."""

    server: ags.MCPServer
    log: Path
    process: subprocess.Popen[str] | None = None

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []

    def starts(self) -> int:
        return sum(line.startswith("started ") for line in self.lines())

    def pid(self) -> int:
        started = [line for line in self.lines() if line.startswith("started ")]
        assert started, "the lab server never started"
        return int(started[-1].split()[1])

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=30)
        else:
            os.kill(self.pid(), signal.SIGKILL)


def stdio_lab(tmp_path: Path, **kwargs: Any) -> Lab:
    log = tmp_path / "lab.log"
    env = {"LAB_LOG": str(log), **kwargs.pop("env", {})}
    kwargs.setdefault("resources", NOTE)
    kwargs.setdefault("backoff", 3600)
    server = ags.MCPServer.stdio("lab", sys.executable, [str(LAB)], env=env, **kwargs)
    return Lab(server, log)


def http_lab(tmp_path: Path, **kwargs: Any) -> Lab:
    log = tmp_path / "lab.log"
    env = {**os.environ, "LAB_LOG": str(log)}
    process = subprocess.Popen(
        [sys.executable, str(LAB), "--http"], stdout=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    kwargs.setdefault("resources", NOTE)
    kwargs.setdefault("backoff", 3600)
    server = ags.MCPServer.http("lab", f"http://127.0.0.1:{port}/mcp", **kwargs)
    return Lab(server, log, process)


@pytest.fixture(params=["stdio", "http"])
def lab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    made = stdio_lab(tmp_path) if request.param == "stdio" else http_lab(tmp_path)
    yield made
    if made.process is not None and made.process.poll() is None:
        made.process.kill()
        made.process.wait(timeout=30)
    if made.process is not None and made.process.stdout is not None:
        made.process.stdout.close()
