"""What one session is made of beyond its log: its gate, its tools and its System Context sources.

The runtime's parts (``SessionDeps``) are shared by every session; the parts here belong to one
session and are rebuilt from its log when it is opened: the permission gate (preset, approvals),
the instruction files found for its project folder (nested ones restored from
``instructions_found`` entries), and the toolbox that runs its calls. ``components()`` is the
ordered System Context of one boundary: the runtime's built-ins, then ``core.permissions``, the
instruction files, the session parts' components, then plugin components by key. A source that
is also a ``PromptSource`` (skills) hears when a user prompt starts and may promote entries with
it (an explicit skill selection); that is also the only moment such a source re-reads its files.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast, runtime_checkable

from .._memo import conforms
from ..context.component import ContextComponent
from ..errors import UsageError
from ..instructions import InstructionService
from ..log import InstructionsFound, LogEntry, RuntimeContextSnapshot, UserEntry, now
from ..request import ContentPart, ToolCall
from ..sources import ContextSource, SourceFactory
from ..tools.command import run_command
from ..tools.context import ToolContext
from ..tools.sandbox import resolve_sandbox
from .deferred import DeferredTools
from .deps import SessionDeps
from .gate import PermissionGate
from .inbox import Inbox
from .toolbox import CallObserver, Toolbox

__all__ = [
    "ContextSource",
    "InstructionTracker",
    "Preparing",
    "PromptSource",
    "SessionParts",
    "SourceFactory",
    "build_parts",
]


class InstructionTracker:
    """The session's instruction files; nested ones join when a tool reads below them."""

    def __init__(self, service: InstructionService) -> None:
        self.service = service

    def observe(self, call: ToolCall, context: ToolContext | None) -> list[LogEntry]:
        """An ``instructions_found`` entry for the files the call's reads discovered."""
        if context is None:  # the call had no context to report reads with
            return []
        found: list[str] = []
        for path in context.reads:
            found.extend(self.service.note_read(path))
        if not found:
            return []
        return [InstructionsFound(tuple(found), call.id, now())]


@dataclass
class SessionParts:
    """One session's gate, toolbox and context sources."""

    deps: SessionDeps
    gate: PermissionGate
    toolbox: Toolbox
    instructions: InstructionTracker
    sources: Sequence[ContextSource] = field(default_factory=tuple)
    inbox: Inbox = field(default_factory=Inbox)

    removals: dict[str, str] = field(default_factory=dict)

    async def prepare(self) -> None:
        """Let every source that needs it get ready (connect its servers).

        A retry or resume may run before any boundary has sampled a source (a session reopened
        in a new process).
        """
        for source in self.sources:
            if conforms(source, Preparing):
                await cast(Preparing, source).prepare()

    def components(self) -> list[ContextComponent]:
        """The System Context of the next boundary, in rendering order."""
        registry = self.deps.registry
        parts: list[ContextComponent] = [self.gate.component()]
        parts.extend(self.instructions.service.components())
        for source in self.sources:
            parts.extend(source.components())
        listed = [*registry.builtins(), *parts, *registry.plugins()]
        # A component that leaves is announced with its own removal text, so remember each.
        self.removals.update((c.key, c.removal_text()) for c in listed)
        return listed

    async def start_prompt(
        self, user: UserEntry, skills: Sequence[str], user_turn: int
    ) -> list[LogEntry]:
        """Tell the prompt sources that ``user`` starts a prompt; the entries to promote with it.

        ``user_turn`` counts the durable user messages before it (its ordinal). ``UsageError``
        (nothing changed, nothing stored) when a named skill is unknown.
        """
        takers = [cast(PromptSource, s) for s in self.sources if conforms(s, PromptSource)]
        if skills and not takers:
            raise UsageError(f"unknown skill {skills[0]!r}; this runtime has no skills")
        entries: list[LogEntry] = []
        for source in takers:
            entries.extend(await source.start_prompt(user.content, skills, user_turn))
        return entries

    @contextlib.asynccontextmanager
    async def preview_prompt(
        self, user: UserEntry, skills: Sequence[str], user_turn: int
    ) -> AsyncIterator[list[LogEntry]]:
        """What ``start_prompt`` would promote; inside, the sources show what it would find.

        Nothing changes: a preview sees the prompt's own skill set (catalog, tools) and
        selection, so that it equals what ``prompt()`` sends; a running turn sees its own.
        """
        takers = [s for s in self.sources if isinstance(s, PromptSource)]
        if skills and not takers:
            raise UsageError(f"unknown skill {skills[0]!r}; this runtime has no skills")
        entries: list[LogEntry] = []
        with contextlib.ExitStack() as scopes:
            for source in takers:
                found, scope = await source.preview_prompt(user.content, skills, user_turn)
                entries.extend(found)
                scopes.enter_context(scope)
            yield entries

    def runtime_contexts(self, turns: int, *, pending: bool) -> list[RuntimeContextSnapshot]:
        """Every prompt source's committed selections (and the running prompt's, ``pending``).

        ``turns`` counts the durable user messages.
        """
        return [
            snapshot
            for source in self.sources
            if isinstance(source, PromptSource)
            for snapshot in source.runtime_contexts(turns, pending=pending)
        ]


