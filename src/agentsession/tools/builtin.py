"""Built-in tools for coding agents: ``read_file``, ``write_file``, ``list_files``, ``run_command``.

Each declares its effect and its path arguments, so the permission preset decides about a call
before it runs. The tools also confine themselves: a path that resolves outside the project
(through ``..``, an absolute path, ``~`` or a symlink) is refused with a readable result unless the
call's ``ToolContext.allow_outside`` says the preset or the user allowed it (a loaded skill's
folder in ``ToolContext.readable`` may be read, never written). The resolved path is then opened by
walking directory descriptors from the project folder, one component at a time without following
symlinks (``beneath``), so a folder swapped for a symlink after the check cannot lead outside: the
call is refused instead. A write to a protected path (``protected``) needs the user's approval of
that very call. Everything is bounded: files are shown a window of lines at a time, listings stop
at a fixed number of entries, command output keeps its head and tail. ``write_file`` replaces a
file whole (a flushed temporary file, then a rename inside the same folder descriptor), never a
read-only one; a hard link is replaced, not written through. ``run_command`` lives in
``command_tool``.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .._frozen import frozen
from ..hygiene import replace_surrogates
from . import Tool, ToolOutcome, tool
from .beneath import Swapped, open_beneath, parent_beneath, relative_parts
from .command import run_command
from .context import ToolContext
from .protected import protected_reason

__all__ = ["builtin_tools", "list_files", "read_file", "run_command", "write_file"]

READ_MAX_LINES = 2000
READ_MAX_CHARS = 30_000
LINE_MAX_CHARS = 2000
LIST_MAX_ENTRIES = 1000
_PIECE = 64 * 1024
_SNIFF = 8192
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"})
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def builtin_tools() -> list[Tool]:
    """The four built-in tools, in a fixed order."""
    return [read_file, write_file, list_files, run_command]


@frozen
class _Place:
    """Where a call's path leads: the resolved target, and the root to walk down to it from."""

    target: Path
    root: Path
    parts: tuple[str, ...]


def _locate(context: ToolContext, path: str, *, write: bool = False) -> _Place | ToolOutcome:
    """Where ``path`` leads, or a refusal when it leaves the project unallowed."""
    try:
        target = context.resolve(path)
    except ValueError:
        return ToolOutcome(f"Refused: {path!r} is not a valid path.", True)
    roots = [context.project_dir, *(() if write else context.readable)]
    # One resolution: the walk below re-checks every component, so no second realpath here.
    root = next((r for r in roots if r == target or r in target.parents), None)
    if root is None and context.allow_outside:
        root = Path(target.anchor)  # allowed anywhere: still walked, so never via a symlink
    if root is None:
        return ToolOutcome(
            f"Refused: {path!r} resolves to {target}, outside the project "
            f"({context.project_dir}). Under the current permission preset this tool only works "
            "inside the project" + (" and loaded skills' folders." if context.readable else "."),
            True,
        )
    return _Place(target, root, relative_parts(target, root))


def _swapped(place: _Place, shown: str, verb: str) -> ToolOutcome:
    target = str(place.target)
    if os.path.islink(target) and os.path.realpath(target) == target:  # a loop, not a swap
        return _error(f"Cannot {verb} {shown}: {os.strerror(errno.ELOOP)}")
    return _error(
        f"Refused: {shown} or a folder on its way was replaced by a symlink while the call ran; "
        "nothing was done. Paths are followed only beneath the project."
    )


def _shown(context: ToolContext, target: Path) -> str:
    root = context.project_dir  # ``target`` is resolved: compared as it is, not resolved again
    if target == root or root in target.parents:
        relative = target.relative_to(root).as_posix()
        return relative if relative != "." else "the project folder"
    return str(target)


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(text, True)


# -- read_file -----------------------------------------------------------------------------------


@dataclass
class _LineStats:
    replaced: int = 0
    clipped: int = 0


