"""A real server process for the HTTP tests: ``create_app`` over a runtime, served by uvicorn.

    python app_main.py DB GATES [--postgres] [--token T ...] [--open-token T ...]
        [--allowed-host NAME ...] [--max-body N] [--head-timeout SECONDS] [--max-connections N]
        [--workspaces DIR] [--poll-interval SECONDS] [--lease-ttl SECONDS] [--host-name NAME]

DB is a SQLite file, or with ``--postgres`` a PostgreSQL DSN; GATES a folder. The model is
scripted by the prompt: ``approve …`` calls a tool the preset asks about, ``wait NAME`` calls a
tool that finishes when the file GATES/NAME exists (so a test decides when a turn moves on,
without sleeping), ``fail`` fails the provider call once, anything else calls ``count_words``
and answers with the count. With ``--workspaces`` the built-in file tools come too (preset
workspace-write): ``write PATH TEXT`` writes a file, ``read PATH`` reads one, ``run CMD`` runs a
command (after approval). ``md TEXT`` answers TEXT itself (Markdown for the web UI); ``slow NAME``
streams its answer's text, then holds the reply until the file GATES/NAME exists.
Prints ``PORT <n>`` once listening on an ephemeral loopback port.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn

import agentsession as ags
from agentsession.providers.base import ModelDone, ModelEvent
from agentsession.providers.scripted import Reply
from agentsession.request import ToolResultMessage, UserMessage, text_of
from agentsession.server.limits import deadline_protocol

GATES = Path(".")
_failed: set[str] = set()


@ags.tool
def count_words(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text to count.
    """
    return len(text.split())


@ags.tool(effect="execute")
def deploy(target: str) -> str:
    """Deploy to a target (asks for approval under workspace-write).

    Args:
        target: Where to deploy.
    """
    return f"deployed to {target}"


@ags.tool
async def wait_gate(name: str) -> str:
    """Wait until the test opens a gate.

    Args:
        name: The gate's file name.
    """
    gate = GATES / name
    for _ in range(6000):  # a generous bound (10 minutes) so a broken test cannot hang forever
        if gate.exists():
            return f"gate {name} open"
        await asyncio.sleep(0.1)
    return f"gate {name} never opened"


def reply(request: ags.Request) -> Reply:
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    text = text_of(users[-1].content) if users else ""
    last = request.messages[-1] if request.messages else None
    if isinstance(last, ToolResultMessage):
        return f"answer: {text_of(last.content)}"
    word, _, rest = text.partition(" ")
    if word == "approve":
        return [ags.ToolCall("deploy", {"target": rest or "prod"})]
    if word == "wait":
        return [ags.ToolCall("wait_gate", {"name": rest})]
    if word == "write":
        path, _, content = rest.partition(" ")
        return [ags.ToolCall("write_file", {"path": path, "content": content})]
    if word == "read":
        return [ags.ToolCall("read_file", {"path": rest})]
    if word == "run":
        return [ags.ToolCall("run_command", {"command": rest})]
    if word == "md":
        return rest  # the answer is the rest of the prompt, as Markdown
    if word == "slow":
        return f"streamed while gate {rest} was shut, then finished"
    if word == "fail" and text not in _failed:
        _failed.add(text)
        return ags.ProviderError("the provider failed (scripted)")
    return [ags.ToolCall("count_words", {"text": text})]


async def _gate(name: str) -> None:
    for _ in range(6000):  # 10 minutes at most, as wait_gate
        if (GATES / name).exists():
            return
        await asyncio.sleep(0.1)


class GatedModel(ags.ScriptedModel):
    """The scripted model; for ``slow NAME`` it streams the text, then waits for gate NAME."""

    async def stream(self, request: ags.Request) -> AsyncIterator[ModelEvent]:
        users = [m for m in request.messages if isinstance(m, UserMessage)]
        word, _, rest = (text_of(users[-1].content) if users else "").partition(" ")
        async for event in super().stream(request):
            if word == "slow" and isinstance(event, ModelDone):
                await _gate(rest)
            yield event


async def main() -> None:
    global GATES
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("gates")
    parser.add_argument("--token", action="append", default=[])
    parser.add_argument("--open-token", action="append", default=[])
    parser.add_argument("--allowed-host", action="append", default=[])
    parser.add_argument("--head-timeout", type=float, default=None)
    parser.add_argument("--max-connections", type=int, default=None)
    parser.add_argument("--max-body", type=int, default=64 * 1024)
    parser.add_argument("--postgres", action="store_true", help="DB is a PostgreSQL DSN")
    parser.add_argument("--workspaces", default=None)
    parser.add_argument("--poll-interval", type=float, default=None)
    parser.add_argument("--lease-ttl", type=float, default=30.0)
    parser.add_argument("--host-name", default=None, help="as if this process ran on NAME")
    args = parser.parse_args()
    if args.host_name is not None:  # its lease owner names another machine: no pid check
        socket.gethostname = lambda: str(args.host_name)
    GATES = Path(args.gates)
    if args.postgres:
        store: ags.Store = ags.PostgresStore(args.db)
    else:
        store = ags.SQLiteStore(args.db)
    runtime = ags.Runtime(
        store=store,
        model=GatedModel(reply, name="scripted:test"),
        tools=[count_words, deploy, wait_gate, *(ags.builtin_tools() if args.workspaces else [])],
        project_dir=Path(args.gates),
        config=ags.Config(
            retry_base_delay=0,
            provider_retries=0,
            permission_preset="workspace-write",
            lease_ttl=args.lease_ttl,
        ),
    )
    app = ags.server.create_app(
        runtime,
        tokens=args.token,
        open_tokens=args.open_token,
        allowed_hosts=args.allowed_host,
        max_body=args.max_body,
        workspaces=args.workspaces,
    )
    if args.poll_interval is not None:  # a test that only news may wake followers in time
        app.state.server.notifier.poll_interval = args.poll_interval
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    http = "auto" if args.head_timeout is None else deadline_protocol(args.head_timeout)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        http=http,
        limit_concurrency=args.max_connections,
    )
    server = uvicorn.Server(config)
    try:
        await server.serve(sockets=[sock])
    finally:
        await runtime.close()


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    asyncio.run(main())
