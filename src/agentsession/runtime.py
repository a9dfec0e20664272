"""Runtime: the wiring of one application — store, model, tools, components, config, clock.

A runtime is shared by all sessions it creates or opens. It owns the component registry (built-in
``core.date`` and ``core.environment`` first, plugin components after them by key), the tools,
the token budget and the titler, and hands them to each session as one ``SessionDeps`` value; a
session never sees the runtime itself. Sessions sample the registry at each safe boundary, so
registering a component affects the next request of every session.
"""

from __future__ import annotations

import functools
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from os import PathLike
from pathlib import Path
from types import TracebackType

from ._wiring import (
    SupportsAclose,
    _another,
    _checked_tools,
    _counter_for,
    close_clients,
    import_file,
    prepared_if_idle,
    read_stored,
)
from .budget import BudgetPolicy, TokenCounter
from .config import Config
from .context.builtins import (
    AgentInstructions,
    agent_component,
    date_component,
    environment_component,
)
from .context.component import ContextComponent
from .context.registry import ComponentHandle, ComponentRegistry, PluginScope
from .engine.deps import SessionDeps
from .engine.leases import delete_undriven
from .engine.parts import build_parts
from .engine.recovery import closing_entries
from .engine.skill_source import skill_source_factory
from .engine.titles import Titler
from .engine.writer import LogWriter
from .errors import StoreError, UsageError
from .ledger.idle import IdleOutcome
from .log import ModelSwitched, Record, now
from .mcp import MCPServer, MCPServers, merge_servers, project_servers
from .permissions import preset_table
from .projection import transcript_from
from .providers.base import Model
from .session import Opened, Session
from .skills import Skill, SkillDiagnostic, SkillSet
from .skills.library import SkillLibrary
from .sources import SourceFactory
from .store.base import SessionInfo, Store
from .store.search import SearchHit, search_store
from .sync import run_sync
from .tools import Tool
from .tools.sandbox import resolve_sandbox
from .trust import ProjectConfig, check_project_config

__all__ = ["Runtime", "SupportsAclose"]


