"""The one skill model that SKILL.md folders and Python code share.

A ``Skill`` is a frozen value: name, description, instructions (a string, or a callable that
renders the current text from a ``SkillContext``), the tools it brings, an optional
``allowed_tools`` narrowing, where it came from and which revision it is. Reading a skill yields a
``SkillText``: exactly what entered the context, with the revision that identifies it.

Per-load and per-session state are apart on purpose: ``state_factory`` builds fresh *ephemeral*
state on every load (dropped on unload), while a ``SkillStore`` is the *durable* per-session
key/value store of one skill (it survives unloads and restarts because every write is recorded
and the session stores those writes). A skill's tools reach both through ``skill_context()``,
which the session binds around each call of that skill's tools.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from .._frozen import frozen
from ..errors import UsageError
from ..log import SkillRevision
from ..tools import Tool
from .store import MemorySkillStore, SkillStore

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "Skill",
    "SkillContext",
    "SkillText",
    "name_problem",
    "skill_context",
    "text_revision",
]

#: Limits from the Agent Skills specification.
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024

# ASCII only: a name becomes a component key (core.skills.loaded.<name>), a tool-schema enum value
# and a `$name` mention, all of which want a plain, unambiguous spelling.
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid skill name, or ``None`` when it is."""
    if not isinstance(name, str) or not name:
        return "name must be a non-empty string"
    if len(name) > MAX_NAME_CHARS:
        return f"name {name!r} is {len(name)} characters long; the limit is {MAX_NAME_CHARS}"
    if _NAME.match(name):
        return None
    if name.startswith("-") or name.endswith("-"):
        return f"name {name!r} must not start or end with a hyphen"
    if "--" in name:
        return f"name {name!r} must not contain consecutive hyphens"
    return f"name {name!r} may hold only lowercase letters a-z, digits 0-9 and hyphens"


def text_revision(data: bytes | str) -> str:
    """The content hash identifying one revision: SHA-256 of the bytes (UTF-8 for text)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()


@frozen
class SkillText:
    """A skill as it was read: the exact instructions text and the revision that names it."""

    name: str
    location: str
    revision: str
    text: str
    kind: Literal["skill_text"] = "skill_text"

    @property
    def record(self) -> SkillRevision:
        """The log's record of this read (for a ``RuntimeContextSnapshot``)."""
        return SkillRevision(name=self.name, location=self.location, revision=self.revision)


_CURRENT: ContextVar[SkillContext | None] = ContextVar("agentsession_skill", default=None)


@frozen
class SkillContext:
    """What a loaded skill's tools and dynamic text can use.

    ``state`` is the ephemeral value ``state_factory`` built for this load (``None`` without a
    factory); ``store`` is the skill's durable per-session store.
    """

    name: str
    state: Any
    store: SkillStore

    @contextmanager
    def bind(self) -> Iterator[SkillContext]:
        """Make this the context ``skill_context()`` returns, for the duration of a tool call.

        Context variables follow ``await`` and ``asyncio.to_thread``, so both async and sync
        tools see it.
        """
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


def skill_context() -> SkillContext:
    """The context of the skill whose tool is running; ``UsageError`` outside such a call.

    Raises:
        UsageError: Called outside a call of a skill's tool.
    """
    current = _CURRENT.get()
    if current is None:
        raise UsageError("skill_context() is only available inside a call of a skill's tool")
    return current


Instructions = str | Callable[[SkillContext], str]


@dataclass(frozen=True, kw_only=True)
class Skill:
    """A skill: ``Skill(name="pdf", description="…", instructions="…", tools=[…])``.

    ``instructions`` is the text added to the context when the skill loads, or a callable that
    renders the current text from the skill's ``SkillContext`` (dynamic text). ``tools`` join
    the request while the skill is loaded. ``allowed_tools`` (``None``: no restriction) can only
    narrow what the permission preset allows, never widen it. ``state_factory`` builds the
    ephemeral state of one load. ``location`` is the SKILL.md path of a file skill; ``revision``
    is the content hash of what was read (computed from static instructions when not given).
    """

    name: str
    description: str
    instructions: Instructions = ""
    tools: Sequence[Tool] = ()
    allowed_tools: tuple[str, ...] | None = None
    state_factory: Callable[[], Any] | None = field(default=None, repr=False)
    location: str = ""
    revision: str = ""
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    source: Literal["python", "file"] = "python"
    kind: Literal["skill"] = "skill"

    def __post_init__(self) -> None:
        problem = name_problem(self.name)
        if problem:
            raise UsageError(f"Skill: {problem}")
        if not isinstance(self.description, str) or not self.description.strip():
            raise UsageError(f"Skill {self.name}: description must be a non-empty string")
        if len(self.description) > MAX_DESCRIPTION_CHARS:
            raise UsageError(
                f"Skill {self.name}: description is {len(self.description)} characters long;"
                f" the limit is {MAX_DESCRIPTION_CHARS}"
            )
        if not isinstance(self.instructions, str) and not callable(self.instructions):
            raise UsageError(f"Skill {self.name}: instructions must be a string or a callable")
        object.__setattr__(self, "tools", _checked_tools(self.name, self.tools))
        if self.allowed_tools is not None:
            allowed = tuple(self.allowed_tools)
            if not all(isinstance(t, str) and t for t in allowed):
                raise UsageError(f"Skill {self.name}: allowed_tools must be non-empty strings")
            object.__setattr__(self, "allowed_tools", allowed)
        if self.state_factory is not None and not callable(self.state_factory):
            raise UsageError(f"Skill {self.name}: state_factory must be callable")
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))
        if not self.revision and isinstance(self.instructions, str):
            object.__setattr__(self, "revision", text_revision(self.instructions))

    @property
    def dynamic(self) -> bool:
        """Whether the instructions are rendered anew from the skill's context on each read."""
        return not isinstance(self.instructions, str)

    def new_context(self, store: SkillStore | None = None) -> SkillContext:
        """A context for one load: fresh ephemeral state, and ``store`` (an empty one if none).

        Args:
            store: The skill's durable store; ``None`` makes an empty one in memory.
        """
        state = self.state_factory() if self.state_factory is not None else None
        return SkillContext(self.name, state, store if store is not None else MemorySkillStore())

    def read(self, context: SkillContext | None = None) -> SkillText:
        """The instructions as they stand now, with their revision.

        An exception raised by dynamic instructions propagates to the caller.

        Args:
            context: The skill's context (``new_context()``); dynamic instructions need it.

        Raises:
            UsageError: The instructions are dynamic and no context was given.
        """
        if isinstance(self.instructions, str):
            return SkillText(self.name, self.location, self.revision, self.instructions)
        if context is None:
            raise UsageError(f"Skill {self.name}: dynamic instructions need a SkillContext")
        text = self.instructions(context)
        if not isinstance(text, str):
            raise UsageError(
                f"Skill {self.name}: instructions returned {type(text).__name__}, not str"
            )
        return SkillText(self.name, self.location, text_revision(text), text)


def _checked_tools(skill: str, tools: Sequence[Tool]) -> tuple[Tool, ...]:
    if isinstance(tools, Tool | str) or not isinstance(tools, Sequence):
        raise UsageError(f"Skill {skill}: tools must be a list of agentsession tools")
    seen: set[str] = set()
    for item in tools:
        if not isinstance(item, Tool):
            raise UsageError(
                f"Skill {skill}: {item!r} is not a tool; decorate the function with @tool"
            )
        if item.name in seen:
            raise UsageError(f"Skill {skill}: two tools are named {item.name!r}")
        seen.add(item.name)
    return tuple(tools)
