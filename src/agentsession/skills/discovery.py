"""Finding the skills a runtime offers: Python skills, then SKILL.md folders, first name wins.

Sources, in precedence order: skills given in Python, then each explicit ``skills_dirs`` folder in
the order given, then the project's ``.agents/skills/`` (the cross-client convention) and
``.claude/skills/``. The application's own choices come before what a repository brings along,
since a freshly cloned project is not necessarily trusted. Each folder is scanned one level deep
for ``<name>/SKILL.md``, subfolders in sorted order, hidden ones skipped; the result is sorted by
name, so the catalog and the ``load_skill`` enum never depend on directory listing order.

Nothing a file system holds makes discovery raise: a missing or unreadable folder, a symlink loop,
a broken file or a second skill with a taken name each becomes one ``SkillDiagnostic``. The same
file reached twice (``.claude/skills`` linked to ``.agents/skills``) counts once, silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

from .._frozen import frozen
from ..errors import UsageError
from .parse import ParsedSkill, SkillDiagnostic, parse_skill_file
from .skill import Skill

__all__ = ["MAX_FOLDER_ENTRIES", "SkillSet", "discover_skills", "project_skill_dirs"]

#: At most this many entries of one skills folder are looked at (a runaway-scan bound).
MAX_FOLDER_ENTRIES = 2000


@frozen
class SkillSet:
    """The available skills, sorted by name, and every diagnostic found on the way."""

    skills: tuple[Skill, ...] = ()
    diagnostics: tuple[SkillDiagnostic, ...] = ()

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills)

    def __len__(self) -> int:
        return len(self.skills)

    def __contains__(self, name: object) -> bool:
        return any(skill.name == name for skill in self.skills)

    def names(self) -> tuple[str, ...]:
        """The skill names, sorted."""
        return tuple(skill.name for skill in self.skills)

    def get(self, name: str) -> Skill | None:
        """The skill called ``name``, or ``None``.

        Args:
            name: The skill's name.
        """
        return next((skill for skill in self.skills if skill.name == name), None)

    @property
    def errors(self) -> tuple[SkillDiagnostic, ...]:
        """The diagnostics of severity ``error`` (each one a skipped skill or folder)."""
        return tuple(d for d in self.diagnostics if d.severity == "error")


def project_skill_dirs(project_dir: str | os.PathLike[str]) -> tuple[str, str]:
    """The project's conventional skill folders, in precedence order."""
    root = os.path.abspath(project_dir)
    return os.path.join(root, ".agents", "skills"), os.path.join(root, ".claude", "skills")


def discover_skills(
    skills_dirs: Iterable[str | os.PathLike[str]] = (),
    project_dir: str | os.PathLike[str] | None = None,
    *,
    skills: Sequence[Skill] = (),
) -> SkillSet:
    """All available skills from ``skills`` (Python), ``skills_dirs`` and the project.

    Everything found on disk that cannot be used is reported as a diagnostic, never raised.

    Args:
        skills_dirs: Folders holding skill folders (each with a ``SKILL.md``).
        project_dir: The project, whose ``.agents/skills/`` and ``.claude/skills/`` are read.
        skills: Skills written in Python.

    Raises:
        UsageError: ``skills_dirs`` is not a list of folders, an item of ``skills`` is not a
            ``Skill``, or two Python skills share a name.
    """
    if isinstance(skills_dirs, str | os.PathLike):
        raise UsageError(f"skills_dirs must be a list of folders, got {skills_dirs!r}")
    scan = _Scan()
    for skill in skills:
        if not isinstance(skill, Skill):
            raise UsageError(f"skills must be agentsession Skill values, got {skill!r}")
        if skill.name in scan.found:
            raise UsageError(f"two Python skills are named {skill.name!r}")
        scan.found[skill.name] = skill
    for folder in skills_dirs:
        scan.folder(os.path.abspath(folder), explicit=True)
    if project_dir is not None:
        for folder in project_skill_dirs(project_dir):
            scan.folder(folder, explicit=False)
    ordered = tuple(scan.found[name] for name in sorted(scan.found))
    return SkillSet(ordered, tuple(scan.diagnostics))


class _Scan:
    def __init__(self) -> None:
        self.found: dict[str, Skill] = {}
        self.diagnostics: list[SkillDiagnostic] = []
        self.seen_files: set[str] = set()

    def note(self, path: str, severity: Literal["error", "warning"], message: str) -> None:
        self.diagnostics.append(SkillDiagnostic(path, severity, message))

    def folder(self, root: str, *, explicit: bool) -> None:
        names = self.listing(root, explicit=explicit)
        if names is None:
            return
        if "SKILL.md" in names:
            self.note(
                root,
                "warning",
                "this folder holds a SKILL.md itself; give its parent folder, which holds"
                " <name>/SKILL.md folders",
            )
        if len(names) > MAX_FOLDER_ENTRIES:
            self.note(
                root, "warning", f"only the first {MAX_FOLDER_ENTRIES} of {len(names)} entries"
            )
        for name in names[:MAX_FOLDER_ENTRIES]:
            if not name.startswith("."):
                self.entry(os.path.join(root, name))

    def listing(self, root: str, *, explicit: bool) -> list[str] | None:
        try:
            return sorted(os.listdir(root))
        except FileNotFoundError:
            if explicit:
                self.note(root, "warning", "skills folder does not exist")
        except NotADirectoryError:
            self.note(root, "error", "skills folder is not a folder")
        except OSError as exc:
            self.note(root, "error", f"cannot list skills folder: {exc.strerror or exc}")
        return None

    def entry(self, path: str) -> None:
        try:
            if not os.path.isdir(path) and not os.path.islink(path):
                return  # a plain file such as README.md: not a skill
            os.stat(path)
        except OSError as exc:
            self.note(path, "error", f"cannot open skill folder: {exc.strerror or exc}")
            return
        if not os.path.isdir(path):
            return  # a link to a file
        skill_file = os.path.join(path, "SKILL.md")
        if not os.path.lexists(skill_file):
            self.missing(path)
            return
        real = os.path.realpath(skill_file)
        if real in self.seen_files:
            return
        self.seen_files.add(real)
        self.add(parse_skill_file(skill_file))

    def missing(self, path: str) -> None:
        try:
            names = os.listdir(path)
        except OSError as exc:
            self.note(path, "error", f"cannot list skill folder: {exc.strerror or exc}")
            return
        near = [n for n in names if n.lower() == "skill.md"]
        if near:
            self.note(path, "warning", f"found {near[0]!r}; a skill file must be named SKILL.md")

    def add(self, parsed: ParsedSkill) -> None:
        self.diagnostics.extend(parsed.diagnostics)
        skill = parsed.skill
        if skill is None:
            return
        first = self.found.get(skill.name)
        if first is None:
            self.found[skill.name] = skill
            return
        where = first.location or "Python code"
        self.note(
            skill.location,
            "warning",
            f"skill {skill.name!r} is also defined by {where}; the first one found is used"
            f" and {skill.location} is ignored",
        )
