"""``agentsession serve``: the HTTP server over the command line's database and model.

``agentsession --db PATH|URL --model MODEL serve --host H --port P [--token T] [--token-file F]
[--allowed-host NAME] [--no-auth] [--workspaces DIR] [--preset NAME] [--allow-preset NAME]
[--otlp-endpoint URL]
[--idle-interval SECONDS]``.
Without ``--token`` the server makes a random token for the run and prints the URL that carries
it (``http://HOST:PORT/?token=…``); the web UI opened from it keeps the token. ``--no-auth``
serves without any token, on a loopback address only, and says what that allows. Without a
token given, the server listens on loopback only. Whatever the tokens, the server answers
requests for loopback names and the ``--allowed-host`` names only, from no page but its own
(``server.guard``). Sessions never work in the folder ``serve`` was started in: with
``--workspaces`` each gets a folder of its own under DIR, and without it no built-in file or
command tool is offered. ``--preset`` is new sessions' permission preset (``read-only`` unless
given) and the most a client may choose; ``--allow-preset NAME`` lets clients choose NAME too.
The server and its traces come with the ``server`` and ``otel`` extras; nothing here imports
them until ``serve`` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import errno
import json
import os
import secrets
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AgentSessionError, UsageError
from .serve_options import confined
from .serve_tokens import given_tokens

if TYPE_CHECKING:
    from ..providers.base import Model
    from ..runtime import Runtime
    from ..store.base import Store
    from .invocation import Invocation

__all__ = ["serve", "server_runtime", "worker_app"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Seconds running turns and open streams get to finish when the server stops.
_GRACE = 10
#: Seconds ``serve`` waits for the store to answer before it gives up starting.
_STARTUP_CHECK = 8.0
#: Connections the listening socket queues before the server accepts them (uvicorn's default).
_BACKLOG = 2048
#: How ``--workers`` passes its configuration to the worker processes.
_WORKER_ENV = "AGENTSESSION_SERVE_WORKER"


def _check_bind(host: str, tokens: list[str], no_auth: bool = False) -> None:
    from ..server.auth import is_loopback

    if no_auth and tokens:
        raise UsageError("--no-auth and --token contradict each other: give one of them")
    if no_auth and not is_loopback(host):
        raise UsageError(
            f"refusing to listen on {host} with --no-auth: it serves without a token on a"
            " loopback address only (127.0.0.1, ::1); give --token TOKEN to serve others"
        )
    if not tokens and not is_loopback(host):
        raise UsageError(
            f"refusing to listen on {host} without --token: anyone who reaches it could drive"
            " every session; give --token TOKEN (clients send 'Authorization: Bearer TOKEN'),"
            " or listen on 127.0.0.1"
        )


def _allowed_hosts(args: argparse.Namespace) -> list[str]:
    """``--allowed-host`` names, and the address listened on when it is one (not ``0.0.0.0``)."""
    import ipaddress

    named = list(args.allowed_host)
    with contextlib.suppress(ValueError):
        if not ipaddress.ip_address(args.host.strip("[]")).is_unspecified:
            named.append(args.host)
    return named


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _run_token(inv: Invocation) -> str | None:
    """The token made for this run when none was given (``None``: tokens given, or --no-auth).

    It is printed in the URL to open, on standard output and in the status line, and names no
    owner: it sees every session, as the user at the terminal does.
    """
    args = inv.args
    url = _url(args.host, args.port)
    if args.no_auth:
        sys.stderr.write(
            f"WARNING: --no-auth: serving {url} WITHOUT A TOKEN. Every program and every user"
            " of this machine can now list, read and prompt every session and approve its tool"
            " calls (the tools run with your rights). Pages of other sites are still refused"
            " (Origin, Host and Content-Type are checked).\n"
        )
        sys.stderr.flush()
        return None
    if args.token:
        return None
    return secrets.token_urlsafe(32)


def _announce(inv: Invocation, run_token: str | None, how: str) -> None:
    """Say where the server listens, once it does: the URL to open carries the run's token.

    With ``--json`` that is one ``serving`` object (``url``, ``open``) on standard output.
    """
    from .output import JsonOutput

    args = inv.args
    url = _url(args.host, args.port)
    line = f"{url}/?token={run_token}" if run_token else None
    if isinstance(inv.output, JsonOutput):
        inv.output.emit("serving", url=url, open=line or f"{url}/")
        return
    if line:
        sys.stdout.write(f"open the web UI at {line}\n")
        sys.stdout.flush()
        inv.output.note(f"this run's token (send 'Authorization: Bearer TOKEN'): {line}")
    inv.output.note(f"serving on {url} {how}")


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything says it serves (as uvicorn would bind it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        where = _url(host, port).removeprefix("http://")
        why = (exc.strerror or str(exc)).lower()
        if exc.errno == errno.EADDRINUSE:
            why += " (another program listens there: stop it, or choose another --port)"
        raise AgentSessionError(f"cannot listen on {where}: {why}") from None
    return sock


def server_runtime(
    inv: Invocation, store: Store, workspaces: str | None, preset: str, allowed: list[str]
) -> Runtime:
    """The runtime of a server: its tools only with workspaces, and the server's preset.

    ``allowed`` (``--allow-preset``) is checked here too, so a name no preset has is refused
    before the server starts.
    """
    from ..permissions import preset_table
    from ..runtime import Runtime
    from ..tools.builtin import builtin_tools

    model, tools = inv.model("", ready=True)
    config = dataclasses.replace(inv.config(), permission_preset=preset)
    known = preset_table(config)
    for name in (preset, *allowed):
        if name not in known:
            raise UsageError(
                f"unknown permission preset {name!r}; known presets: {', '.join(known)}"
            )
    if getattr(inv.args, "idle_interval", None):
        config = dataclasses.replace(config, idle_policy="auto")
    if workspaces is None:
        builtin = {t.name for t in builtin_tools()}
        tools = [t for t in tools if t.name not in builtin]
    config = confined(config, workspaces is not None)
    return Runtime(store=store, model=model, tools=tools, config=config, project_dir=Path.cwd())


def model_resolver(inv: Invocation) -> Callable[[str], Model]:
    """How the server turns a client's model name into a model: as ``--model`` would.

    Aliases, ``NAME:MODEL`` of a configured provider and any model string the package knows;
    a model that cannot be called here (no key, no SDK) is refused before a session uses it.
    """

    def resolve(spec: str) -> Model:
        model = inv.resolve(spec)
        inv.choice.ready(model)
        return model

    return resolve


def _workspaces(given: str | None) -> str | None:
    """The workspace root: made (``0700``) when missing, in a folder that exists.

    An empty value (an unset variable in ``--workspaces "$DIR"``) would be the current folder;
    a missing parent is most likely a typo, refused as ``report -o`` refuses one.
    """
    if given is None:
        return None
    if not given.strip():
        raise UsageError("--workspaces needs a folder; it was given an empty value")
    root = Path(given).resolve()
    if root.exists() and not root.is_dir():
        raise UsageError(f"--workspaces {given}: not a folder")
    if not root.parent.is_dir():
        raise UsageError(f"--workspaces {given}: the folder {root.parent} does not exist")
    try:
        root.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"--workspaces {given}: cannot create the folder ({exc.strerror})"
        ) from None
    return str(root)


def _logging(level_name: str) -> None:
    """The access log to standard output as bare JSON lines; ``level_name`` for the rest too."""
    import logging
    import sys

    from ..server.access_log import ACCESS_LOGGER

    level = getattr(logging, level_name.upper())
    access = logging.getLogger(ACCESS_LOGGER)
    for old in [h for h in access.handlers if getattr(h, "agentsession_access", False)]:
        access.removeHandler(old)
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.agentsession_access = True  # type: ignore[attr-defined]
    access.addHandler(handler)
    access.setLevel(level)
    access.propagate = False
    # Other loggers' info lines (a driver's, an HTTP client's) stay out of the way below debug.
    logging.getLogger().setLevel(level if level_name == "debug" else max(level, logging.WARNING))


async def _check_store(store: Store) -> None:
    """Refuse to start on a store that cannot serve (unreachable, its schema to upgrade)."""
    from ..errors import StoreError
    from ..server.health import check_store

    problem = await check_store(store, _STARTUP_CHECK)
    if problem is not None:
        raise StoreError(f"cannot serve: {problem}")


def _graceful(uvicorn: Any, config: Any, app: Any) -> Any:
    """A uvicorn server that stops on SIGINT/SIGTERM and then returns (never re-raises them).

    uvicorn re-raises the signal after its shutdown, which would end the process before the
    runtime is closed and the last traces are flushed. On the signal, open event streams that
    follow a log are told to end, so the shutdown does not wait for them.
    """

    class Server(uvicorn.Server):  # type: ignore[misc]
        def handle_exit(self, sig: int, frame: Any) -> None:
            app.state.server.notifier.stopping = True
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            previous = {s: signal.signal(s, self.handle_exit) for s in _SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server(config)


def worker_app() -> Any:
    """The app of one ``--workers`` process, configured by its parent through the environment.

    The parent passes the database, the model, the tokens (hashed) and the trace endpoint; each
    worker builds its own runtime and closes it when the app shuts down.
    """
    from ..server import create_app
    from .invocation import Invocation
    from .output import QuietOutput

    conf = json.loads(os.environ[_WORKER_ENV])
    _logging(conf["log_level"])
    args = argparse.Namespace(
        db=conf["db"],
        model=conf["model"],
        json=False,
        quiet=True,
        idle_interval=conf["idle_interval"],
    )
    inv = Invocation(args, QuietOutput())
    from ..server.db_budget import pool_size_for

    store = inv.store("write", pool_size=pool_size_for(conf["db_connections"]))
    runtime = server_runtime(inv, store, conf["workspaces"], conf["preset"], conf["allow_presets"])
    tracing = None
    if conf["otlp"]:
        from ..server.telemetry import otlp_tracing

        tracing = otlp_tracing(conf["otlp"], runtime.token_counter)

    async def closing() -> None:
        await runtime.close()
        if tracing is not None:
            tracing.shutdown()

    return create_app(
        runtime,
        tokens=conf["tokens"],
        open_tokens=conf["open_tokens"],
        allowed_hosts=conf["allowed_hosts"],
        shutdown_grace=_GRACE,
        observer=tracing.observer if tracing is not None else None,
        on_shutdown=closing,
        workspaces=conf["workspaces"],
        models=model_resolver(inv),
        idle_interval=conf["idle_interval"],
        inspect_workers=conf["inspect_workers"],
        allow_presets=conf["allow_presets"],
    )


async def _serve_workers(inv: Invocation, uvicorn: Any) -> int:
    """``--workers N``: uvicorn's supervisor runs N processes, each serving ``worker_app``."""
    from ..server.auth import Tokens
    from ..server.limits import MAX_CONNECTIONS

    args = inv.args
    store = inv.store("create")
    try:
        await _check_store(store)  # the database exists before N processes open it at once
    finally:
        await store.close()
    _listen(args.host, args.port).close()  # refused here, clearly, not in N processes
    run_token = _run_token(inv)
    os.environ[_WORKER_ENV] = json.dumps(
        {
            "db": inv.location,
            "model": args.model,
            "tokens": list(Tokens.of(args.token).hashes),
            "open_tokens": list(Tokens.of([run_token] if run_token else []).hashes),
            "allowed_hosts": _allowed_hosts(args),
            "otlp": args.otlp_endpoint,
            "workspaces": args.workspaces,
            "preset": args.preset,
            "allow_presets": args.allow_preset,
            "log_level": args.log_level,
            "db_connections": args.db_connections,
            "idle_interval": args.idle_interval,
            "inspect_workers": args.inspect_workers,
        }
    )
    _announce(inv, run_token, f"with {args.workers} workers")
    uvicorn.run(
        "agentsession.cli.serve:worker_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        http="agentsession.server.limits:HeadDeadlineProtocol",
        limit_concurrency=MAX_CONNECTIONS,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=_GRACE,
    )
    return 0


