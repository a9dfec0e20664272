"""Opening a path beneath a root folder by walking directory descriptors, never by name.

A check such as ``realpath`` says where a path led *when it was checked*; a second process can
swap a folder of it for a symlink before the open. Here every component is opened relative to the
descriptor of the folder before it with ``O_NOFOLLOW`` (folders also ``O_DIRECTORY``), so what is
opened is exactly the chain of entries below the root that the walk saw: a component that is a
symlink now — a swap after the check, since the caller walks a path with symlinks already resolved
— stops the walk with ``Swapped`` instead of being followed out of the root. The root itself is
opened by its name once: it is the project (or a skill's folder), trusted by whoever configured
it.

Python has no ``openat2``, so ``RESOLVE_BENEATH`` is not used; the walk gives the same guarantee
for paths without symlinks, which is what the built-in tools hand it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["Swapped", "open_beneath", "parent_beneath", "relative_parts"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | _NOFOLLOW | _DIRECTORY | _CLOEXEC


class Swapped(OSError):
    """A component of the path is a symlink (or not a folder) now: it changed after the check."""


def relative_parts(target: Path, root: Path) -> tuple[str, ...]:
    """The components of ``target`` below ``root`` (both absolute); ``ValueError`` if not below."""
    parts = target.relative_to(root).parts
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{target} is not a plain path below {root}")
    return parts


def _open_root(root: Path) -> int:
    return os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _step(name: str, dir_fd: int, *, create: bool) -> int:
    """The folder ``name`` inside ``dir_fd``, opened without following a symlink."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):  # another writer may make it at the same time
        os.mkdir(name, 0o777, dir_fd=dir_fd)
    return _step(name, dir_fd, create=False)


@contextlib.contextmanager
def parent_beneath(
    root: Path, parts: Sequence[str], *, create: bool = False
) -> Iterator[tuple[int, str]]:
    """The open folder that holds ``parts[-1]`` below ``root``, and that last name.

    With no parts the root itself is the target: its own descriptor and ``""``. ``create`` makes
    missing folders on the way (``mkdir`` inside the descriptor of their parent). A component that
    is a symlink raises ``Swapped``; other failures are the ``OSError`` of the failing step.
    """
    fd = _open_root(root)
    try:
        for name in parts[:-1]:
            try:
                child = _step(name, fd, create=create)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, fd):
                    raise Swapped(errno.ELOOP, f"{name} became a symlink") from exc
                raise
            os.close(fd)
            fd = child
        yield fd, (parts[-1] if parts else "")
    finally:
        os.close(fd)


def open_beneath(root: Path, parts: Sequence[str], flags: int, mode: int = 0o666) -> int:
    """A descriptor for ``parts`` below ``root``, opened with ``flags`` and never via a symlink."""
    with parent_beneath(root, parts) as (parent, name):
        if not name:
            return os.dup(parent) if flags & _DIRECTORY else os.open(".", flags, dir_fd=parent)
        try:
            return os.open(name, flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=parent)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(name, parent):
                raise Swapped(errno.ELOOP, f"{name} became a symlink") from exc
            raise
