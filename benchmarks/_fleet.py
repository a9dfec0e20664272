"""What ``server_load.py`` does beside the prompts: followers of ``/events`` that drop and come
back on another process, and a restart of the PostgreSQL server under load.

A follower reads one session's ``/events`` from the start. After a few events it drops the
connection (or loses it: a killed process, a restarted database) and reconnects to another
live process with ``Last-Event-ID``. Every event with an id must be the one after the last it
saw: a larger id is a gap, a smaller or equal one a duplicate. At the end it reads on until the
log's last entry, so an entry missing at the end counts too.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import random
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlparse

import httpx


class Fleet(Protocol):
    urls: list[str]

    def next(self) -> int: ...


@dataclass
class Follower:
    """One follower of one session's log."""

    sid: str
    last: int = -1
    gaps: int = 0
    duplicates: int = 0
    reconnects: int = 0
    seen: int = 0

    def saw(self, seq: int) -> None:
        if seq > self.last + 1:
            self.gaps += 1
        elif seq <= self.last:
            self.duplicates += 1
            return
        self.last = seq
        self.seen += 1

    async def read(self, client: httpx.AsyncClient, url: str, until: int | None) -> None:
        """Read events until ``until`` (a seq) is seen, or a few events when ``None``."""
        budget = random.randint(3, 25) if until is None else None
        headers = {"Last-Event-ID": str(self.last)} if self.last >= 0 else {}
        timeout = httpx.Timeout(60.0, connect=10.0)
        async with client.stream(
            "GET", f"{url}/sessions/{self.sid}/events", headers=headers, timeout=timeout
        ) as response:
            if response.status_code != 200:
                await response.aread()
                return
            event, ident = "", None
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("id: "):
                    ident = int(line[4:])
                elif line == "":
                    if ident is not None:
                        self.saw(ident)
                        if budget is not None:
                            budget -= 1
                    if event == "error":
                        return  # the store failed under it: come back elsewhere
                    event, ident = "", None
                    if budget is not None and budget <= 0:
                        return  # drop on purpose
                    if until is not None and self.last >= until:
                        return

    async def run(self, client: httpx.AsyncClient, fleet: Fleet, stop: asyncio.Event) -> None:
        while not stop.is_set():
            url = fleet.urls[fleet.next()]
            # The process died or the database went away: another one takes it.
            with contextlib.suppress(httpx.TransportError, httpx.StreamError):
                await self.read(client, url, None)
            self.reconnects += 1
            await asyncio.sleep(random.uniform(0.0, 0.3))

    async def finish(self, client: httpx.AsyncClient, fleet: Fleet) -> None:
        """Read on to the log's last entry (on any live process)."""
        for _ in range(50):
            url = fleet.urls[fleet.next()]
            try:
                entries = (await client.get(f"{url}/sessions/{self.sid}")).json()["entries"]
                if self.last >= entries - 1:
                    return
                await asyncio.wait_for(self.read(client, url, entries - 1), 60)
            except (httpx.TransportError, httpx.StreamError, TimeoutError):
                continue
            if self.last >= entries - 1:
                return
        raise RuntimeError(f"follower of {self.sid} never reached the log's end")


def follower_figures(followers: list[Follower]) -> dict[str, Any]:
    return {
        "followers": len(followers),
        "follower_reconnects": sum(f.reconnects for f in followers),
        "follower_events": sum(f.seen for f in followers),
        "sse_gaps": sum(f.gaps for f in followers),
        "sse_duplicates": sum(f.duplicates for f in followers),
    }


def _bindir() -> str:
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True).stdout.strip()
        if os.path.exists(os.path.join(out, "pg_ctl")):
            return out
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    if not dirs:
        raise RuntimeError("no pg_ctl found to restart PostgreSQL")
    return dirs[0]


def restart_postgres(dsn: str) -> float:
    """Restart the throwaway server ``.ci/with-postgres`` started (fast mode: connections cut).

    Returns the seconds it took. The data folder is ``<socket folder>/data`` there.
    """
    host = parse_qs(urlparse(dsn).query).get("host", [""])[0]
    data = Path(host) / "data"
    if not data.is_dir():
        raise RuntimeError(f"cannot restart PostgreSQL: no data folder at {data}")
    owner = data.stat().st_uid
    command = [os.path.join(_bindir(), "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "restart"]
    command += ["-l", str(Path(host) / "server.log")]
    if os.getuid() == 0 and owner != 0:
        import pwd

        command = ["runuser", "-u", pwd.getpwuid(owner).pw_name, "--", *command]
    began = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - began


#: The probe, a process of its own: asking from a thread of the benchmark's busy process
#: measured that process's own delays (its event loop holds the GIL for 50 clients), seconds
#: where the database took tens of milliseconds.
_PROBE = """
import sys, time, psycopg
from agentsession.store._postgres_presence import presence_void
conn = psycopg.connect(sys.argv[1], autocommit=True)
print("READY", flush=True)
owner = sys.stdin.readline().strip()
for _ in range(60000):
    with conn.transaction():
        row = conn.execute(f"SELECT {presence_void('%s')}", (owner,)).fetchone()
    if row and row[0]:
        print(time.perf_counter(), flush=True)  # CLOCK_MONOTONIC: the same in every process
        break
    time.sleep(0.005)
"""


def presence_probe(dsn: str) -> Any:
    """A probe process with its connection open before the kill, waiting for an owner to watch."""
    import sys

    probe = subprocess.Popen(
        [sys.executable, "-c", _PROBE, dsn],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert probe.stdout is not None
    if probe.stdout.readline().strip() != "READY":
        raise RuntimeError("the presence probe did not start")
    return probe


def presence_watch(probe: Any, pid: int) -> None:
    """Start watching the presence of server ``pid`` (before it is killed)."""
    import socket

    probe.stdin.write(f"{socket.gethostname()}:{pid}\n")
    probe.stdin.flush()


def presence_released(probe: Any, killed_at: float) -> float:
    """Seconds from ``killed_at`` until the watched process's lease presence was gone.

    Its leases are void from then on for every process, also one on another machine (which
    cannot see that the pid is gone): the database released the advisory lock the process held
    on a connection of its own when that connection closed. The probe asks every 5 ms from a
    process of its own, so the figure is the database's, not this busy process's.
    """
    out, _ = probe.communicate(timeout=600)
    if not out.strip():
        raise RuntimeError("the killed process's presence was never released")
    return float(out.strip().splitlines()[-1]) - killed_at