async def serve(inv: Invocation) -> int:
    """Run the server until interrupted (SIGINT/SIGTERM: turns finish or are cancelled)."""
    args = inv.args
    args.token = given_tokens(args.token, args.token_file)
    _check_bind(args.host, args.token, args.no_auth)
    if args.workers < 1:
        raise UsageError(f"--workers must be 1 or more, got {args.workers}")
    if args.idle_interval is not None and not args.idle_interval > 0:
        raise UsageError(f"--idle-interval must be a positive number, got {args.idle_interval}")
    if args.inspect_workers < 0:
        raise UsageError(f"--inspect-workers must be 0 or more, got {args.inspect_workers}")
    args.workspaces = _workspaces(args.workspaces)
    _logging(args.log_level)
    try:
        import uvicorn

        from ..server import create_app
        from ..server.db_budget import pool_size_for
        from ..server.limits import MAX_CONNECTIONS, HeadDeadlineProtocol
    except ImportError as exc:
        raise UsageError(
            f"the server needs the 'server' extra (pip install 'agentsession[server]'): {exc}"
        ) from None
    pool_size = pool_size_for(args.db_connections)
    if args.workers > 1:
        return await _serve_workers(inv, uvicorn)
    store = inv.store("create", pool_size=pool_size)
    runtime = server_runtime(inv, store, args.workspaces, args.preset, args.allow_preset)
    tracing = None
    listening: socket.socket | None = None
    try:
        await _check_store(store)
        listening = _listen(args.host, args.port)
        # Connections wait in the queue from here on, so none is refused once the URL is out.
        listening.listen(_BACKLOG)
        args.port = listening.getsockname()[1]  # --port 0: the one the system chose
        run_token = _run_token(inv)
        if args.otlp_endpoint:
            from ..server.telemetry import otlp_tracing

            tracing = otlp_tracing(args.otlp_endpoint, runtime.token_counter)
        app = create_app(
            runtime,
            tokens=args.token,
            open_tokens=[run_token] if run_token else [],
            allowed_hosts=_allowed_hosts(args),
            shutdown_grace=_GRACE,
            observer=tracing.observer if tracing is not None else None,
            workspaces=args.workspaces,
            models=model_resolver(inv),
            idle_interval=args.idle_interval,
            inspect_workers=args.inspect_workers,
            allow_presets=args.allow_preset,
        )
        # Open event streams never end by themselves: after the grace period uvicorn closes
        # them, and running turns get the same time to finish before they are cancelled.
        config = uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            http=HeadDeadlineProtocol,
            limit_concurrency=MAX_CONNECTIONS,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=_GRACE,
        )
        server = _graceful(uvicorn, config, app)
        # Only a server that listens prints the URL to open (with its token).
        _announce(inv, run_token, "(Ctrl-C stops)")
        await server.serve(sockets=[listening])
    finally:
        if listening is not None:
            listening.close()
        await runtime.close()
        if tracing is not None:
            tracing.shutdown()
    return 0
