"""The ``agentsession`` command line: arguments, and one clear line for every failure.

``agentsession run TEXT`` runs one prompt (``-`` or a pipe: standard input), ``chat`` an
interactive loop, ``retry`` re-sends a failed step; ``sessions``, ``show``, ``info`` list and
read; ``context``, ``request`` and ``report`` show what the model saw and sent; ``export``,
``import``, ``delete``, ``rename`` and ``fork`` manage sessions; ``skills`` lists the skills
and what is wrong with the broken ones. Options may stand before or after the command.
``commands`` and ``manage`` do the work; this module parses and turns every failure into one
``error:`` line and a non-zero exit code (``--debug`` adds the traceback): 1 for a failure, 2
for bad arguments, 130 for an interrupt.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import NoReturn

from .errors import AgentSessionError
from .serve import add_serve_command

__all__ = ["build_parser", "main"]

_FORMATS = ("anthropic-messages", "openai-chat", "openai-responses", "gemini", "neutral")


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one ``error:`` line naming the help to read, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")


def _add_common(parser: argparse.ArgumentParser, default: object) -> None:
    add = parser.add_argument
    add(
        "--db",
        default=default,
        metavar="PATH|URL",
        help="SQLite database file or postgresql:// URL (default: AGENTSESSION_DB, else a file"
        " in the user data dir)",
    )
    add("--model", default=default, help="model, e.g. openai:gpt-4.1 (default: AGENTSESSION_MODEL)")
    add("--debug", action="store_true", default=default, help="show tracebacks of failures")
    out = parser.add_mutually_exclusive_group()
    out.add_argument(
        "-q", "--quiet", action="store_true", default=default, help="print the replies only"
    )
    out.add_argument(
        "--json", action="store_true", default=default, help="one JSON object per event on stdout"
    )


def _add_session_options(parser: argparse.ArgumentParser, *, continuing: bool = True) -> None:
    parser.add_argument(
        "--system", metavar="TEXT", help="the application's instructions (kept for the session)"
    )
    parser.add_argument(
        "--context-window", metavar="N", type=_positive, help="the token budget of one request"
    )
    if continuing:
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--session", metavar="ID", help="continue this session")
        group.add_argument(
            "-c",
            "--continue",
            dest="continue_",
            action="store_true",
            help="continue the most recent session",
        )


def _add_agent_options(parser: argparse.ArgumentParser, *, prompting: bool = True) -> None:
    """What a session that runs tools gets: preset, approvals, skills, MCP servers."""
    add = parser.add_argument
    add(
        "--preset",
        metavar="NAME",
        help="permission preset: read-only, workspace-write or full-access (a new session starts"
        " with workspace-write; a continued one keeps its own unless this is given)",
    )
    add(
        "-y",
        "--yes",
        action="store_true",
        help="approve every tool call the preset asks about, without asking (otherwise a"
        " terminal asks, and without a terminal such calls are denied)",
    )
    add(
        "--skills-dir",
        metavar="DIR",
        action="append",
        default=[],
        help="a folder of skills (repeatable), besides the project's .agents/skills and"
        " .claude/skills",
    )
    add(
        "--mcp-config",
        metavar="FILE",
        help="MCP servers in the .mcp.json format (the project's own .mcp.json is read too)",
    )
    if prompting:
        add(
            "--skill",
            metavar="NAME",
            action="append",
            default=[],
            help="select a skill for the (first) prompt; repeatable ($NAME in the text works too)",
        )


def _nonnegative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a log position (0 or more), got {value}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (``agentsession --help``)."""
    from .invocation import version

    parser = _Parser(prog="agentsession", description="Durable LLM-agent sessions.")
    parser.add_argument("--version", action="version", version=f"agentsession {version()}")
    _add_common(parser, False)
    # The commands accept the same options after their name; SUPPRESS keeps a value given
    # before the command from being reset to the default.
    common = _Parser(add_help=False)
    _add_common(common, argparse.SUPPRESS)
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text, parents=[common])

    run = command("run", "run one prompt, in a new session or a continued one")
    run.add_argument(
        "text", nargs="*", metavar="TEXT", help="the prompt; '-' or nothing reads standard input"
    )
    _add_session_options(run)
    _add_agent_options(run)
    chat = command("chat", "talk interactively (Ctrl-C cancels a reply, Ctrl-D quits)")
    _add_session_options(chat)
    _add_agent_options(chat)
    retry = command("retry", "finish a turn that failed: re-send the failed step")
    retry.add_argument("id", nargs="?", metavar="ID", help="the session (default: most recent)")
    _add_session_options(retry, continuing=False)
    _add_agent_options(retry, prompting=False)
    command("sessions", "list sessions: messages, model, last activity, title")
    show = command("show", "print a session's transcript")
    show.add_argument("id", metavar="ID", help="the session")
    command("info", "version, paths (the default database too), model, installed extras")
    context = command("context", "the next request annotated: epoch, sources, window, tokens")
    context.add_argument("id", metavar="ID", help="the session")
    context.add_argument(
        "--step", metavar="N", type=_positive, help="the N-th dispatched request instead"
    )
    context.add_argument("--full", action="store_true", help="print every part in full")
    request = command("request", "the exact JSON a request is sent as (nothing is admitted)")
    request.add_argument("id", metavar="ID", help="the session")
    request.add_argument(
        "--format",
        choices=_FORMATS,
        help="wire format (default: the session model's own)",
    )
    request.add_argument(
        "--step",
        metavar="N",
        type=_positive,
        help="the N-th dispatched request, rebuilt from the log, instead of the next one",
    )
    report = command("report", "write a self-contained HTML report of a session")
    report.add_argument("id", nargs="?", metavar="ID", help="the session")
    report.add_argument("--all", action="store_true", help="every session, with an index page")
    report.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="file (folder with --all) to write; default agentsession-<id>.html",
    )
    _add_management(command)
    add_serve_command(command)
    return parser


