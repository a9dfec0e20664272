"""The skills one runtime offers: where they come from, found again whenever asked.

A ``SkillLibrary`` holds the sources of a runtime's skills — Python ``Skill`` values, explicit
``skills_dirs`` and the project folder (its ``.agents/skills/`` and ``.claude/skills/``) — and
``discover()`` scans them afresh each time, so a skill added, edited or removed on disk is seen
by the next user prompt without restarting the application. Discovery never raises on what it
finds on disk (every problem is a ``SkillDiagnostic``); the Python skills are checked once, when
the library is made, so a programming mistake fails at start-up rather than in a session.

``describe_skills`` is the plain-text listing of a ``SkillSet`` (each skill, then each
diagnostic) that a command line prints.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import UsageError
from .discovery import SkillSet, discover_skills, project_skill_dirs
from .skill import Skill

__all__ = ["SkillLibrary", "describe_skills"]


class SkillLibrary:
    """The skill sources of a runtime; ``discover()`` returns what they hold right now."""

    def __init__(
        self,
        skills_dirs: Iterable[str | os.PathLike[str]] = (),
        project_dir: str | os.PathLike[str] | None = None,
        *,
        skills: Sequence[Skill] = (),
    ) -> None:
        if isinstance(skills_dirs, str | os.PathLike):
            raise UsageError(f"skills_dirs must be a list of folders, got {skills_dirs!r}")
        if isinstance(skills, Skill) or not isinstance(skills, Iterable):
            raise UsageError(f"skills must be a list of agentsession Skill values, got {skills!r}")
        self.skills_dirs: tuple[Path, ...] = tuple(Path(d).absolute() for d in skills_dirs)
        self.project_dir = Path(project_dir).absolute() if project_dir is not None else None
        self.skills: tuple[Skill, ...] = tuple(skills)
        self._places: tuple[tuple[object, ...], tuple[str, ...]] | None = None
        # Raises UsageError now for misused Python skills (not Skill values, duplicate names).
        discover_skills((), None, skills=self.skills)

    def discover(self) -> SkillSet:
        """Every available skill and every diagnostic, read from disk now (never raises)."""
        return discover_skills(self.skills_dirs, self.project_dir, skills=self.skills)

    def has_folders(self) -> bool:
        """Whether anything is on disk where ``discover()`` looks (one look-up per folder).

        ``False`` means ``discover()`` finds only the Python skills and the same diagnostics
        every time, until something appears there.
        """
        key = (self.skills_dirs, self.project_dir)
        if self._places is None or self._places[0] != key:
            project = project_skill_dirs(self.project_dir) if self.project_dir is not None else ()
            self._places = key, tuple(str(p) for p in (*self.skills_dirs, *project))
        return any(os.path.exists(place) for place in self._places[1])


def describe_skills(found: SkillSet) -> str:
    """A plain-text listing: one line per skill (name, location, description), then problems.

    Args:
        found: What ``discover_skills`` found.
    """
    lines: list[str] = []
    for skill in found.skills:
        where = skill.location or "(Python)"
        description = " ".join(skill.description.split())
        lines.append(f"{skill.name}  {where}\n    {description}")
    if not lines:
        lines.append("no skills found")
    for diagnostic in found.diagnostics:
        lines.append(f"{diagnostic.severity}: {diagnostic.path}: {diagnostic.message}")
    return "\n".join(lines)
