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
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn

from ..errors import AgentSessionError, SessionBusyError, UsageError
from .collector import collector_paused
from .examples import examples
from .portable import add_portable_commands
from .serve_options import SERVE_QUIET, add_serve_command

__all__ = ["build_parser", "main"]

_FORMATS = ("anthropic-messages", "openai-chat", "openai-responses", "gemini", "neutral")


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one ``error:`` line naming the help to read, exit code 2."""

    commands: Mapping[str, argparse.ArgumentParser]  # the top level's: each command's parser

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")

    def parse_command_line(self, argv: Sequence[str] | None) -> argparse.Namespace:
        """``parse_args``, with an argument no command knows blamed on the command it followed.

        argparse leaves a command's unknown arguments to the top-level parser, whose error would
        point at ``agentsession --help`` rather than the command's own help.
        """
        args, extra = self.parse_known_args(argv)
        if extra:
            commands = getattr(self, "commands", {})
            owner = commands.get(getattr(args, "command", None), self)
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        return args


def _add_common(
    parser: argparse.ArgumentParser,
    default: object,
    *,
    db: bool = True,
    quiet: str = "print the replies only",
) -> None:
    add = parser.add_argument
    if db:
        _add_db(parser, default)
    add("--debug", action="store_true", default=default, help="show tracebacks of failures")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("-q", "--quiet", action="store_true", default=default, help=quiet)
    out.add_argument(
        "--json",
        action="store_true",
        default=default,
        help="one JSON object per line on stdout, each with schema_version (see docs/cli.md)",
    )


def _add_db(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--db",
        default=default,
        metavar="PATH|URL",
        help="SQLite database file or postgresql:// URL (default: AGENTSESSION_DB, else a file"
        " in the user data dir)",
    )


def _add_model(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "-m",
        "--model",
        default=default,
        help="model: NAME:MODEL of a configured provider, an alias, or e.g. openai:gpt-4.1"
        " (default: AGENTSESSION_MODEL, else the config file; see: agentsession models)",
    )


def _add_system(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "-s",
        "--system",
        metavar="TEXT",
        default=default,
        help="the application's instructions (kept for the session)",
    )


def _add_session_options(parser: argparse.ArgumentParser, *, continuing: bool = True) -> None:
    _add_system(parser, argparse.SUPPRESS)
    parser.add_argument(
        "--context-window", metavar="N", type=_positive, help="the token budget of one request"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="on a terminal, also show context updates and the cache diagnosis of each request",
    )
    if continuing:
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--session", metavar="ID", help="continue this session (an id prefix)")
        group.add_argument(
            "-r",
            "--resume",
            metavar="ID",
            nargs="?",
            const="",
            help="continue session ID; without ID, pick one from a list (on a terminal)",
        )
        _add_continue(group.add_argument, argparse.SUPPRESS)  # keeps a -c given before it


def _add_continue(add: Callable[..., object], default: object) -> None:
    text = "continue the most recent session of the current folder (run, chat)"
    add("-c", "--continue", dest="continue_", action="store_true", default=default, help=text)


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
        help="MCP servers in the .mcp.json format (the project's own .mcp.json is read too,"
        " once the project is trusted)",
    )
    add(
        "--trust",
        action="store_true",
        default=argparse.SUPPRESS,
        help="trust this project's .mcp.json as it is now, without asking (remembered)",
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


def build_parser() -> _Parser:
    """The argument parser (``agentsession --help``).

    It names every command without importing what runs one (``commandtable``).
    """
    from .. import __version__

    parser = _Parser(
        prog="agentsession",
        description="Durable LLM-agent sessions. Without a command: chat on a terminal,"
        " this help otherwise.",
        epilog=examples(None),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agentsession {__version__}")
    _add_common(parser, False)
    parser.add_argument(
        "--trust", action="store_true", help="trust this project's .mcp.json (run, chat, retry)"
    )
    _add_model(parser, None)
    _add_system(parser, None)
    _add_continue(parser.add_argument, False)  # also before the command: agentsession -c chat
    # The commands accept the same options after their name; SUPPRESS keeps a value given
    # before the command from being reset to the default.
    common = _Parser(add_help=False)
    _add_common(common, argparse.SUPPRESS, db=False)
    serving = _Parser(add_help=False)  # serve prints no replies: its -q says what it does
    _add_common(serving, argparse.SUPPRESS, db=False, quiet=SERVE_QUIET)
    stored = _Parser(add_help=False)
    _add_db(stored, argparse.SUPPRESS)
    modeled = _Parser(add_help=False)
    _add_model(modeled, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    parser.commands = sub.choices

    def command(
        name: str, text: str, *, model: bool = False, database: bool = True
    ) -> argparse.ArgumentParser:
        first = serving if name == "serve" else common
        parents = [first, *([stored] if database else []), *([modeled] if model else [])]
        return sub.add_parser(
            name,
            help=text,
            description=text,
            parents=parents,
            epilog=examples(name),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    run = command("run", "run one prompt, in a new session or a continued one", model=True)
    run.add_argument(
        "text",
        nargs="*",
        metavar="TEXT",
        help="the prompt; '-' alone or nothing reads standard input; with a pipe and TEXT,"
        " the prompt is TEXT, a blank line, then standard input",
    )
    _add_session_options(run)
    _add_agent_options(run)
    chat = command("chat", "talk interactively (Ctrl-C cancels a reply, Ctrl-D quits)", model=True)
    _add_session_options(chat)
    _add_agent_options(chat)
    retry = command("retry", "finish a turn that failed: re-send the failed step", model=True)
    retry.add_argument(
        "id", nargs="?", metavar="ID", help="the session (default: this folder's most recent)"
    )
    _add_session_options(retry, continuing=False)
    _add_agent_options(retry, prompting=False)
    listed = command("sessions", "list sessions: id, last activity, messages, model, title")
    listed.add_argument("-n", "--limit", metavar="N", type=_positive, help="the N newest only")
    listed.add_argument("--here", action="store_true", help="only this folder's sessions")
    show = command("show", "print a session's transcript")
    show.add_argument("id", metavar="ID", help="the session (a unique id prefix will do)")
    command(
        "info", "version, paths (the default database too), model, installed extras", model=True
    )
    command(
        "models",
        "the models the config file and the environment make usable, and why not",
        database=False,
    )
    context = command(
        "context", "the next request annotated: epoch, sources, window, tokens", model=True
    )
    context.add_argument("id", metavar="ID", help="the session")
    context.add_argument(
        "--step", metavar="N", type=_positive, help="the N-th dispatched request instead"
    )
    context.add_argument("--full", action="store_true", help="print every part in full")
    request = command(
        "request", "the exact JSON a request is sent as (nothing is admitted)", model=True
    )
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
    _add_cost(command)
    add_serve_command(command)
    return parser


def _add_cost(command: Callable[..., argparse.ArgumentParser]) -> None:
    cost = command("cost", "what a session cost in USD, from the provider-reported usage")
    cost.add_argument("id", nargs="?", metavar="ID", help="the session")
    cost.add_argument("--all", action="store_true", help="every session, and their total")


def _add_management(command: Callable[..., argparse.ArgumentParser]) -> None:
    skills = command(
        "skills", "list the skills a session here can use, and the broken ones", database=False
    )
    skills.add_argument(
        "--project", metavar="DIR", help="the project folder (default: the current folder)"
    )
    skills.add_argument(
        "--skills-dir", metavar="DIR", action="append", default=[], help="a folder of skills"
    )
    add_portable_commands(command)
    trust = command(
        "trust", "trust a project folder's .mcp.json as it is now (remembered)", database=False
    )
    trust.add_argument("dir", nargs="?", metavar="DIR", help="the folder (default: this one)")
    trust.add_argument("--revoke", action="store_true", help="forget the folder's trust")
    delete = command("delete", "delete a session and its whole log (cannot be undone)")
    delete.add_argument("id", metavar="ID", help="the session")
    delete.add_argument(
        "-y", "--yes", action="store_true", help="do not ask (a terminal asks to confirm)"
    )
    rename = command("rename", "give a session a title of your own")
    rename.add_argument("id", metavar="ID", help="the session")
    rename.add_argument("title", nargs="+", metavar="TITLE", help="the new title")
    command("upgrade", "bring the session database to this version's schema (as a write would)")
    fork = command("fork", "copy a session's log (up to an entry) into a new session")
    fork.add_argument("id", metavar="ID", help="the session")
    fork.add_argument(
        "--at",
        metavar="SEQ",
        type=_nonnegative,
        help="the last log entry to copy (its seq, as `context` and `report` show them);"
        " default: all of them",
    )


async def _main(args: argparse.Namespace, held: list[object]) -> int:
    from .commandtable import implementation
    from .invocation import Invocation, make_output

    invocation = Invocation(args, make_output(args))
    held.append(invocation)
    code = await implementation(args.command)(invocation)
    if code == 0 and invocation.then is not None:  # ``import -c``: the chat that follows
        return await _main(build_parser().parse_command_line(invocation.then), held)
    return code


def _fail(args: argparse.Namespace, message: str, exc: BaseException | None = None) -> None:
    # One line, whatever the message (a driver's error may span several).
    message = " ".join(line.strip() for line in message.splitlines() if line.strip())
    from ..hygiene import visible_line  # not for ``--help``: it imports the neutral request

    message = visible_line(message)  # it may quote an id, a title or a server's words
    if getattr(args, "json", False):
        from .output import JsonOutput, error_fields

        JsonOutput().emit("error", message=message, **error_fields(exc))
    print(f"error: {message}", file=sys.stderr)


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed arguments; no command means ``chat`` on a terminal, else the help (exit 0)."""
    parser = build_parser()
    args = parser.parse_command_line(argv)
    if args.command is not None:
        return args
    if sys.stdin.isatty() and sys.stdout.isatty():
        return parser.parse_command_line([*(sys.argv[1:] if argv is None else argv), "chat"])
    parser.print_help()
    sys.exit(0)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``agentsession`` console script.

    Exit codes: 0 success, 1 failure, 2 bad arguments, 130 interrupted.
    """
    # The parser and the command's modules live as long as the process (``cli.collector``).
    with collector_paused():
        args = _arguments(argv)  # ``--help`` ends here: it needs none of what follows
        import asyncio

        from .commandtable import preload
        from .logs import log_to_stderr

        try:
            preload(args.command)
        except KeyboardInterrupt:  # before the command started: nothing to record
            print("interrupted", file=sys.stderr)
            raise SystemExit(130) from None

    log_to_stderr(args.debug)
    held: list[object] = []

    def said(exc: BaseException) -> str:
        explain = getattr(held[0], "explain", None) if held else None
        return explain(exc) if explain is not None else str(exc)

    try:
        code = asyncio.run(_main(args, held))
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
        _fail(args, said(exc), exc)
        code = 2 if isinstance(exc, UsageError) and not isinstance(exc, SessionBusyError) else 1
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        hint = "" if args.debug else " (run with --debug for the traceback)"
        _fail(args, f"unexpected {type(exc).__name__}: {exc}{hint}", exc)
        code = 1
    sys.exit(code)
