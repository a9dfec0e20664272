"""The instruction service: which instruction files apply to a session, as context components.

Discovery happens once, when the service is built for a ``project_dir`` (at session creation or
reopening; a service for another folder re-resolves everything): the global user file
``$XDG_CONFIG_HOME/agentsession/AGENTS.md`` (``~/.config`` when the variable is unset or not
absolute), then one file per folder from the repository root (the nearest ancestor of
``project_dir`` holding ``.git``; without one, ``project_dir`` alone) down to ``project_dir``:
``AGENTS.md``, or ``CLAUDE.md`` in a folder without one. Nested files join later through
``note_read``: a read below ``project_dir`` adds every instruction file in the folders between
``project_dir`` (exclusive) and the read file's real folder (inclusive; a listed folder is its
own), once, in the order they joined. ``Config(load_project_instructions=False)`` keeps only
the global file; ``Config(instructions_above_project=False)`` takes ``project_dir`` as the
repository root, so no folder above it is read (a server's session folder is all it may see).

Each file is one component whose loader reads it afresh at every sample (nothing is cached):
text → ``Rendered`` (a changed file states its complete contents and supersedes the earlier
version); removed → ``ABSENT`` (the removal text says it no longer applies); refused or
unreadable → ``UNAVAILABLE`` (the prior state stays, nothing is emitted, a diagnostic says why).
A removed nested file leaves the effective files but keeps its component, which stays ``ABSENT``
without reading the disk until a read finds the file again: the component list of a session
never changes while a boundary samples it, so its removal is announced with its own text, and a
file put back in place counts only once a read finds it.

The contents sit between ``<instructions path="…">`` and ``</instructions>``; inside them any
``<instructions`` or ``</instructions`` (any case) has its ``<`` written as ``&lt;``, so a file
cannot end its block early or forge another file's block.
"""

from __future__ import annotations

import html
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path, PurePosixPath
from typing import Literal

from .._frozen import frozen
from ..config import Config
from ..context.component import ABSENT, ContextComponent, LoadResult, Rendered, Unavailable
from ..errors import UsageError
from .files import (
    CLAUDE_FILE,
    INSTRUCTION_FILE,
    MAX_INSTRUCTION_BYTES,
    InstructionDiagnostic,
    candidate_in,
    is_file_like,
    is_within,
    read_instruction_file,
)
from .keys import GLOBAL_KEY, instruction_key

__all__ = ["InstructionFile", "InstructionService", "global_instruction_path", "repository_root"]

_log = logging.getLogger("agentsession.instructions")
_TAG_RE = re.compile(r"<(/?)(instructions)", re.IGNORECASE)


@frozen
class InstructionFile:
    """One effective instruction file: its component ``key``, ``path`` and where it lives.

    ``path`` is relative to the repository root (POSIX separators); for the global file it is
    the location with the home folder written as ``~``. ``root`` is the folder it may not leave.
    """

    kind: Literal["global", "project", "nested"]
    key: str
    path: str
    location: Path
    root: Path


def global_instruction_path(environ: Mapping[str, str], home: Path | None) -> Path | None:
    """``$XDG_CONFIG_HOME/agentsession/AGENTS.md``, with ``~/.config`` as the XDG default.

    ``None`` when neither the variable nor a home folder is known.
    """
    configured = environ.get("XDG_CONFIG_HOME", "")
    # The XDG spec says relative values are invalid and must be ignored.
    if configured and os.path.isabs(configured):
        base = Path(configured)
    elif home is not None:
        base = home / ".config"
    else:
        return None
    return base / "agentsession" / INSTRUCTION_FILE


def _home() -> Path | None:
    try:
        return Path.home()
    except (RuntimeError, KeyError, OSError):  # no HOME and no password entry
        return None


