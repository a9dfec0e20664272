"""The tools of one session: what a request offers, and how one tool call runs.

A request offers the application's tools as declared, then the tools of the session's parts
(``ToolSource``: loaded skills in load order, MCP servers), each name once. A call runs only when
the request it answers offered its tool; anything else is refused with ``Unknown tool: <name>``,
never forwarded or mapped to another tool. Before it runs, the session's ``PermissionGate``
decides on the tool's declared effect and paths (never on prompt text, and a skill's
``allowed-tools`` only narrows): a denied call gets a result naming the preset, a call the preset
asks about pauses the turn with an ``ApprovalRequested`` entry. An allowed call runs with a
``ToolContext`` and the config's limits; observers (nested instruction discovery) turn what it
read into log entries, committed together with its result. A source that is a ``FolderSource``
(loaded skills) names folders outside the project its calls may read; the ``ToolContext`` also
says whether ``run_command`` runs in the sandbox, which mirrors the preset (``sandbox``).
Deferred tools (``engine.deferred``) are offered only once ``search_tools`` loaded them; that
proxy is answered here, before the gate, since it only changes which tools are offered. Where
loaded tools are called through ``call_tool`` (the request offered it), that call is unwrapped
to the inner tool's own call first, which then goes through the gate like a direct call.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Literal, Protocol, TypeAlias, cast, runtime_checkable

from .._frozen import frozen
from .._memo import conforms
from ..config import Config
from ..log import ApprovalRequested, LogEntry, now
from ..permissions import unsandboxed
from ..providers.base import ModelProfile
from ..request import ToolCall, ToolSpec
from ..sources import Ran, ToolSource
from ..tools import Tool, ToolOutcome, validate_arguments
from ..tools.context import ToolContext
from ..tools.sandbox import SandboxMode
from .deferred import CALL_TOOL, CALL_TOOLS, SEARCH_TOOL, SEARCH_TOOLS, DeferredTools, proxied
from .gate import PermissionGate

__all__ = ["CallObserver", "CallResult", "FolderSource", "Paused", "Toolbox"]


@frozen
class Paused:
    """A call that waits for the user's approval; nothing ran.

    ``call`` is the call the gate asked about: the inner tool's for a ``call_tool`` call.
    """

    request: ApprovalRequested
    call: ToolCall | None = None
    kind: Literal["paused"] = "paused"


CallResult: TypeAlias = Ran | Paused


@runtime_checkable
class FolderSource(Protocol):
    """A session part whose calls may read folders outside the project (a loaded skill's own)."""

    def readable_folders(self) -> Sequence[Path]:
        """The folders readable now (read only), resolved."""
        ...


class CallObserver(Protocol):
    """A session part that learns from what every call did (e.g. the paths it read)."""

    def observe(self, call: ToolCall, context: ToolContext | None) -> list[LogEntry]:
        """Log entries to commit with the call's result.

        ``context`` is ``None`` when the call was handed no context (a tool without a
        ``ToolContext`` parameter, run by the toolbox itself): it reported nothing.
        """
        ...


class Toolbox:
    """The session's tools and the pipeline every call goes through."""

    def __init__(
        self,
        tools: Sequence[Tool],
        *,
        gate: PermissionGate,
        project_dir: Path,
        session_id: str,
        config: Config,
        sources: Sequence[ToolSource] = (),
        observers: Sequence[CallObserver] = (),
        sandbox: SandboxMode = "none",
        deferred: DeferredTools | None = None,
    ) -> None:
        self._tools = tuple(tools)
        self._gate = gate
        self._project_dir = project_dir
        self._session_id = session_id
        self._config = config
        self._sources = tuple(sources)
        self._observers = tuple(observers)
        self._sandbox: SandboxMode = sandbox
        self._deferred = deferred
        # The application's tools never change: their owners are mapped once.
        self._own: dict[str, tuple[Tool, ToolSource | None]] = {t.name: (t, None) for t in tools}

    def offered(self, profile: ModelProfile | None = None) -> list[Tool]:
        """Every tool on offer to a model of ``profile``: the application's, then each source's.

        Names are unique. Deferred tools are left out until found: ``search_tools`` stands in
        for them, followed by the loaded ones, or by ``call_tool`` where the profile is
        ``proxied`` (``DeferredTools.arrange``).
        """
        tools = self._every()
        if self._deferred is None:
            return tools
        return self._deferred.arrange(tools, proxy=profile is not None and proxied(profile))

    def _every(self) -> list[Tool]:
        tools = list(self._tools)
        names = {t.name for t in tools}
        for source in self._sources:
            for tool in source.offered():
                if tool.name not in names:
                    names.add(tool.name)
                    tools.append(tool)
        return tools

    def specs(self) -> dict[str, ToolSpec]:
        """Every declaration the session knows, for rebuilding an epoch's tool list."""
        specs: dict[str, ToolSpec] = {}
        for source in self._sources:
            specs.update({s.name: s for s in source.known()})
        specs.update({t.name: t.spec for t in self._tools})
        if self._deferred is not None:
            specs.setdefault(SEARCH_TOOLS, SEARCH_TOOL.spec)
            specs.setdefault(CALL_TOOLS, CALL_TOOL.spec)
        return specs

    async def run(self, call: ToolCall, offered: Collection[str]) -> CallResult:
        """Run ``call`` if the request offered its tool and the gate lets it through."""
        owners = self._owners()
        found = owners.get(call.name)
        deferred = self._deferred
        if deferred is not None and found is None and call.name == SEARCH_TOOLS in offered:
            # It only loads tools: nothing to check.
            return deferred.search(call, self._every(), declare=CALL_TOOLS in offered)
        if deferred is not None and found is None and call.name == CALL_TOOLS in offered:
            inner = deferred.resolve(call, self._every())
            if isinstance(inner, Ran):
                return inner
            call, found = inner, owners.get(inner.name)  # from here on exactly a direct call
            if found is None:  # its server stopped offering it since: as for any unknown name
                return Ran(ToolOutcome(f"Unknown tool: {call.name}", True))
        elif found is None or call.name not in offered:
            return Ran(ToolOutcome(f"Unknown tool: {call.name}", True))
        tool, source = found
        problem = validate_arguments(tool.parameters, call.arguments) if source is None else None
        if problem is not None:
            # Before the gate: a path argument of the wrong type is no location to deny or ask
            # about, and a call that cannot run is never put to the user for approval.
            return Ran(ToolOutcome(f"Invalid arguments for tool {tool.name}: {problem}", True))
        readable = self._readable()
        decision = self._gate.decide(
            tool, dict(call.arguments), call.id, allowed_tools=self._narrowing(), readable=readable
        )
        if decision.kind == "deny":
            return Ran(ToolOutcome(decision.reason, True))
        if decision.kind == "ask":
            return Paused(ApprovalRequested(call.id, call.name, decision.reason, now()), call)
        context: ToolContext | None = None
        if source is not None or tool.context_param is not None:
            # Built only for a call that gets it: resolving the project folder costs a few
            # system calls, and a tool without the parameter cannot report reads.
            preset = self._gate.preset
            free = unsandboxed(preset)
            context = ToolContext(
                self._project_dir,
                self._session_id,
                call.id,
                allow_outside=bool(decision.outside),
                readable=readable,
                approved_protected=frozenset(decision.protected),
                sandbox="none" if free else self._sandbox,
                network=free or preset.network == "allow",
                clean_environment=not free,
            )
        if source is None:
            outcome = await tool.invoke(dict(call.arguments), context=context, config=self._config)
            ran = Ran(outcome)
        else:
            assert context is not None
            ran = await source.run(tool, call, context, self._config)
        seen = [e for observer in self._observers for e in observer.observe(call, context)]
        return Ran(ran.outcome, (*ran.entries, *seen)) if seen else ran

    def _owners(self) -> Mapping[str, tuple[Tool, ToolSource | None]]:
        if not self._sources:
            return self._own
        owners = dict(self._own)
        for source in self._sources:
            for tool in source.offered():
                owners.setdefault(tool.name, (tool, source))
        return owners

    def _readable(self) -> tuple[Path, ...]:
        folders: list[Path] = []
        for source in self._sources:
            if conforms(source, FolderSource):
                readable = cast(FolderSource, source).readable_folders()
                folders.extend(f for f in readable if f not in folders)
        return tuple(folders)

    def _narrowing(self) -> Collection[str] | None:
        allowed: set[str] | None = None
        for source in self._sources:
            narrowed = source.allowed_tools()
            if narrowed is not None:
                allowed = set(narrowed) if allowed is None else allowed & set(narrowed)
        return allowed
