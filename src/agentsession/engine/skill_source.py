"""The skills of one session: catalog, explicit selection, ``load_skill``, loaded skills and tools.

A ``SkillSource`` is the session's context source for skills (``parts.ContextSource``). It holds
the skill set found at the last user prompt, so nothing a tool continuation does re-reads the
disk: the ``core.skills.catalog`` text and the ``load_skill`` enum change only when a prompt
starts (``start_prompt``), which also reads explicitly selected skills (``skills=[…]``,
``$name``) into one ``RuntimeContextSnapshot`` promoted right after the user entry. What a
prompt adopts (catalog text, ``load_skill``) and how a preview shows it is ``skill_adoption``.

Loaded skills follow the LRU of ``skills.LoadedSkills`` (at most ``Config.max_loaded_skills``).
Each is its own component ``core.skills.loaded.<name>`` — a load sends that skill's instructions
alone, an unload one line of removal text — and its tools join the request in load order (an
activation does not reorder them, so the tool list changes only at a load or an unload). A
``load_skill`` call returns the ``contextChanged`` digest and the ``SkillLoaded`` /
``SkillUnloaded`` / ``SkillActivated`` entries committed with its result. A skill's tools run
with its ``SkillContext`` bound: ephemeral state made fresh by each load and dropped on unload,
and the durable per-session store, whose writes are committed as ``SkillStoreWrite`` entries with
the call's result and replayed when the session is opened. ``allowed_tools`` narrows to the
active skill's ``allowed-tools`` (plus ``load_skill`` and the skill's own tools); it never
widens what the permission preset allows.

Everything is rebuilt from the session's state entries when it is opened: the loaded set and
its LRU order, each skill's store, and the committed selections.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from ..budget import default_counter
from ..config import Config
from ..context.component import ABSENT, UNAVAILABLE, ContextComponent, LoadResult, Rendered
from ..errors import UsageError
from ..hygiene import clean_text
from ..log import (
    LogEntry,
    RuntimeContextSnapshot,
    SkillActivated,
    SkillLoaded,
    SkillStoreWrite,
    SkillUnloaded,
    now,
)
from ..request import ContentPart, ToolCall, ToolSpec
from ..skills import (
    CATALOG_KEY,
    LOAD_SKILL,
    LoadedSkills,
    MemorySkillStore,
    Skill,
    SkillContext,
    SkillEvent,
    SkillSet,
    SkillText,
    StoreWrite,
    context_changed,
    render_skill_block,
    select_skills,
    selection_snapshot,
)
from ..skills.library import SkillLibrary
from ..sources import Ran, SourceFactory
from ..tools import Tool, ToolOutcome, validate_arguments
from ..tools.context import ToolContext
from .deps import SessionDeps
from .skill_adoption import Adopted, adoption, previewed, previewing

__all__ = ["LOADED_PREFIX", "SkillSource", "skill_source_factory"]

_log = logging.getLogger("agentsession.skills")

#: Loaded skill ``name`` is the component ``core.skills.loaded.<name>``.
LOADED_PREFIX = "core.skills.loaded."


def _removal(name: str) -> str:
    return (
        f"Skill {name} is unloaded: its instructions no longer apply and its tools are no longer"
        " available (its earlier results stay in the conversation)."
    )


class SkillSource:
    """One session's skills; built by ``skill_source_factory`` when the session is made."""

    def __init__(
        self, library: SkillLibrary, config: Config, state: Sequence[LogEntry] = ()
    ) -> None:
        self._library = library
        self._config = config
        self._counter = default_counter()  # never calibrated: the catalog stays deterministic
        self._adopted = Adopted(SkillSet())
        self._bare: SkillSet | None = None  # what discovery finds while no folder exists
        self._held: dict[str, Skill] = {}  # the skill each loaded skill was loaded from
        self._loaded: dict[str, SkillLoaded] = {}
        self._order: list[str] = []  # loaded skills in load order: the order of their tools
        self._contexts: dict[str, SkillContext] = {}
        self._stores: dict[str, MemorySkillStore] = {}
        self._components: dict[str, ContextComponent] = {}
        self._committed: list[RuntimeContextSnapshot] = []
        self._proposed: list[RuntimeContextSnapshot] = []
        self._catalog_component = ContextComponent(CATALOG_KEY, self._catalog_sample)
        self._lru = self._restore(state)
        self._adopt(library.discover())

    # -- state ----------------------------------------------------------------------------------

    def _restore(self, state: Sequence[LogEntry]) -> LoadedSkills:
        events: list[SkillEvent] = []
        writes: dict[str, list[StoreWrite]] = {}
        for entry in state:
            match entry:
                case SkillLoaded():
                    events.append(SkillEvent("loaded", entry.name))
                    self._loaded[entry.name] = entry
                    self._component(entry.name)
                case SkillUnloaded():
                    events.append(SkillEvent("unloaded", entry.name))
                    self._loaded.pop(entry.name, None)
                case SkillActivated():
                    events.append(SkillEvent("activated", entry.name))
                case SkillStoreWrite():
                    write = StoreWrite(entry.key, entry.value, entry.deleted)
                    writes.setdefault(entry.skill, []).append(write)
                case RuntimeContextSnapshot():
                    self._committed.append(entry)
                case _:
                    pass
        lru = LoadedSkills.replay(events, self._config.max_loaded_skills)
        for event in events:  # load order: an activation does not move a skill's tools
            if event.action != "activated" and event.name in self._order:
                self._order.remove(event.name)
            if event.action == "loaded":
                self._order.append(event.name)
        self._order = [name for name in self._order if name in lru]
        self._stores = {name: MemorySkillStore.from_writes(w) for name, w in writes.items()}
        return lru

    def _adopt(self, found: SkillSet) -> None:
        """Take ``found`` as the skill set until the next prompt: catalog and enum follow it."""
        self._adopted = self._adoption(found)

    def _adoption(self, found: SkillSet) -> Adopted:
        return adoption(found, self._config, self._counter, self._adopted)

    @property
    def _now(self) -> Adopted:
        """The adopted skill set, or the one a preview in this task found."""
        preview = previewed(self)
        return preview if preview is not None else self._adopted

    @property
    def available(self) -> SkillSet:
        """The skill set this session uses until the next prompt."""
        return self._now.skills

    @property
    def loaded(self) -> tuple[str, ...]:
        """The loaded skills, least recently read first (the last one is active)."""
        return self._lru.loaded

    @property
    def active(self) -> str | None:
        """The skill read last, or ``None``."""
        return self._lru.active

    def readable_folders(self) -> list[Path]:
        """The folders of the file skills this session has loaded or selected (read only).

        A skill's SKILL.md points at files bundled beside it, so its folder is readable wherever
        it lives. Only a skill this runtime found itself counts, at the folder it found it in: a
        name or location in the log (an imported session's) grants nothing.
        """
        names = [*self._lru.loaded]
        for snapshot in (*self._committed, *self._proposed):
            names.extend(record.name for record in snapshot.skills)
        folders: list[Path] = []
        for name in names:
            skill = self._skill(name)
            if skill is None or not skill.location or not os.path.isabs(skill.location):
                continue
            folder = Path(os.path.realpath(os.path.dirname(skill.location)))
            if folder not in folders:
                folders.append(folder)
        return folders

    def _skill(self, name: str) -> Skill | None:
        return self._now.skills.get(name) or self._held.get(name)

    def _store(self, name: str) -> MemorySkillStore:
        return self._stores.setdefault(name, MemorySkillStore())

    def _context(self, name: str, skill: Skill) -> SkillContext:
        context = self._contexts.get(name)
        if context is None:
            context = skill.new_context(self._store(name))
            self._contexts[name] = context
        return context

    def _writes(self) -> tuple[SkillStoreWrite, ...]:
        stamp = now()
        return tuple(
            SkillStoreWrite(name, write.key, write.value, write.deleted, stamp)
            for name, store in self._stores.items()
            for write in store.take_writes()
        )

    # -- components -----------------------------------------------------------------------------

    def components(self) -> list[ContextComponent]:
        """The catalog, then one component per skill this session loaded, by name."""
        loaded = [self._components[name] for name in sorted(self._components)]
        return [self._catalog_component, *loaded]

    def _catalog_sample(self) -> LoadResult:
        catalog = self._now.catalog
        return Rendered(catalog) if catalog else ABSENT

    def _component(self, name: str) -> ContextComponent:
        component = self._components.get(name)
        if component is None:
            component = ContextComponent(
                LOADED_PREFIX + name, lambda: self._loaded_sample(name), removal=_removal(name)
            )
            self._components[name] = component
        return component

    def _loaded_sample(self, name: str) -> LoadResult:
        if name not in self._lru:
            return ABSENT
        skill = self._skill(name)
        if skill is None:
            # Loaded in the log, unknown to this runtime: keep what the model was told.
            return UNAVAILABLE
        try:
            text = _read(skill, self._context(name, skill))
        except Exception as exc:
            # A Python skill's dynamic text failed: this source keeps what the model was told,
            # explicitly (stale-while-revalidate), as a failed load_skill reports to the model.
            _log.warning("skill %s: its instructions could not be rendered: %r", name, exc)
            return UNAVAILABLE
        return Rendered(render_skill_block(text))

    # -- tools ----------------------------------------------------------------------------------

    def offered(self) -> list[Tool]:
        """``load_skill`` (when any skill is available), then loaded skills' tools in load order."""
        load_tool = self._now.load_tool
        tools = [load_tool] if load_tool is not None else []
        for name in self._order:
            skill = self._skill(name)
            if skill is not None:
                tools.extend(skill.tools)
        return tools

    def known(self) -> list[ToolSpec]:
        """Every declaration this source can give: ``load_skill`` and every skill's tools."""
        now = self._now
        specs = [now.load_tool.spec] if now.load_tool is not None else []
        for skill in (*now.skills.skills, *self._held.values()):
            specs.extend(t.spec for t in skill.tools)
        return specs

    def allowed_tools(self) -> frozenset[str] | None:
        """The active skill's ``allowed-tools``, with ``load_skill`` and every loaded skill's tools.

        ``None`` when the active skill lists none. It narrows the application's tools only:
        every loaded skill's tools keep working, not only the active skill's (spec 003).
        """
        active = self._lru.active
        skill = self._skill(active) if active is not None else None
        if skill is None or skill.allowed_tools is None:
            return None
        loaded = (self._skill(name) for name in self._order)
        own = {t.name for each in loaded if each is not None for t in each.tools}
        return frozenset({*skill.allowed_tools, LOAD_SKILL, *own})

    def _owner(self, tool: Tool) -> tuple[str, Skill] | None:
        for name in self._order:
            skill = self._skill(name)
            if skill is not None and any(t is tool for t in skill.tools):
                return name, skill
        return None

    async def run(self, tool: Tool, call: ToolCall, context: ToolContext, config: Config) -> Ran:
        """Run ``load_skill`` or a loaded skill's tool (with that skill's context bound)."""
        if tool is self._adopted.load_tool:
            return self._load(call, config)
        owner = self._owner(tool)
        if owner is None:
            return Ran(ToolOutcome(f"Unknown tool: {call.name}", True))
        name, skill = owner
        try:
            bound = self._context(name, skill)
        except Exception as exc:  # the skill's state factory: the model's information
            return Ran(ToolOutcome(f"Skill {name} could not start: {_describe(exc)}", True))
        with bound.bind():
            outcome = await tool.invoke(dict(call.arguments), context=context, config=config)
        return Ran(outcome, self._writes())

    def _load(self, call: ToolCall, config: Config) -> Ran:
        load_tool = self._adopted.load_tool
        assert load_tool is not None
        arguments = dict(call.arguments)
        problem = validate_arguments(load_tool.parameters, arguments)
        if problem is not None:
            return Ran(ToolOutcome(f"Invalid arguments for tool {LOAD_SKILL}: {problem}", True))
        name: str = arguments["name"]
        stamp = now()
        if name in self._lru:
            self._lru.read(name)
            entries: list[LogEntry] = [SkillActivated(name, call.id, stamp)]
            return Ran(ToolOutcome(context_changed(active=name)), (*entries, *self._writes()))
        skill = self._adopted.skills.get(name)
        assert skill is not None  # the enum holds exactly the names of this set
        try:
            fresh = skill.new_context(self._store(name))
            read = _read(skill, fresh)
        except Exception as exc:  # a Python skill's own code failed: the model reads why
            message = f"Skill {name} could not be loaded: {_describe(exc)}"
            return Ran(ToolOutcome(message, True), self._writes())
        entries = []
        gone: list[SkillText] = []
        for event in self._lru.read(name).events:
            if event.action == "unloaded":
                gone.append(self._unload(event.name))
                entries.append(SkillUnloaded(event.name, gone[-1].revision, call.id, stamp))
        loaded = SkillLoaded(name, read.revision, read.location, call.id, stamp)
        entries.append(loaded)
        self._loaded[name], self._held[name], self._contexts[name] = loaded, skill, fresh
        self._order.append(name)
        self._component(name)
        digest = context_changed(loaded=[read], unloaded=gone, active=name)
        outcome = ToolOutcome(clean_text(digest, config.max_tool_result_chars))
        return Ran(outcome, (*entries, *self._writes()))

    def _unload(self, name: str) -> SkillText:
        """Forget a skill's load (its ephemeral state goes; its store stays)."""
        self._contexts.pop(name, None)
        if name in self._order:
            self._order.remove(name)
        record = self._loaded.pop(name, None)
        revision = record.revision if record is not None else ""
        location = record.location if record is not None else ""
        return SkillText(name, location, revision, "")

    # -- prompts --------------------------------------------------------------------------------

    async def start_prompt(
        self, content: str | tuple[ContentPart, ...], skills: Sequence[str], user_turn: int
    ) -> list[LogEntry]:
        """A user prompt starts: refresh the skill set and read the explicitly selected skills.

        Returns the ``RuntimeContextSnapshot`` to promote with the user entry (none without a
        selection). ``UsageError`` for an unknown or unreadable skill, before anything changed.
        """
        found = await self._discover()
        selection = self._selection(found, content, skills, user_turn)
        self._adopt(found)
        # A proposal older than this turn was committed; one for this turn never was.
        self._committed.extend(s for s in self._proposed if s.user_turn < user_turn)
        self._proposed = [e for e in selection if isinstance(e, RuntimeContextSnapshot)]
        return selection

    async def preview_prompt(
        self, content: str | tuple[ContentPart, ...], skills: Sequence[str], user_turn: int
    ) -> tuple[list[LogEntry], contextlib.AbstractContextManager[None]]:
        """What ``start_prompt`` would promote, and a scope showing the set it would find.

        Inside the scope this task sees that prompt's catalog and ``load_skill``; nothing of the
        session changes, and a turn running meanwhile keeps its own set.
        """
        found = await self._discover()
        selection = self._selection(found, content, skills, user_turn)
        return selection, previewing(self, self._adoption(found))

    async def _discover(self) -> SkillSet:
        """The skill set on disk now; scanned on a worker thread when there is a folder to scan.

        Most applications have no skill folder: then there is nothing to scan, and a look-up per
        folder on the event loop is far cheaper than a hop to a worker thread and back.
        """
        if self._library.has_folders():
            return await asyncio.to_thread(self._library.discover)
        if self._bare is None:  # nothing on disk: the same set every time, until that changes
            self._bare = self._library.discover()
        return self._bare

    def _selection(
        self,
        found: SkillSet,
        content: str | tuple[ContentPart, ...],
        skills: Sequence[str],
        turn: int,
    ) -> list[LogEntry]:
        """The snapshot of the skills ``content`` and ``skills`` select, if any."""
        names = select_skills(content, skills, found.names())
        reads = [self._read_selected(name, found.get(name)) for name in names]
        snapshot = selection_snapshot(reads, turn, now())
        return [snapshot] if snapshot is not None else []

    def _read_selected(self, name: str, skill: Skill | None) -> SkillText:
        assert skill is not None  # select_skills chose among the names found
        try:
            context = self._contexts.get(name) or skill.new_context(self._store(name))
            return _read(skill, context)
        except Exception as exc:
            raise UsageError(f"skill {name!r} could not be read: {_describe(exc)}") from exc

    def runtime_contexts(self, user_turns: int, *, pending: bool) -> list[RuntimeContextSnapshot]:
        """The committed selections; with ``pending`` also the running prompt's own."""
        found = [*self._committed, *(s for s in self._proposed if s.user_turn < user_turns)]
        if pending:
            found.extend(s for s in self._proposed if s.user_turn >= user_turns)
        return found


def _read(skill: Skill, context: SkillContext) -> SkillText:
    with context.bind():
        return skill.read(context)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def skill_source_factory(library: SkillLibrary) -> SourceFactory:
    """The ``parts.SourceFactory`` that gives each session a ``SkillSource`` over ``library``."""

    def build(deps: SessionDeps, session_id: str, state: Sequence[LogEntry]) -> SkillSource:
        return SkillSource(library, deps.config, state)

    return build