@runtime_checkable
class PromptSource(Protocol):
    """A context source that takes part in each user prompt (explicit skill selection)."""

    async def start_prompt(
        self, content: str | tuple[ContentPart, ...], skills: Sequence[str], user_turn: int
    ) -> list[LogEntry]:
        """A prompt with ``content`` starts as user turn ``user_turn`` (zero-based).

        ``skills`` are the names the caller selected. Returns entries to promote right after
        the user entry, in the same admission; raises ``UsageError`` before changing anything.
        """
        ...

    async def preview_prompt(
        self, content: str | tuple[ContentPart, ...], skills: Sequence[str], user_turn: int
    ) -> tuple[list[LogEntry], contextlib.AbstractContextManager[None]]:
        """What ``start_prompt`` would return, changing nothing, and a scope showing its finds.

        Inside the scope, only the task that entered it sees what that prompt would find.
        """
        ...

    def runtime_contexts(self, user_turns: int, *, pending: bool) -> list[RuntimeContextSnapshot]:
        """Selections committed while ``user_turns`` user messages are durable.

        ``pending`` adds the running prompt's selection that is not committed yet.
        """
        ...


@runtime_checkable
class Preparing(Protocol):
    """A source that must get ready before a stored step is continued (e.g. connect a server)."""

    async def prepare(self) -> None:
        """Get ready for the next operation (never raises for a source that is down)."""
        ...


def build_parts(
    deps: SessionDeps,
    session_id: str,
    project_dir: Path,
    state: Iterable[LogEntry],
    factories: Sequence[SourceFactory] = (),
    observers: Sequence[CallObserver] = (),
) -> SessionParts:
    """The parts of one session, with their state restored from ``state`` (oldest first).

    ``factories`` build the session's context sources (skills, MCP servers), in order.
    """
    entries = list(state)
    sources = [factory(deps, session_id, entries) for factory in factories]
    # Only the built-in run_command runs in the sandbox: without it there is nothing to probe
    # (a process start) and nothing to tell the model about commands.
    commands = any(tool is run_command for tool in deps.tools)
    sandbox = resolve_sandbox(deps.config.sandbox) if commands else "none"
    gate = PermissionGate(
        deps.presets, deps.config.permission_preset, project_dir, sandbox=sandbox, commands=commands
    )
    gate.restore(entries)
    nested = [p for e in entries if isinstance(e, InstructionsFound) for p in e.paths]
    service = InstructionService(project_dir, config=deps.config, nested=nested)
    tracker = InstructionTracker(service)
    toolbox = Toolbox(
        deps.tools,
        gate=gate,
        project_dir=project_dir,
        session_id=session_id,
        config=deps.config,
        sources=sources,
        observers=(tracker, *observers),
        sandbox=sandbox,
        deferred=DeferredTools(deps.config, entries),
    )
    return SessionParts(deps, gate, toolbox, tracker, sources, Inbox(entries))
