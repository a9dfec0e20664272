"""Finding and reading instruction files: bounded, confined to an allowed root, never raising.

``read_instruction_file`` resolves the file's real location first and refuses it, without opening
anything, when that lies outside the allowed root (a symlink pointing out of the repository, or
out of the config folder for the global file) or when the symlinks loop. Only a regular file is
opened (a FIFO would block, a device never ends), with ``O_NOFOLLOW`` and ``O_NONBLOCK`` so a swap
between the check and the open cannot lead elsewhere, and at most ``max_bytes + 1`` bytes are
read: a larger file is cut at a character boundary and a marker says so. A file holding a NUL
byte is binary and refused; invalid UTF-8 is decoded with U+FFFD replacement characters. Every
problem is an ``InstructionDiagnostic`` value in the outcome, never an exception.

Outcomes: ``text`` (usable, maybe with diagnostics), ``missing`` (the path or a folder on it no
longer exists: the file was removed) and ``refused`` (it exists but cannot or may not be read).
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from pathlib import Path
from typing import Final, Literal, TypeAlias

from .._frozen import frozen

__all__ = [
    "CLAUDE_FILE",
    "INSTRUCTION_FILE",
    "MAX_INSTRUCTION_BYTES",
    "DiagnosticKind",
    "FileOutcome",
    "InstructionDiagnostic",
    "candidate_in",
    "is_file_like",
    "is_within",
    "read_instruction_file",
]

INSTRUCTION_FILE: Final = "AGENTS.md"
CLAUDE_FILE: Final = "CLAUDE.md"
MAX_INSTRUCTION_BYTES: Final = 128 * 1024

DiagnosticKind: TypeAlias = Literal[
    "truncated",
    "invalid_utf8",
    "binary",
    "symlink_loop",
    "outside_root",
    "not_a_file",
    "unreadable",
]


@frozen
class InstructionDiagnostic:
    """A problem with one instruction file; ``key`` is its component key, ``path`` its name."""

    kind: DiagnosticKind
    key: str
    path: str
    message: str


@frozen
class FileOutcome:
    """One read: the decoded text, or why there is none."""

    kind: Literal["text", "missing", "refused"]
    text: str = ""
    diagnostics: tuple[InstructionDiagnostic, ...] = ()


_MISSING: Final = FileOutcome("missing")
_OPEN_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def is_within(path: str | Path, root: str | Path) -> bool:
    """Whether the (already resolved) ``path`` is ``root`` or lies below it."""
    try:
        return os.path.commonpath([os.fspath(path), os.fspath(root)]) == os.fspath(root)
    except ValueError:  # different drives
        return False


def is_file_like(path: Path) -> bool:
    """Whether ``path`` is a file or a symlink (a bad link is reported when read, not ignored)."""
    try:
        return path.is_symlink() or path.is_file()
    except OSError:
        return False


def candidate_in(folder: Path) -> Path | None:
    """The instruction file of ``folder``: ``AGENTS.md``, else ``CLAUDE.md``, else none."""
    for name in (INSTRUCTION_FILE, CLAUDE_FILE):
        if is_file_like(folder / name):
            return folder / name
    return None


class _Reader:
    """The diagnostics of one read, labelled with the file's key and path."""

    def __init__(self, key: str, label: str) -> None:
        self.key = key
        self.label = label

    def diag(self, kind: DiagnosticKind, message: str) -> InstructionDiagnostic:
        return InstructionDiagnostic(kind, self.key, self.label, f"{self.label}: {message}")

    def refuse(self, kind: DiagnosticKind, message: str) -> FileOutcome:
        return FileOutcome("refused", diagnostics=(self.diag(kind, message),))

    def os_error(self, exc: OSError) -> FileOutcome:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return _MISSING
        if exc.errno == errno.ELOOP:
            return self.refuse("symlink_loop", "symbolic links loop; the file was not read")
        if exc.errno == errno.EISDIR:
            return self.refuse("not_a_file", "is a directory, not a file")
        return self.refuse("unreadable", f"cannot be read ({exc.strerror or exc})")


def read_instruction_file(
    path: Path, root: Path, *, key: str, label: str, max_bytes: int = MAX_INSTRUCTION_BYTES
) -> FileOutcome:
    """Read ``path`` if its real location lies inside the resolved ``root``; never raises."""
    reader = _Reader(key, label)
    real = os.path.realpath(path)
    if not is_within(real, root):
        return reader.refuse(
            "outside_root", "is a symbolic link leading outside its allowed folder; not read"
        )
    try:
        info = os.stat(real)
        if stat.S_ISDIR(info.st_mode):
            return reader.refuse("not_a_file", "is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            return reader.refuse("not_a_file", "is not a regular file; not read")
        fd = os.open(real, _OPEN_FLAGS)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return reader.refuse("not_a_file", "is not a regular file; not read")
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        return reader.os_error(exc)
    return _decode(reader, data, max(info.st_size, len(data)), max_bytes)


def _decode(reader: _Reader, data: bytes, size: int, max_bytes: int) -> FileOutcome:
    truncated = len(data) > max_bytes
    data = data[:max_bytes]
    if b"\x00" in data:
        return reader.refuse("binary", "holds binary data (NUL bytes); skipped")
    diagnostics: list[InstructionDiagnostic] = []
    # Incremental decoding with final=False leaves a character cut by the size limit out
    # instead of calling it invalid.
    try:
        text = codecs.getincrementaldecoder("utf-8")("strict").decode(data, final=not truncated)
    except UnicodeDecodeError as exc:
        text = codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=not truncated)
        diagnostics.append(
            reader.diag(
                "invalid_utf8",
                f"is not valid UTF-8 (first bad byte at offset {exc.start}); "
                "invalid bytes were replaced with U+FFFD",
            )
        )
    text = text.removeprefix("\ufeff")
    if truncated:
        text += (
            f"\n[truncated: this file is {size} bytes; only the first {max_bytes} bytes are shown]"
        )
        diagnostics.append(
            reader.diag("truncated", f"is {size} bytes; only the first {max_bytes} were read")
        )
    return FileOutcome("text", text, tuple(diagnostics))
