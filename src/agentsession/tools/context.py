"""What a tool call may know about where it runs, and the one way paths are resolved.

A tool function that declares a parameter annotated ``ToolContext`` receives one per call: the
project folder, the session and call ids, whether this call may touch paths outside the project,
and ``note_read`` to report what it read (the session uses those paths to discover nested
instruction files). ``resolve_path`` is shared by the permission check and the built-in tools so
both see the same target: ``~`` expanded, relative paths joined to the project, ``..`` and
symlinks followed (also for files that do not exist yet, through their nearest existing parent).
"""

from __future__ import annotations

import os
import threading
from dataclasses import field
from pathlib import Path
from typing import Literal

from .._frozen import frozen

__all__ = ["ToolContext", "is_within", "resolve_path"]


def resolve_path(value: str, base: str | os.PathLike[str]) -> Path:
    """The absolute, symlink-free path ``value`` names when relative to ``base``.

    Raises ``ValueError`` for a string no file system accepts (a NUL character, a surrogate that
    does not stand for a raw byte).
    """
    expanded = os.path.expanduser(value)
    return Path(os.path.realpath(os.path.join(os.path.realpath(base), expanded)))


def is_within(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether the resolved ``path`` is ``root`` itself or below it (both resolved first)."""
    target = Path(os.path.realpath(path))
    top = Path(os.path.realpath(root))
    return target == top or top in target.parents


@frozen
class ToolContext:
    """Per-call facts handed to a tool that asks for them with a ``ToolContext`` parameter.

    ``allow_outside`` is set by the caller when the permission preset (or the user's approval)
    lets this call touch paths outside ``project_dir``; the built-in tools refuse such paths
    otherwise, even when called directly. ``readable`` are folders outside the project the call
    may read but never write (loaded skills' own folders). ``approved_protected`` are the
    resolved protected paths the user approved this call to change (``protected``); the built-in
    tools refuse to change any other. ``sandbox``, ``network`` and ``clean_environment`` say how
    ``run_command`` runs (``sandbox`` module): a call made directly, without a session, runs
    as the application itself would.
    """

    project_dir: Path
    session_id: str = ""
    call_id: str = ""
    allow_outside: bool = False
    readable: tuple[Path, ...] = ()
    approved_protected: frozenset[str] = frozenset()
    sandbox: Literal["bwrap", "none"] = "none"
    network: bool = True
    clean_environment: bool = False
    kind: Literal["tool_context"] = "tool_context"
    _reads: list[Path] = field(default_factory=list, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "project_dir", Path(os.path.realpath(self.project_dir)))
        folders = tuple(Path(os.path.realpath(folder)) for folder in self.readable)
        object.__setattr__(self, "readable", folders)

    def resolve(self, path: str) -> Path:
        """``path`` resolved against the project folder (see ``resolve_path``).

        Args:
            path: A path relative to the project, or absolute; ``~`` and symlinks are followed.
        """
        return resolve_path(path, self.project_dir)

    def is_inside(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` (already resolved, or relative to the project) lies in the project.

        Args:
            path: A resolved path, or one relative to the project.
        """
        target = path if os.path.isabs(path) else self.project_dir / path
        return is_within(target, self.project_dir)

    def note_read(self, path: str | os.PathLike[str]) -> None:
        """Report that this call read ``path`` (a file or a folder); relative to the project.

        Args:
            path: The file or folder read, relative to the project or absolute.
        """
        try:
            target = Path(os.path.realpath(self.project_dir / path))
        except ValueError:  # no file system accepts this name, so nothing was read there
            return
        with self._lock:  # a timed-out sync tool may still report from its thread
            if target not in self._reads:
                self._reads.append(target)

    @property
    def reads(self) -> tuple[Path, ...]:
        """The resolved paths this call reported reading, in order, each once."""
        with self._lock:
            return tuple(self._reads)
