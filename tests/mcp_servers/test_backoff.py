"""A server that keeps failing to start is started again less and less often, never each step."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import agentsession as ags
from agentsession.mcp.connection import ServerConnection

# Notes each start in a file, then exits before the MCP handshake: every start fails.
_FAILING = "import sys; open(sys.argv[1], 'a').write('start\\n')"


async def test_each_failed_start_doubles_the_wait(tmp_path: Path) -> None:
    starts = tmp_path / "starts.txt"
    now = [0.0]
    server = ags.MCPServer.stdio(
        "flaky", sys.executable, ["-c", _FAILING, str(starts)], backoff=1.0, startup_timeout=20
    )
    conn = ServerConnection(server, clock=lambda: now[0])

    def count() -> int:
        return len(starts.read_text().splitlines()) if starts.exists() else 0

    try:
        for moment, expected in ((0.0, 1), (0.5, 1), (1.5, 2), (2.5, 2), (3.6, 3), (7.0, 3)):
            now[0] = moment
            assert not await conn.refresh()
            assert count() == expected, f"at {moment}: {count()} starts"
        # waits so far: 1, 2, 4 seconds after the failures at 0, 1.5 and 3.6
        now[0] = 7.7
        assert not await conn.refresh()
        assert count() == 4
        assert conn.state == "down" and conn.reason
    finally:
        await conn.close()
        await asyncio.sleep(0)
