"""The ``agentsession`` command line: run, chat, sessions, show.

Every command takes ``--db PATH`` (default: the embedded SQLite store in the user data dir).
The model comes from ``--model`` or ``AGENTSESSION_MODEL`` (e.g. ``openai:gpt-4.1``); without
one the offline scripted demo model answers and the CLI says so in one line. Turns print from
``session.stream()``, so progress shows as it happens. Errors of the package print as one line
and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .console import print_events, print_transcript
from .errors import AgentSessionError
from .providers.base import Model
from .tools import Tool

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["build_parser", "main"]


def _model(spec: str | None) -> tuple[Model, list[Tool]]:
    """The configured model, or the offline demo model with the demo's own tools."""
    spec = spec or os.environ.get("AGENTSESSION_MODEL")
    if spec:
        from .providers import get_model

        return get_model(spec), []
    from .demo import demo_model, demo_tools

    print(
        "No model configured (--model or AGENTSESSION_MODEL); using the offline scripted demo "
        "model.",
        file=sys.stderr,
    )
    return demo_model(), demo_tools()


def _runtime(args: argparse.Namespace, *, needs_model: bool) -> Runtime:
    from .runtime import Runtime
    from .store.sqlite import SQLiteStore

    model, tools = _model(args.model) if needs_model else (None, [])
    return Runtime(store=SQLiteStore(args.db), model=model, tools=tools)


async def _run(args: argparse.Namespace) -> int:
    runtime = _runtime(args, needs_model=args.command in ("run", "chat"))
    try:
        match args.command:
            case "run":
                if args.session:
                    session = await runtime.open_session(args.session)
                else:
                    session = await runtime.create_session()
                print(f"session {session.id}", file=sys.stderr)
                await print_events(session.stream(args.text))
            case "chat":
                if args.session:
                    session = await runtime.open_session(args.session)
                else:
                    session = await runtime.create_session()
                print(f"session {session.id} (empty line or Ctrl-D to quit)", file=sys.stderr)
                while True:
                    try:
                        text = await asyncio.to_thread(input, "you: ")
                    except EOFError:
                        break
                    if not text.strip():
                        break
                    try:
                        await print_events(session.stream(text))
                    except AgentSessionError as exc:
                        print(f"error: {exc}", file=sys.stderr)
            case "sessions":
                for info in await runtime.list_sessions():
                    title = info.title or "(untitled)"
                    print(f"{info.id}  {info.updated_at[:19]}  {info.next_seq:>6} entries  {title}")
            case "show":
                session = await runtime.open_session(args.id)
                if session.title:
                    print(f"# {session.title}")
                print_transcript(session.messages)
        return 0
    finally:
        await runtime.close()


def _add_common(parser: argparse.ArgumentParser, default: str | None) -> None:
    parser.add_argument(
        "--db", default=default, help="SQLite database file (default: in the user data dir)"
    )
    parser.add_argument(
        "--model", default=default, help="model, e.g. openai:gpt-4.1 (default: AGENTSESSION_MODEL)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (``agentsession --help``)."""
    parser = argparse.ArgumentParser(prog="agentsession", description="Durable LLM-agent sessions.")
    _add_common(parser, None)
    # The subcommands accept the same options after their name; SUPPRESS keeps a value given
    # before the subcommand from being reset to the default.
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one prompt", parents=[common])
    run.add_argument("text")
    run.add_argument("--session", help="continue this session instead of creating one")
    chat = sub.add_parser("chat", help="interactive loop", parents=[common])
    chat.add_argument("--session", help="continue this session")
    sub.add_parser("sessions", help="list sessions", parents=[common])
    show = sub.add_parser("show", help="print a session's transcript", parents=[common])
    show.add_argument("id")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``agentsession`` console script."""
    args = build_parser().parse_args(argv)
    try:
        code = asyncio.run(_run(args))
    except AgentSessionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
