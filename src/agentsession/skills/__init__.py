"""Skills: SKILL.md folders and Python skills, one model; the pure parts of their lifecycle.

- ``skill``: the ``Skill`` value, ``SkillText`` (what one read produced), ``SkillContext`` and
  ``skill_context()`` for a skill's tools and dynamic text.
- ``store``: the durable per-skill ``SkillStore`` and its recording in-memory implementation.
- ``parse``: one SKILL.md into a ``Skill`` with ``SkillDiagnostic`` values, never raising.
- ``discovery``: every available skill (Python, ``skills_dirs``, the project) as a ``SkillSet``.
- ``catalog``: the ``core.skills.catalog`` text within a token budget.
- ``select``: ``$name`` mentions, ``skills=[…]``, ``<skill>`` blocks and their projection.
- ``lru``: the loaded-skill LRU state machine, rebuildable from its events.
- ``digest``: the ``contextChanged`` result text of ``load_skill``.
- ``tool``: the ``load_skill`` declaration.

Nothing here knows about sessions, stores or providers; the session wires these pieces together.
"""

from __future__ import annotations

from .catalog import CATALOG_KEY, render_catalog
from .digest import DIGEST_LINE_CHARS, context_changed
from .discovery import MAX_FOLDER_ENTRIES, SkillSet, discover_skills, project_skill_dirs
from .lru import LoadChange, LoadedSkills, SkillEvent
from .parse import (
    MAX_COMPATIBILITY_CHARS,
    MAX_SKILL_BYTES,
    ParsedSkill,
    SkillDiagnostic,
    parse_skill_file,
)
from .select import (
    escape_attribute,
    mentioned_skills,
    neutralize,
    prepend_skill_blocks,
    render_skill_block,
    render_skill_blocks,
    select_skills,
    selection_snapshot,
)
from .skill import (
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    Skill,
    SkillContext,
    SkillText,
    name_problem,
    skill_context,
    text_revision,
)
from .store import JSONValue, MemorySkillStore, SkillStore, StoreWrite
from .tool import LOAD_SKILL, load_skill_spec

__all__ = [
    "CATALOG_KEY",
    "DIGEST_LINE_CHARS",
    "LOAD_SKILL",
    "MAX_COMPATIBILITY_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_FOLDER_ENTRIES",
    "MAX_NAME_CHARS",
    "MAX_SKILL_BYTES",
    "JSONValue",
    "LoadChange",
    "LoadedSkills",
    "MemorySkillStore",
    "ParsedSkill",
    "Skill",
    "SkillContext",
    "SkillDiagnostic",
    "SkillEvent",
    "SkillSet",
    "SkillStore",
    "SkillText",
    "StoreWrite",
    "context_changed",
    "discover_skills",
    "escape_attribute",
    "load_skill_spec",
    "mentioned_skills",
    "name_problem",
    "neutralize",
    "parse_skill_file",
    "prepend_skill_blocks",
    "project_skill_dirs",
    "render_catalog",
    "render_skill_block",
    "render_skill_blocks",
    "select_skills",
    "selection_snapshot",
    "skill_context",
    "text_revision",
]
