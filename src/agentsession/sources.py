"""Session parts an application may write: tool sources and context sources, and their factories.

A ``ToolSource`` offers tools of its own and runs them (loaded skills, MCP servers); a
``ContextSource`` also contributes System Context components; a ``SourceFactory`` builds one
session's source from the runtime's parts (``Runtime(context_sources=[...])``). A call that ran
gives a ``Ran``: its outcome and the entries it changed, committed with the result. The
session's engine (``engine/``) holds and runs them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from ._frozen import frozen
from .config import Config
from .context.component import ContextComponent
from .log import LogEntry
from .request import ToolCall, ToolSpec
from .tools import Tool, ToolOutcome
from .tools.context import ToolContext

if TYPE_CHECKING:
    from .engine.deps import SessionDeps

__all__ = ["ContextSource", "Ran", "SourceFactory", "ToolSource"]


@frozen
class Ran:
    """A call that produced a result, and what it changed (committed with the result)."""

    outcome: ToolOutcome
    entries: tuple[LogEntry, ...] = ()
    kind: Literal["ran"] = "ran"


class ToolSource(Protocol):
    """A session part that offers tools of its own and runs them (loaded skills, MCP servers)."""

    def offered(self) -> Sequence[Tool]:
        """The tools on offer right now, in order."""
        ...

    def known(self) -> Sequence[ToolSpec]:
        """Every declaration this source can still give (tools that left included)."""
        ...

    def allowed_tools(self) -> Collection[str] | None:
        """A narrowing of what may be called (a skill's ``allowed-tools``), or ``None``."""
        ...

    async def run(self, tool: Tool, call: ToolCall, context: ToolContext, config: Config) -> Ran:
        """Run one call of a tool this source offered.

        Args:
            tool: The tool, one of ``offered()``.
            call: The model's call of it.
            context: Where the call runs (project folder, session, sandbox).
            config: The runtime's configuration (timeouts, result bounds).
        """
        ...


class ContextSource(ToolSource, Protocol):
    """A session part that also contributes context components (skills, MCP resources)."""

    def components(self) -> Sequence[ContextComponent]:
        """Its components for the next boundary, in order."""
        ...


class SourceFactory(Protocol):
    """Builds one session's context source from the runtime's parts and the session's state."""

    def __call__(
        self, deps: SessionDeps, session_id: str, state: Sequence[LogEntry]
    ) -> ContextSource:
        """The source for session ``session_id``; ``state`` are its state entries, oldest first."""
        ...