def _add_management(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    skills = command("skills", "list the skills a session here can use, and the broken ones")
    skills.add_argument(
        "--project", metavar="DIR", help="the project folder (default: the current folder)"
    )
    skills.add_argument(
        "--skills-dir", metavar="DIR", action="append", default=[], help="a folder of skills"
    )
    export = command("export", "write a session to a JSON Lines session file")
    export.add_argument("id", metavar="ID", help="the session")
    export.add_argument(
        "-o", "--output", metavar="FILE", help="the file to write (default: standard output)"
    )
    imported = command("import", "store the session of a session file; prints its id")
    imported.add_argument("file", metavar="FILE", help="the session file ('-': standard input)")
    imported.add_argument(
        "--copy", action="store_true", help="import under a new id (keep the stored one apart)"
    )
    delete = command("delete", "delete a session and its whole log (cannot be undone)")
    delete.add_argument("id", metavar="ID", help="the session")
    rename = command("rename", "give a session a title of your own")
    rename.add_argument("id", metavar="ID", help="the session")
    rename.add_argument("title", nargs="+", metavar="TITLE", help="the new title")
    fork = command("fork", "copy a session's log (up to an entry) into a new session")
    fork.add_argument("id", metavar="ID", help="the session")
    fork.add_argument(
        "--at",
        metavar="SEQ",
        type=_nonnegative,
        help="the last log entry to copy (its seq, as `context` and `report` show them);"
        " default: all of them",
    )


async def _main(args: argparse.Namespace) -> int:
    from .commands import COMMANDS
    from .invocation import Invocation, make_output

    invocation = Invocation(args, make_output(args))
    return await COMMANDS[args.command](invocation)


def _fail(args: argparse.Namespace, message: str) -> None:
    # One line, whatever the message (a driver's error may span several).
    message = " ".join(line.strip() for line in message.splitlines() if line.strip())
    if getattr(args, "json", False):
        from .console import JsonOutput

        JsonOutput().emit("error", message=message)
    print(f"error: {message}", file=sys.stderr)


class _OneLine(logging.Formatter):
    """A log record as one ``warning: …`` line: a library's traceback is for ``--debug``."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {' '.join(record.getMessage().split())}"


def _log_to_stderr(debug: bool) -> None:
    """Send warnings to standard error, one line each (in full with ``--debug``).

    They come from the package and from the libraries it drives (the MCP SDK logs a server's
    broken answer with a traceback).
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter() if debug else _OneLine())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``agentsession`` console script."""
    args = build_parser().parse_args(argv)
    _log_to_stderr(args.debug)
    try:
        code = asyncio.run(_main(args))
    except KeyboardInterrupt:
        turn = args.command in ("run", "chat", "retry")
        print(
            "interrupted" + (": the running turn is recorded as cancelled" if turn else ""),
            file=sys.stderr,
        )
        code = 130
    except BrokenPipeError:
        # The reader left (``| head``): nothing more can reach it, and nothing needs saying.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except AgentSessionError as exc:
        if args.debug:
            traceback.print_exc()
        _fail(args, str(exc))
        code = 1
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        hint = "" if args.debug else " (run with --debug for the traceback)"
        _fail(args, f"unexpected {type(exc).__name__}: {exc}{hint}")
        code = 1
    sys.exit(code)