def _text_lines(handle: BinaryIO, stats: _LineStats) -> Iterator[str]:
    """Decoded lines of ``handle``, each cut at ``LINE_MAX_CHARS``; memory stays bounded."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    parts: list[str] = []
    size = 0
    clipped = False
    while True:
        piece = handle.readline(_PIECE)
        final = not piece
        text = decoder.decode(piece, final)
        stats.replaced += max(0, text.count("\ufffd") - piece.count(b"\xef\xbf\xbd"))
        room = LINE_MAX_CHARS - size
        if len(text) > room:
            clipped = True
        if room > 0:
            parts.append(text[:room])
            size += min(len(text), room)
        if (piece.endswith(b"\n") or final) and parts and (size or clipped):
            line = "".join(parts)
            if clipped:
                stats.clipped += 1
                line = line.rstrip("\r\n") + f" [... line cut at {LINE_MAX_CHARS:,} characters]\n"
            yield line
            parts, size, clipped = [], 0, False
        if final:
            return


def _open_regular(place: _Place, shown: str) -> BinaryIO | ToolOutcome:
    """The target opened for reading, refusing folders, devices, pipes and binary files."""
    try:
        # O_NONBLOCK: opening a pipe must not wait for a writer.
        fd = open_beneath(place.root, place.parts, os.O_RDONLY | os.O_NONBLOCK)
    except Swapped:
        return _swapped(place, shown, "read")
    except FileNotFoundError:
        return _error(f"No such file: {shown}")
    except IsADirectoryError:
        return _error(f"{shown} is a folder; use list_files to see what it holds.")
    except OSError as exc:
        return _error(f"Cannot read {shown}: {exc.strerror or exc}")
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        return _error(f"{shown} is a folder; use list_files to see what it holds.")
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return _error(f"{shown} is not a regular file (a device, pipe or socket); not read.")
    handle = os.fdopen(fd, "rb")
    if b"\0" in handle.read(_SNIFF):
        handle.close()
        return _error(
            f"{shown} is a binary file ({info.st_size:,} bytes); read_file shows text files only."
        )
    handle.seek(0)
    return handle


@tool(effect="read", paths=["path"])
def read_file(
    path: str, start_line: int = 1, max_lines: int = READ_MAX_LINES, *, context: ToolContext
) -> str | ToolOutcome:
    """Read a text file of the project, a window of lines at a time.

    Args:
        path: The file, relative to the project folder.
        start_line: The first line to show (1 is the start of the file).
        max_lines: How many lines to show at most (up to 2000).
        context: Supplied by the runtime for each call.
    """
    place = _locate(context, path)
    if isinstance(place, ToolOutcome):
        return place
    target = place.target
    shown = _shown(context, target)
    handle = _open_regular(place, shown)
    if isinstance(handle, ToolOutcome):
        return handle
    first = max(1, start_line)
    limit = min(max(1, max_lines), READ_MAX_LINES)
    stats = _LineStats()
    out: list[str] = []
    chars = 0
    number = 0
    more = False
    with handle:
        for number, line in enumerate(_text_lines(handle, stats), 1):
            if number < first:
                continue
            if len(out) >= limit or chars + len(line) > READ_MAX_CHARS:
                more = True
                break
            out.append(line)
            chars += len(line)
        size = os.fstat(handle.fileno()).st_size
    context.note_read(target)
    return "".join(out) + _read_notes(shown, first, len(out), number, more, size, stats)


def _read_notes(
    shown: str, first: int, count: int, seen: int, more: bool, size: int, stats: _LineStats
) -> str:
    notes: list[str] = []
    if count == 0 and seen == 0:
        notes.append(f"[{shown} is empty]")
    elif count == 0:
        notes.append(f"[{shown} has {seen:,} lines; start_line {first:,} is past the end]")
    elif more:
        notes.append(
            f"[showing lines {first:,}-{first + count - 1:,} of {shown} ({size:,} bytes); more "
            f"follows: call read_file with start_line={first + count}]"
        )
    if stats.replaced:
        notes.append(f"[note: {stats.replaced:,} invalid UTF-8 sequences replaced with U+FFFD]")
    if stats.clipped:
        notes.append(
            f"[note: {stats.clipped:,} lines longer than {LINE_MAX_CHARS:,} characters cut]"
        )
    if not notes:
        return ""
    return "\n" + "\n".join(notes)


# -- write_file ----------------------------------------------------------------------------------


@tool(effect="write", paths=["path"])
def write_file(path: str, content: str, *, context: ToolContext) -> str | ToolOutcome:
    """Create or replace a text file of the project with the given content (UTF-8).

    Args:
        path: The file, relative to the project folder; missing folders are created.
        content: The complete new text of the file.
        context: Supplied by the runtime for each call.
    """
    place = _locate(context, path, write=True)
    if isinstance(place, ToolOutcome):
        return place
    shown = _shown(context, place.target)
    try:
        guarded = protected_reason(place.target, context.project_dir)
    except OSError as exc:  # a folder on the way changed under us: refuse, never guess
        return _error(f"Refused: cannot tell whether {shown} is protected ({exc}); not written.")
    if guarded is not None and str(place.target) not in context.approved_protected:
        return _error(
            f"Refused: {guarded}. Changing it needs the user's approval of this call, under "
            "every permission preset; not written."
        )
    text, replaced = replace_surrogates(content)
    data = text.encode("utf-8")
    try:
        with parent_beneath(place.root, place.parts, create=True) as (folder, name):
            existed = _write_in(folder, name, shown, data)
    except Swapped:
        return _swapped(place, shown, "write")
    except OSError as exc:
        return _error(f"Cannot write {shown}: {exc.strerror or exc}")
    if isinstance(existed, ToolOutcome):
        return existed
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    verb = ("Created", "Replaced")[existed]
    note = f" {replaced} invalid characters (lone surrogates) were written as U+FFFD."
    return f"{verb} {shown}: {len(data):,} bytes, {lines:,} lines.{note if replaced else ''}"


def _write_in(folder: int, name: str, shown: str, data: bytes) -> bool | ToolOutcome:
    """Write ``name`` inside the open ``folder``; whether it existed before, or a refusal."""
    if not name:
        return _error(f"{shown} is a folder; give the path of a file.")
    try:
        existing: os.stat_result | None = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISLNK(existing.st_mode):  # resolved before: a swap
        raise Swapped(0, f"{name} became a symlink")
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        return _error(f"{shown} is a folder; give the path of a file.")
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        return _error(f"{shown} is not a regular file (a device, pipe or socket); not written.")
    if existing is not None and not os.access(name, os.W_OK, dir_fd=folder):
        return _error(f"Cannot write {shown}: the file is read-only; not written.")  # a rename
        # would ignore the mode, so it is checked here
    _replace_whole(folder, name, data, existing)
    return existing is not None


def _replace_whole(folder: int, name: str, data: bytes, old: os.stat_result | None) -> None:
    """Write ``data`` beside ``name`` in ``folder``, flush it to disk, then rename it over ``name``.

    A crash or a full disk leaves the old file whole (or none), never a cut one. A replaced file
    keeps its mode (and owner, where allowed); a new one gets the umask's. The rename replaces the
    directory entry, so a hard link to the old file elsewhere keeps the old content.
    """
    temp = f".{name}.{os.getpid()}-{id(data):x}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC
    fd = os.open(temp, flags, 0o666, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if old is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(old.st_mode))
                with contextlib.suppress(OSError):
                    os.fchown(handle.fileno(), old.st_uid, old.st_gid)
            os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise


# -- list_files ----------------------------------------------------------------------------------


def _entry(folder: int, name: str) -> str:
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return name
    if stat.S_ISLNK(info.st_mode):
        try:
            return f"{name} -> {os.readlink(name, dir_fd=folder)}"
        except OSError:
            return f"{name} -> ?"
    return f"{name}/" if stat.S_ISDIR(info.st_mode) else name


def _walk(folder: int, recursive: bool, problems: list[str]) -> Iterator[str]:
    """Entries below the open ``folder``, walked by descriptors (symlinks listed, not entered)."""
    if not recursive:
        for name in sorted(os.listdir(folder)):
            yield _entry(folder, name)
        return
    walk = os.fwalk(".", dir_fd=folder, onerror=lambda e: problems.append(str(e)))
    for directory, dirs, files, fd in walk:
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        prefix = os.path.relpath(directory, ".")
        for name in sorted(dirs + files):
            shown = _entry(fd, name)
            yield shown if prefix == "." else f"{prefix}/{shown}"


@tool(effect="read", paths=["path"])
def list_files(
    path: str = ".", recursive: bool = False, *, context: ToolContext
) -> str | ToolOutcome:
    """List the files and folders in a folder of the project (folder names end with /).

    Args:
        path: The folder, relative to the project folder.
        recursive: Also list every subfolder (version-control and dependency folders skipped).
        context: Supplied by the runtime for each call.
    """
    place = _locate(context, path)
    if isinstance(place, ToolOutcome):
        return place
    target = place.target
    shown = _shown(context, target)
    try:
        folder = open_beneath(place.root, place.parts, os.O_RDONLY | os.O_DIRECTORY)
    except Swapped:
        return _swapped(place, shown, "list")
    except FileNotFoundError:
        return _error(f"No such folder: {shown}")
    except NotADirectoryError:
        return _error(f"{shown} is a file; use read_file to read it.")
    except OSError as exc:
        return _error(f"Cannot list {shown}: {exc.strerror or exc}")
    problems: list[str] = []
    entries: list[str] = []
    more = False
    try:
        for entry in _walk(folder, recursive, problems):
            if len(entries) >= LIST_MAX_ENTRIES:
                more = True
                break
            entries.append(entry)
    except OSError as exc:
        return _error(f"Cannot list {shown}: {exc.strerror or exc}")
    finally:
        os.close(folder)
    context.note_read(target)
    lines = entries or ["(empty folder)"]
    if more:
        lines.append(f"[... more entries not shown (limit {LIST_MAX_ENTRIES:,}); list a subfolder]")
    lines.extend(f"[could not read: {problem}]" for problem in problems[:10])
    return "\n".join(lines)
