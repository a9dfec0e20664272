"""Built-in tools for coding agents: ``read_file``, ``write_file``, ``list_files``, ``run_command``.

Each declares its effect and its path arguments, so the permission preset decides about a call
before it runs. The tools also confine themselves: a path that resolves outside the project
(through ``..``, an absolute path, ``~`` or a symlink) is refused with a readable result unless the
call's ``ToolContext.allow_outside`` says the preset or the user allowed it — so calling one
directly, or a symlink swapped in after the check, cannot reach outside either. Everything is
bounded: files are shown a window of lines at a time, listings stop at a fixed number of
entries, command output keeps its head and tail. ``write_file`` replaces a file whole (a flushed
temporary file, then a rename), never a read-only one. ``run_command`` runs ``bash -c`` in the
project folder with the text as given, in its own process group, killed on timeout, on
cancellation and when the command ends: no process it started outlives the call.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import shutil
import signal
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..hygiene import replace_surrogates
from . import Tool, ToolOutcome, tool
from .context import ToolContext

__all__ = ["builtin_tools", "list_files", "read_file", "run_command", "write_file"]

READ_MAX_LINES = 2000
READ_MAX_CHARS = 30_000
LINE_MAX_CHARS = 2000
LIST_MAX_ENTRIES = 1000
COMMAND_TIMEOUT = 120.0
COMMAND_MAX_TIMEOUT = 600.0
COMMAND_OUTPUT_BYTES = 30_000
_PIECE = 64 * 1024
_SNIFF = 8192
_DRAIN_GRACE = 1.0
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"})


def builtin_tools() -> list[Tool]:
    """The four built-in tools, in a fixed order."""
    return [read_file, write_file, list_files, run_command]


def _locate(context: ToolContext, path: str) -> Path | ToolOutcome:
    """The resolved target of ``path``, or a refusal when it leaves the project unallowed."""
    try:
        target = context.resolve(path)
    except ValueError:
        return ToolOutcome(f"Refused: {path!r} is not a valid path.", True)
    if not context.allow_outside and not context.is_inside(target):
        return ToolOutcome(
            f"Refused: {path!r} resolves to {target}, outside the project "
            f"({context.project_dir}). Under the current permission preset this tool only works "
            "inside the project.",
            True,
        )
    return target


def _shown(context: ToolContext, target: Path) -> str:
    if context.is_inside(target):
        relative = target.relative_to(context.project_dir).as_posix()
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


def _open_regular(target: Path, shown: str) -> BinaryIO | ToolOutcome:
    """``target`` opened for reading, refusing folders, devices, pipes and binary files."""
    try:
        # O_NONBLOCK: opening a pipe must not wait for a writer; O_NOFOLLOW: the path was resolved,
        # a symlink appearing now is a swap after the check.
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
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
    target = _locate(context, path)
    if isinstance(target, ToolOutcome):
        return target
    shown = _shown(context, target)
    handle = _open_regular(target, shown)
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
    target = _locate(context, path)
    if isinstance(target, ToolOutcome):
        return target
    shown = _shown(context, target)
    text, replaced = replace_surrogates(content)
    data = text.encode("utf-8")
    try:
        existing = os.stat(target) if os.path.lexists(target) else None
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            return _error(f"{shown} is a folder; give the path of a file.")
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            return _error(f"{shown} is not a regular file (a device, pipe or socket); not written.")
        if existing is not None and not os.access(target, os.W_OK):  # a rename would ignore it
            return _error(f"Cannot write {shown}: the file is read-only; not written.")
        target.parent.mkdir(parents=True, exist_ok=True)
        _replace_whole(target, data, existing)
    except OSError as exc:
        return _error(f"Cannot write {shown}: {exc.strerror or exc}")
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    verb = ("Created", "Replaced")[existing is not None]
    note = f" {replaced} invalid characters (lone surrogates) were written as U+FFFD."
    return f"{verb} {shown}: {len(data):,} bytes, {lines:,} lines.{note if replaced else ''}"


def _replace_whole(target: Path, data: bytes, old: os.stat_result | None) -> None:
    """Write ``data`` beside ``target``, flush it to disk, then rename it over ``target``.

    A crash or a full disk leaves the old file whole (or none), never a cut one. A replaced file
    keeps its mode (and owner, where allowed); a new one gets the umask's.
    """
    temp = target.with_name(f".{target.name}.{os.getpid()}-{id(data):x}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temp, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if old is not None:
            os.chmod(temp, stat.S_IMODE(old.st_mode))
            with contextlib.suppress(OSError):
                os.chown(temp, old.st_uid, old.st_gid)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


# -- list_files ----------------------------------------------------------------------------------


def _entry(directory: str, name: str) -> str:
    full = os.path.join(directory, name)
    if os.path.islink(full):
        try:
            return f"{name} -> {os.readlink(full)}"
        except OSError:
            return f"{name} -> ?"
    return f"{name}/" if os.path.isdir(full) else name


def _walk(root: Path, recursive: bool, problems: list[str]) -> Iterator[str]:
    if not recursive:
        for name in sorted(os.listdir(root)):
            yield _entry(str(root), name)
        return
    for directory, dirs, files in os.walk(root, onerror=lambda e: problems.append(str(e))):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        prefix = os.path.relpath(directory, root)
        for name in sorted(dirs + files):
            shown = _entry(directory, name)
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
    target = _locate(context, path)
    if isinstance(target, ToolOutcome):
        return target
    shown = _shown(context, target)
    if not target.exists():
        return _error(f"No such folder: {shown}")
    if not target.is_dir():
        return _error(f"{shown} is a file; use read_file to read it.")
    problems: list[str] = []
    entries: list[str] = []
    more = False
    try:
        for entry in _walk(target, recursive, problems):
            if len(entries) >= LIST_MAX_ENTRIES:
                more = True
                break
            entries.append(entry)
    except OSError as exc:
        return _error(f"Cannot list {shown}: {exc.strerror or exc}")
    context.note_read(target)
    lines = entries or ["(empty folder)"]
    if more:
        lines.append(f"[... more entries not shown (limit {LIST_MAX_ENTRIES:,}); list a subfolder]")
    lines.extend(f"[could not read: {problem}]" for problem in problems[:10])
    return "\n".join(lines)


# -- run_command ---------------------------------------------------------------------------------


class _Output:
    """Head and tail of a byte stream, with the total, in bounded memory."""

    def __init__(self, limit: int) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.half:
            del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        head = bytes(self.head).decode("utf-8", "replace")
        omitted = self.total - len(self.head) - len(self.tail)
        if omitted <= 0:
            return head + bytes(self.tail).decode("utf-8", "replace")
        tail = bytes(self.tail).decode("utf-8", "replace")
        return f"{head}\n[... {omitted:,} bytes of output omitted ...]\n{tail}"


async def _pump(stream: asyncio.StreamReader, output: _Output) -> None:
    while chunk := await stream.read(_PIECE):
        output.add(chunk)


async def _exited(process: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> None:
    """Until the shell itself has ended.

    ``process.wait()`` would also wait for every holder of the output pipe to close it, which a
    background job may never do; the exit status is there as soon as the shell ends.
    """
    while process.returncode is None:
        if reader.done():  # end of output usually means the end of the shell: look again soon
            await asyncio.sleep(0.01)
        else:
            await asyncio.wait({reader}, timeout=0.05)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@tool(effect="execute", timeout=COMMAND_MAX_TIMEOUT + 60)
async def run_command(
    command: str, timeout_seconds: float = COMMAND_TIMEOUT, *, context: ToolContext
) -> ToolOutcome:
    """Run a shell command in the project folder and return its output and exit code.

    Args:
        command: The command line, run by bash (or sh) exactly as written; stdin is empty.
        timeout_seconds: Seconds before the command and everything it started are killed
            (up to 600).
        context: Supplied by the runtime for each call.
    """
    seconds = min(max(timeout_seconds, 1.0), COMMAND_MAX_TIMEOUT)
    shell = shutil.which("bash") or "/bin/sh"
    output = _Output(COMMAND_OUTPUT_BYTES)
    process = await asyncio.create_subprocess_exec(
        shell,
        "-c",
        command,
        cwd=context.project_dir,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    reader = asyncio.create_task(_pump(process.stdout, output))
    timed_out = False
    try:
        try:
            async with asyncio.timeout(seconds):
                await _exited(process, reader)
        except TimeoutError:
            timed_out = True
        # Output still in the pipe after the shell ended; a background job holding it open
        # does not get to keep the call waiting.
        await asyncio.wait({reader}, timeout=_DRAIN_GRACE)
    finally:
        _kill_group(process.pid)
        await asyncio.wait({reader}, timeout=_DRAIN_GRACE)
        reader.cancel()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_DRAIN_GRACE):
                await _exited(process, reader)
    return _command_result(output.text(), process.returncode, timed_out, seconds)


def _command_result(text: str, code: int | None, timed_out: bool, seconds: float) -> ToolOutcome:
    body = text if text else "(no output)"
    if not body.endswith("\n"):
        body += "\n"
    if timed_out:
        status = (
            f"[timed out after {seconds:g} second{'' if seconds == 1 else 's'}; the command and "
            "every process it started "
            "were killed]"
        )
    elif code is not None and code < 0:
        status = f"[killed by signal {-code}]"
    else:
        status = f"[exit code: {code}]"
    return ToolOutcome(body + status, timed_out or code != 0)