def repository_root(project_dir: Path) -> Path:
    """The nearest folder at or above ``project_dir`` holding ``.git``; else ``project_dir``."""
    for folder in (project_dir, *project_dir.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return project_dir


def _display(text: str) -> str:
    """A path as attribute-safe, single-line text."""
    printable = "".join(
        ch
        if ch.isprintable()
        else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        for ch in text
    )
    return html.escape(printable, quote=True)


def _scope(file: InstructionFile) -> str:
    if file.kind == "global":
        return "every project"
    folder = PurePosixPath(file.path).parent
    return "the whole repository" if str(folder) == "." else f"work under {_display(str(folder))}/"


def _render(file: InstructionFile, text: str) -> Rendered:
    name = _display(file.path)
    body = _TAG_RE.sub(lambda m: f"&lt;{m.group(1)}{m.group(2)}", text)
    block = f'<instructions path="{name}">\n{body}\n</instructions>'
    scope = _scope(file)
    return Rendered(
        baseline=f"Instructions from {name} (they apply to {scope}):\n{block}",
        update=(
            f"Instruction file {name}, complete current contents (they apply to {scope}); "
            f"this replaces any earlier version of this file:\n{block}"
        ),
    )


class InstructionService:
    """The instruction files of one session's location, each as its own context component.

    ``environ`` and ``home`` default to the process environment and home folder; ``nested``
    restores files a session discovered earlier (as ``restore`` does). Nothing here raises on a
    bad file: problems are listed in ``diagnostics``.
    """

    def __init__(
        self,
        project_dir: str | PathLike[str],
        *,
        config: Config | None = None,
        environ: Mapping[str, str] | None = None,
        home: str | PathLike[str] | None = None,
        nested: Iterable[str] = (),
        max_bytes: int = MAX_INSTRUCTION_BYTES,
    ) -> None:
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
            raise UsageError(f"max_bytes must be a positive integer, got {max_bytes!r}")
        self.project_dir = Path(os.path.realpath(project_dir))
        config = config or Config()
        above = config.instructions_above_project
        self.repository_root = repository_root(self.project_dir) if above else self.project_dir
        self.load_project = config.load_project_instructions
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._diagnostics: dict[str, tuple[InstructionDiagnostic, ...]] = {}
        self._components: dict[str, ContextComponent] = {}
        self._fixed: list[InstructionFile] = []
        self._nested: dict[str, InstructionFile] = {}
        self._gone: set[str] = set()  # nested files found removed, until a read finds them again
        env = os.environ if environ is None else environ
        home_dir = Path(home) if home is not None else _home()
        self.global_path = global_instruction_path(env, home_dir)
        self._discover(home_dir)
        self.restore(nested)

    def _discover(self, home: Path | None) -> None:
        if self.global_path is not None and is_file_like(self.global_path):
            shown = self.global_path
            if home is not None and is_within(shown, home):
                shown = Path("~") / shown.relative_to(home)
            root = Path(os.path.realpath(self.global_path.parent))
            self._fixed.append(
                InstructionFile("global", GLOBAL_KEY, str(shown), self.global_path, root)
            )
        if not self.load_project:
            return
        folders = [self.project_dir, *self.project_dir.parents]
        depth = folders.index(self.repository_root)
        for folder in reversed(folders[: depth + 1]):
            found = candidate_in(folder)
            if found is not None:
                self._fixed.append(self._project_file("project", found))

    def _project_file(self, kind: Literal["project", "nested"], location: Path) -> InstructionFile:
        relative = location.relative_to(self.repository_root).as_posix()
        return InstructionFile(
            kind, instruction_key(relative), relative, location, self.repository_root
        )

    # -- the effective files ------------------------------------------------------------------

    def files(self) -> list[InstructionFile]:
        """The effective files: global, repository root → ``project_dir``, nested by joining."""
        with self._lock:
            nested = [f for f in self._nested.values() if f.path not in self._gone]
            return [*self._fixed, *nested]

    @property
    def nested(self) -> tuple[str, ...]:
        """The relative paths of the nested files currently joined, in joining order."""
        return tuple(f.path for f in self.files() if f.kind == "nested")

    def components(self) -> list[ContextComponent]:
        """One component per effective file, in ``files()`` order (same object per file).

        A nested file found removed keeps its (absent) component in its place.
        """
        with self._lock:
            listed = [*self._fixed, *self._nested.values()]
        return [self._component(file) for file in listed]

    def _component(self, file: InstructionFile) -> ContextComponent:
        with self._lock:
            component = self._components.get(file.key)
            if component is None:
                removal = (
                    f"Instruction file {_display(file.path)} was removed; "
                    "its instructions no longer apply."
                )
                component = ContextComponent(file.key, lambda: self._load(file), removal=removal)
                self._components[file.key] = component
            return component

    def _load(self, file: InstructionFile) -> LoadResult:
        with self._lock:
            if file.path in self._gone and file.kind == "nested":
                return ABSENT
        outcome = read_instruction_file(
            file.location, file.root, key=file.key, label=file.path, max_bytes=self.max_bytes
        )
        self._note_diagnostics(file.key, outcome.diagnostics)
        if outcome.kind == "text":
            return _render(file, outcome.text)
        if outcome.kind == "missing":
            if file.kind == "nested":
                with self._lock:  # announced once through this sample; a read brings it back
                    self._gone.add(file.path)
            return ABSENT
        return Unavailable("; ".join(d.message for d in outcome.diagnostics))

    # -- nested discovery ---------------------------------------------------------------------

    def note_read(self, path: str | PathLike[str]) -> list[str]:
        """Record that a tool read ``path``; return the relative paths of files that joined.

        A relative ``path`` is taken from ``project_dir``. Only a read whose real folder lies
        strictly below ``project_dir`` adds anything (a folder that was listed counts as its own
        folder); each file joins once while it stays.
        """
        if not self.load_project:
            return []
        try:
            target = Path(os.path.realpath(self.project_dir / path))
            folder = target if target.is_dir() else target.parent
        except (OSError, ValueError):  # a NUL byte or an unusable name: nothing to discover
            return []
        if folder == self.project_dir or not is_within(folder, self.project_dir):
            return []
        between = folder.relative_to(self.project_dir).parts
        joined: list[str] = []
        current = self.project_dir
        for part in between:
            current = current / part
            found = candidate_in(current)
            if found is not None and self._join(self._project_file("nested", found)):
                joined.append(found.relative_to(self.repository_root).as_posix())
        return joined

    def restore(self, paths: Iterable[str]) -> list[str]:
        """Rejoin nested files recorded earlier (relative paths); return those accepted.

        A path that does not name an instruction file strictly below ``project_dir`` — a session
        moved elsewhere, or a corrupt record — is ignored. A file that is gone by now is kept
        until its first sample, which announces the removal if the model knew it.
        """
        accepted: list[str] = []
        if not self.load_project:
            return accepted
        for relative in paths:
            file = self._restorable(relative)
            if file is not None and self._join(file):
                accepted.append(file.path)
        return accepted

    def _restorable(self, relative: str) -> InstructionFile | None:
        if not isinstance(relative, str) or not relative:
            return None
        pure = PurePosixPath(relative)
        if (
            pure.is_absolute()
            or ".." in pure.parts
            or pure.name
            not in (
                INSTRUCTION_FILE,
                CLAUDE_FILE,
            )
        ):
            return None
        location = self.repository_root.joinpath(*pure.parts)
        folder = location.parent
        if folder == self.project_dir or not is_within(folder, self.project_dir):
            return None
        return self._project_file("nested", location)

    def _join(self, file: InstructionFile) -> bool:
        with self._lock:
            if file.path in self._gone:
                self._gone.discard(file.path)
                return True
            if file.path in self._nested or any(f.key == file.key for f in self._fixed):
                return False
            self._nested[file.path] = file
            return True

    # -- diagnostics --------------------------------------------------------------------------

    @property
    def diagnostics(self) -> tuple[InstructionDiagnostic, ...]:
        """Problems found by the latest read of each effective file, in file order."""
        with self._lock:
            order = [f.key for f in (*self._fixed, *self._nested.values())]
            return tuple(d for key in order for d in self._diagnostics.get(key, ()))

    def _note_diagnostics(self, key: str, found: tuple[InstructionDiagnostic, ...]) -> None:
        with self._lock:
            before = self._diagnostics.get(key, ())
            if found:
                self._diagnostics[key] = found
            else:
                self._diagnostics.pop(key, None)
        for diagnostic in found:
            if diagnostic not in before:
                _log.warning("instruction file %s", diagnostic.message)
