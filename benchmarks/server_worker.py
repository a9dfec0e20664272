"""One server process of ``server_load.py``: ``create_app`` on PostgreSQL, served by uvicorn.

    python server_worker.py DSN PORT RUNS_FILE [WORKSPACES]

Each lease this process takes is written to ``lease_takes.txt`` beside RUNS_FILE (session id
and wall-clock time), so the benchmark can tell when a killed process's session was taken over.
Each turn's start is written to ``stages.txt`` beside it, stage by stage (``_stages.py``): the
request's arrival, every store call and side-table statement made for the session until the
turn's first event, with their wall-clock times, so a takeover's seconds can be told apart.

The model is scripted (no provider): each prompt calls ``count_words`` once and then answers
with the count, so a prompt is two provider calls and one tool call. The tool appends the text
it was called with to RUNS_FILE (one line per run, O_APPEND), so the benchmark can count tool
runs across processes: a line seen twice is a tool that ran twice. With WORKSPACES each session
works in a folder of its own under it (``create_app(workspaces=…)``), as ``serve --workspaces``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

import uvicorn
from _stages import Stages

import agentsession as ags
from agentsession.request import ToolResultMessage, UserMessage, text_of
from agentsession.server.db_budget import DEFAULT_DB_CONNECTIONS, pool_size_for

RUNS = ""
TAKES = ""


@ags.tool
def count_words(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text to count.
    """
    fd = os.open(RUNS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)
    return len(text.split())


class _Store(ags.PostgresStore):
    """The PostgreSQL store, noting each lease it took (O_APPEND: whole lines across processes)."""

    async def acquire_lease(self, session_id: str, owner: str, ttl: float = 30.0) -> bool:
        took = await super().acquire_lease(session_id, owner, ttl)
        _note_take(session_id, took)
        return took

    async def _take_lease_seeing(
        self, session_id: str, owner: str, ttl: float
    ) -> tuple[bool, int | None]:
        # The store's own way of taking a lease when it can (overridden too, so still used).
        took, end = await super()._take_lease_seeing(session_id, owner, ttl)
        _note_take(session_id, took)
        return took, end


def _note_take(session_id: str, took: bool) -> None:
    if took:
        line = f"{session_id} {time.time():.6f}\n".encode()
        fd = os.open(TAKES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def reply(request: ags.Request) -> object:
    last = request.messages[-1] if request.messages else None
    if isinstance(last, ToolResultMessage):
        return f"answer: {text_of(last.content)}"
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    return [ags.ToolCall("count_words", {"text": text_of(users[-1].content)})]


async def main() -> None:
    global RUNS, TAKES
    dsn, port, RUNS = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    TAKES = os.path.join(os.path.dirname(RUNS), "lease_takes.txt")
    workspaces = sys.argv[4] if len(sys.argv) > 4 else None
    runtime = ags.Runtime(
        store=_Store(dsn, pool_size=pool_size_for(DEFAULT_DB_CONNECTIONS)),  # as ``serve``
        model=ags.ScriptedModel(reply, name="scripted:bench"),
        tools=[count_words],
        config=ags.Config(retry_base_delay=0),
    )
    stages = Stages(os.path.join(os.path.dirname(RUNS), "stages.txt"))
    stages.watch_store(runtime.store)  # before the app takes the side table's statements
    app = ags.server.create_app(runtime, workspaces=workspaces)
    server = uvicorn.Server(
        uvicorn.Config(
            stages.asgi(app), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
        )
    )
    try:
        await server.serve()
    finally:
        await runtime.close()


if __name__ == "__main__":
    asyncio.run(main())