class Runtime:
    """Creates and opens sessions; shared by every session it hands out.

    Args:
        store: Where sessions live (default: an ``SQLiteStore`` in the user data directory).
        model: The model new and opened sessions talk to (``get_model()`` gives one).
        project_dir: The folder tools are confined to, with its instruction files (default: cwd).
        tools: Tools every session offers (``@tool`` functions, ``builtin_tools()``).
        components: Context components every session's System Context holds.
        config: Windows, budgets, presets, limits (default: ``Config()``).
        clock: The time source of timestamps and ``core.date`` (default: local time).
        title_model: The model that names sessions (default: ``model``).
        summarizer: The model that writes compaction summaries (default: the session's).
        token_counter: Counts tokens for the budget (default: one that fits ``model``).
        instructions: The application's instructions (``core.agent``): text, or a callable.
        skills_dirs: Folders holding skill folders (each with a ``SKILL.md``).
        skills: Skills written in Python.
        mcp_servers: MCP servers whose tools and resources sessions get.
        context_sources: Factories, each building one session's own ``ContextSource`` (tools,
            components, a narrowing of the callable tools) when it is created or opened.
        project_config: ``"trusted"`` lets the project's ``.mcp.json`` act; ``"ignore"`` not.

    Raises:
        UsageError: An argument is invalid (``sandbox="bwrap"`` where bubblewrap cannot run, …).
        StoreError: The default store cannot be opened.
    """

    def __init__(
        self,
        *,
        store: Store | None = None,
        model: Model | None = None,
        project_dir: str | PathLike[str] | None = None,
        tools: Iterable[Tool] = (),
        components: Iterable[ContextComponent] = (),
        config: Config | None = None,
        clock: Callable[[], datetime] | None = None,
        title_model: Model | None = None,
        summarizer: Model | None = None,
        token_counter: TokenCounter | None = None,
        instructions: AgentInstructions | None = None,
        skills_dirs: Iterable[str | PathLike[str]] = (),
        skills: Iterable[Skill] = (),
        mcp_servers: Iterable[MCPServer] = (),
        context_sources: Iterable[SourceFactory] = (),
        project_config: ProjectConfig = "ignore",
    ) -> None:
        self.project_dir = Path(project_dir or Path.cwd()).resolve()
        # A folder's own files act only when the application says the project is trusted: a
        # library never starts what a cloned repository or a model's write declares.
        self.project_config = check_project_config(project_config)
        # Config(sandbox="bwrap") where bubblewrap cannot work is refused before anything opens;
        # "auto" is probed only when a session that can run commands is built.
        if config is not None and config.sandbox == "bwrap":
            resolve_sandbox(config.sandbox)
        # MCP servers: the given ones, then a trusted project's .mcp.json (started at first
        # use). Read before anything is opened, so a malformed file leaves nothing behind.
        given = list(mcp_servers)
        read_project = project_config == "trusted" and (config is None or config.load_project_mcp)
        servers = merge_servers(given, project_servers(self.project_dir) if read_project else [])
        # Without the SDK, servers the application declared are an error; a project's are left out.
        self._mcp = MCPServers(servers, required=any(not s.from_project for s in given))
        if store is None:
            from .store.sqlite import SQLiteStore

            store = SQLiteStore()
        self.store: Store = store
        self._model = model
        self._title_model = title_model
        self.config = config or Config()
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now().astimezone())
        self.tools: tuple[Tool, ...] = _checked_tools(tools)
        builtins = [date_component(self.clock, self.config.timezone)]
        if instructions is not None:
            builtins.insert(0, agent_component(instructions))
        if self.config.environment:
            builtins.append(environment_component(self.project_dir, self.config.environment))
        self.registry = ComponentRegistry(builtins)
        for component in components:
            self.registry.register(component)
        counter = token_counter or _counter_for(model)
        self._deps = SessionDeps(
            store=store,
            config=self.config,
            tools=self.tools,
            registry=self.registry,
            budget=BudgetPolicy.from_config(counter, self.config),
            titler=Titler(title_model, model),
            summarizer=summarizer,
            presets=preset_table(self.config),
            clock=self.clock,
        )
        # Each feature that gives sessions tools or context of their own adds one factory.
        self._sources: list[SourceFactory] = []
        self._sessions: weakref.WeakSet[Session] = weakref.WeakSet()
        if isinstance(skills, Skill):
            raise UsageError("skills must be a list of agentsession Skill values")
        self._skills = SkillLibrary(skills_dirs, self.project_dir, skills=tuple(skills))
        self._sources.append(skill_source_factory(self._skills))
        if self._mcp:
            self._sources.append(self._mcp.source)
        self._sources.extend(context_sources)

    # -- wiring -------------------------------------------------------------------------------

    @property
    def model(self) -> Model:
        """The default model of new and opened sessions.

        Raises:
            UsageError: The runtime was made without a model.
        """
        if self._model is None:
            raise UsageError("this Runtime has no model: pass model=ags.get_model(...) or similar")
        return self._model

    @property
    def token_counter(self) -> TokenCounter:
        """The counter every preflight of this runtime measures with."""
        return self._deps.budget.counter

    def tool_named(self, name: str) -> Tool | None:
        """The registered tool called ``name``, if any.

        Args:
            name: The tool's name.
        """
        return self._deps.tool_named(name)

    def skill_set(self) -> SkillSet:
        """The skills sessions can use, read from disk now, with every diagnostic found."""
        return self._skills.discover()

    def skill_diagnostics(self) -> tuple[SkillDiagnostic, ...]:
        """Why skills were skipped or what is odd about them (never raised in a session)."""
        return self.skill_set().diagnostics

    def register_component(self, component: ContextComponent) -> ComponentHandle:
        """Add a plugin component; the next safe boundary of each session announces it once.

        Args:
            component: The component; its key must be new and not start with ``core.``.

        Raises:
            UsageError: The key is a duplicate or reserved.
        """
        return self.registry.register(component)

    def plugin(self, name: str) -> PluginScope:
        """A replayable scope for one plugin's components (``scope.replay([...])`` on reload).

        Args:
            name: The plugin's name; its components' keys start with ``plugin.<name>.``.

        Raises:
            UsageError: The name is not a valid plugin name.
        """
        return self.registry.scope(name)

    # -- sessions -----------------------------------------------------------------------------

    async def create_session(self, *, project_dir: str | PathLike[str] | None = None) -> Session:
        """A new, empty session in the store.

        Args:
            project_dir: The folder of this session alone (its tools, instruction files and
                permissions are confined to it; it is recorded in the session's row) instead
                of the runtime's — a server gives each session a workspace this way.
        """
        folder = self._folder(project_dir)
        stamp = now()
        info = SessionInfo(
            id=uuid.uuid4().hex,
            created_at=stamp,
            updated_at=stamp,
            project_dir=str(folder),
        )
        model = self.model
        await self.store.create_session(info)
        writer = LogWriter(self.store, info.id, 0, [], [])
        parts = build_parts(self._deps, info.id, folder, (), self._sources)
        opener = self._opener(project_dir)
        return self._track(Session(Opened(self._deps, info, model, writer, parts, opener=opener)))

    def _folder(self, project_dir: str | PathLike[str] | None) -> Path:
        return Path(project_dir).resolve() if project_dir is not None else self.project_dir

    def _opener(
        self, project_dir: str | PathLike[str] | None
    ) -> Callable[[str], Awaitable[Session]]:
        """How a session reopens itself (a fork, a refresh): in the same folder."""
        if project_dir is None:
            return self.open_session
        return functools.partial(self.open_session, project_dir=project_dir)

    async def open_session(
        self,
        session_id: str,
        *,
        model: Model | None = None,
        project_dir: str | PathLike[str] | None = None,
    ) -> Session:
        """A stored session (``SessionNotFoundError`` when there is none), in any process.

        The session talks to ``model``, else to the runtime's model. When that differs from the
        model the log names last, the next request records the switch (a ``model_switched``
        entry) and starts a new epoch for it, so the log always names the model requests go to.
        ``project_dir`` as for ``create_session``.

        Args:
            session_id: The session's id, as ``create_session`` or ``list_sessions`` gave it.
            model: The model this session talks to; ``None`` takes the runtime's model.
            project_dir: The folder the session works in; ``None`` takes the runtime's.

        Raises:
            SessionNotFoundError: The store has no such session.
            CorruptEntryError: A stored entry the session needs does not decode.
        """
        folder = self._folder(project_dir)
        found = await read_stored(self.store, session_id)
        info, writer, (named, provider) = found.info, found.writer, found.named
        parts = build_parts(self._deps, info.id, folder, found.state, self._sources)
        if found.idle:
            # A step a dead process left unfinished is recorded at the next write (opening
            # never writes); meanwhile the transcript already shows its calls as interrupted.
            closing = closing_entries(found.tail or [], now(), "process")
            writer.show_provisional(transcript_from(Record(-1, e) for e in closing))
        chosen = model or self._model
        switch = None
        if chosen is not None and named and _another(chosen, named, provider):
            # Recorded with the next admission, not now: opening a session to read it never
            # writes. The next request starts a new epoch for the chosen model either way.
            switch = ModelSwitched(chosen.name, named, now(), chosen.profile.provider, provider)
        opener = self._opener(project_dir)
        session = Session(Opened(self._deps, info, chosen, writer, parts, switch, opener=opener))
        return self._track(session)

    def _track(self, session: Session) -> Session:
        self._sessions.add(session)
        return session

    async def delete_session(self, session_id: str) -> None:
        """Delete a session, its whole log and its lease (``SessionNotFoundError`` if unknown).

        ``ConflictError`` while another live process drives it.

        Args:
            session_id: The session's id.

        Raises:
            SessionNotFoundError: The store has no such session.
            ConflictError: Another live process drives it.
        """
        await delete_undriven(self.store, session_id, self.config.lease_ttl)

    async def import_session(
        self, path: str | PathLike[str], *, new_id: str | None = None
    ) -> Session:
        """Import a JSON Lines session file (all or nothing) and open the session.

        The file is data, not authority: the session starts at this runtime's default preset
        and without the approvals the file remembers (both recorded in its log), its id must be
        one this package could have created and its title is cleaned (``imports``). A line over
        ``Config.max_import_line_bytes`` or nested too deep is refused naming it.

        Args:
            path: The session file to read.
            new_id: Import under this id instead of the file's (``None``: keep the file's id).

        Raises:
            SessionFileError: A line is corrupt, too long or from a newer version (nothing is
                imported).
            ConflictError: A session with the id exists.
        """
        return await self.open_session(await import_file(self.store, path, new_id, self.config))

    async def tend_idle(self, sessions: Iterable[Session] | None = None) -> dict[str, IdleOutcome]:
        """One idle decision for each session this runtime handed out, by the runtime's clock.

        With ``Config(idle_policy="auto")``, a session whose cache expires before its likely next
        request is kept warm, compacted or let expire, whichever the prices make cheapest
        (``ledger.idle``), each call a billed side call with its reason; never one running,
        waiting on approvals or leased elsewhere, nor (unless named in ``sessions``) one the
        application closed and has not used since. Call it every tenth of the cache lifetime.
        A prompt that arrives while it makes a call for that session waits for the call, then
        runs; it is never refused for this pass.

        Args:
            sessions: Only these (``None``: every session this runtime handed out).

        Returns:
            Per session id: what was done (``IdleOutcome.action``: ``"kept_warm"``,
            ``"compacted"``, ``"let_expire"`` or ``"nothing"``) and why.
        """
        chosen = list(self._sessions if sessions is None else sessions)
        if self.config.idle_policy == "off":
            return {s.id: IdleOutcome(s.id, "nothing", "idle_policy is off") for s in chosen}
        # A session the application closed (its lease given up) is tended only when named: a
        # billed call for a session it let go would be a surprise.
        skip = sessions is None
        return {s.id: await s._tend_idle(skip_closed=skip) for s in chosen}

    async def prepare_compactions(self) -> dict[str, bool]:
        """``prepare_compaction()`` for each session handed out (busy ones: ``False``)."""
        return {s.id: await prepared_if_idle(s) for s in list(self._sessions)}

    async def list_sessions(self) -> list[SessionInfo]:
        """Every stored session, most recently updated first."""
        return await self.store.list_sessions()

    async def search(
        self, text: str, *, limit: int = 20, session: str | None = None
    ) -> list[SearchHit]:
        """Messages of every session (or of ``session``) holding all words of ``text``.

        Newest first; each ``SearchHit`` has ``session_id``, ``seq``, ``role`` (``"user"``,
        ``"assistant"``, ``"tool"``) and a ``snippet`` with the words marked ``[…]``.

        Args:
            text: The words to find (all of them, in any order).
            limit: At most this many hits.
            session: Search only this session's messages.
        """
        return await search_store(self.store, text, limit=limit, session=session)

    def create_session_sync(self) -> Session:
        """``create_session()`` for plain scripts."""
        return run_sync(self.create_session())

    def open_session_sync(self, session_id: str) -> Session:
        """``open_session()`` for plain scripts.

        Args:
            session_id: The session's id.
        """
        return run_sync(self.open_session(session_id))

    async def close(self) -> None:
        """Release leases, stop MCP servers, close the store and the models' SDK clients.

        Each session first writes what refused commits kept; entries a store still refuses
        are reported with ``StoreError`` once everything is closed, never dropped silently.

        The leases are those of the sessions this runtime handed out; the models are the
        runtime's own (model, titles, summaries): a model opened again later makes a new client;
        a session's own ``switch_model`` models belong to the caller.

        Raises:
            StoreError: A store still refused entries the sessions kept (after everything closed).
        """
        lost: list[str] = []
        try:
            for session in list(self._sessions):
                if count := await session.close():
                    lost.append(f"{count} of session {session.id}")
            await self._mcp.close()
        finally:
            try:
                await self.store.close()
            finally:
                await close_clients((self._model, self._title_model, self._deps.summarizer))
        if lost:
            # Never silently: a lost tool result belongs to a call that ran.
            raise StoreError(
                f"closed without writing {', '.join(lost)} entries the store refused: they are"
                " lost (a tool call they answer did run; its result is gone)"
            )

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def close_sync(self) -> None:
        """``close()`` for plain scripts."""
        run_sync(self.close())
