"""The skill set a prompt adopts: its catalog text and its ``load_skill`` tool, and previews.

Discovery runs when a user prompt starts, never during a tool continuation; what it found is
adopted until the next prompt as one ``Adopted`` value, so the ``core.skills.catalog`` text and the
``load_skill`` enum change together and only then. The ``load_skill`` tool is kept while its enum
is unchanged (the same object across prompts, so the tool list does not change for nothing).

A preview finds the set its prompt would adopt without adopting it: ``previewing`` shows that set
to the previewing task alone (a context variable), so a turn running meanwhile keeps its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from .._frozen import frozen
from ..budget import TokenCounter
from ..config import Config
from ..errors import UsageError
from ..skills import SkillSet, load_skill_spec, render_catalog
from ..tools import Tool

__all__ = ["Adopted", "adoption", "catalog_budget", "previewed", "previewing"]


def catalog_budget(config: Config) -> int:
    """The catalog's token budget: 5% of the context window, at most 4,000 tokens."""
    return min(4_000, config.context_window // 20)


def _not_direct(**_: Any) -> str:
    raise UsageError("load_skill runs inside a session")


def _load_tool(names: Sequence[str], max_loaded: int) -> Tool:
    spec = load_skill_spec(names, max_loaded=max_loaded)
    return Tool(spec.name, spec.description, spec.parameters, fn=_not_direct)


@frozen
class Adopted:
    """The skill set a prompt found, with the catalog text and ``load_skill`` tool it gives."""

    skills: SkillSet
    catalog: str = ""
    load_tool: Tool | None = None


def adoption(found: SkillSet, config: Config, counter: TokenCounter, before: Adopted) -> Adopted:
    """What adopting ``found`` gives; ``before``'s ``load_skill`` is kept while its enum holds."""
    catalog = render_catalog(found.skills, budget=catalog_budget(config), counter=counter)
    names = found.names()
    tool = before.load_tool
    if not names:
        tool = None
    elif tool is None or tool.parameters["properties"]["name"]["enum"] != list(names):
        tool = _load_tool(names, config.max_loaded_skills)
    return Adopted(found, catalog, tool)


#: A preview's own skill set, seen only by the task that previews (never by a running turn).
_PREVIEW: ContextVar[tuple[object, Adopted] | None] = ContextVar("preview", default=None)


@contextlib.contextmanager
def previewing(owner: object, adopted: Adopted) -> Iterator[None]:
    """Within this scope, this task sees ``adopted`` as ``owner``'s skill set."""
    token = _PREVIEW.set((owner, adopted))
    try:
        yield
    finally:
        _PREVIEW.reset(token)


def previewed(owner: object) -> Adopted | None:
    """The skill set a preview in this task shows for ``owner``, or ``None``."""
    preview = _PREVIEW.get()
    return preview[1] if preview is not None and preview[0] is owner else None
