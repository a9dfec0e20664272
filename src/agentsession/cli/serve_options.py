"""The options of ``agentsession serve``: what each one means, in its help text.

Kept apart from ``cli/serve`` (which runs the server) so the command line can be built, and
``--help`` printed, without importing the server's pieces.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from .serve_tokens import TOKEN_ENV

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["LEVELS", "SERVE_QUIET", "add_serve_command", "confined"]

#: The ``--log-level`` choices.
LEVELS = ("debug", "info", "warning", "error")
#: What ``-q`` means for ``serve``, which prints no replies.
SERVE_QUIET = (
    "leave out the status lines on standard error ('serving on …'); the URL with the run's"
    " token, warnings and errors are still printed"
)


def confined(config: Config, workspaces: bool) -> Config:
    """``config`` for a server: nothing of the folder ``serve`` runs in reaches a session.

    The model is told neither that folder's path nor whether it is a repository, and its
    instruction files (or those of a repository holding the workspaces) are never read: without
    workspaces a session has no folder, so it reads no project file; with them, its own
    folder's and those below it.
    """
    return dataclasses.replace(
        config,
        environment=tuple(e for e in config.environment if e not in ("cwd", "git")),
        load_project_instructions=config.load_project_instructions and workspaces,
        instructions_above_project=False,
    )


def _port(text: str) -> int:
    number = int(text) if text.strip().isdecimal() else -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {text!r}")
    return number


def _http_url(text: str) -> str:
    # Checked here, not by the exporter at the first trace, long after serve said it serves.
    if not text.startswith(("http://", "https://")) or len(text.split("://", 1)[1]) == 0:
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL, got {text!r}")
    return text


def add_serve_command(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """Add ``serve`` and its options to the command line."""
    parser = command("serve", "serve sessions over HTTP (SSE streams, web UI at /)")
    add = parser.add_argument
    add("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    add(
        "--port",
        type=_port,
        default=8000,
        help="port to listen on (default: 8000; 0: any free one, printed)",
    )
    add(
        "--token",
        action="append",
        default=[],
        metavar="TOKEN",
        help="a bearer token clients must send (repeatable; 'sha256:<hex>' gives its hash"
        " instead); required to listen on a non-loopback address. Without it a random token is"
        " made for the run and printed in the URL to open",
    )
    add(
        "--token-file",
        action="append",
        default=[],
        metavar="PATH",
        help="read bearer tokens from a file, one per line ('#' starts a comment); the"
        f" variable {TOKEN_ENV} may also hold tokens (separated by spaces). Either keeps the"
        " secret off the command line",
    )
    add(
        "--no-auth",
        action="store_true",
        help="serve without any token (loopback only): every program and user of this machine"
        " can then drive every session; pages of other sites are still refused",
    )
    add(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients may reach the server by, beside loopback names (repeatable;"
        " '*' accepts any, for a server behind a proxy that checks it)",
    )
    add(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="server processes sharing the port, each with its own runtime (default: 1)",
    )
    add(
        "--workspaces",
        metavar="DIR",
        help="give each session a folder of its own under DIR (per owner, then per session) and"
        " the built-in file and command tools confined to it; without it sessions get no file"
        " or command tools",
    )
    add(
        "--preset",
        default="read-only",
        metavar="NAME",
        help="permission preset of new sessions: read-only (default), workspace-write or"
        " full-access. It is also the ceiling: a client may choose (POST or PATCH /sessions)"
        " only this preset and those allowing nothing more (read-only < workspace-write <"
        " full-access; a config's preset compared rule by rule); any other is refused (403)",
    )
    add(
        "--allow-preset",
        action="append",
        default=[],
        metavar="NAME",
        help="also let clients choose this permission preset for their sessions (repeatable)."
        " With --workspaces, full-access lets a client's tools reach anything this OS user"
        " can, other owners' workspaces included, and run commands outside the sandbox",
    )
    add(
        "--inspect-workers",
        type=int,
        default=1,
        metavar="N",
        help="processes of its own that each server process starts, at a lower CPU"
        " priority, with its first inspection of a long session (context, report, export,"
        " cost of 2,000 entries or more), so one never slows the other sessions' turns"
        " (default: 1); 0: inspect on a thread of the server process. On PostgreSQL each"
        " running inspection opens one connection of its own",
    )
    add(
        "--db-connections",
        type=int,
        default=16,
        metavar="N",
        help="the most PostgreSQL connections one server process opens (default: 16; at least"
        " 8): its store's pool (the server's own table too), presence, LISTEN. Processes"
        " times N must stay below the database's max_connections",
    )
    add(
        "--idle-interval",
        type=float,
        metavar="SECONDS",
        help="every SECONDS, keep warm, compact or let expire the provider cache of each"
        " recently used session no turn runs, whichever the prices make cheapest"
        " (idle_policy auto; under the sessions' leases, so a fleet acts once per session);"
        " use less than a tenth of the cache lifetime, e.g. 20. Default: off",
    )
    add(
        "--log-level",
        default="info",
        choices=LEVELS,
        help="info (default) writes one JSON line per request to standard output (the access"
        " log); warning and error leave it out; debug adds the libraries' own messages",
    )
    add(
        "--otlp-endpoint",
        metavar="URL",
        type=_http_url,
        help="send OpenTelemetry traces over OTLP/HTTP to this collector (e.g."
        " http://127.0.0.1:4318/v1/traces)",
    )
