"""Files and folders the package creates: readable by their owner alone, whatever the umask.

Transcripts, exports, reports, chat history and trust records hold what the user and the model
said; another local user has no business reading them. So every file the package creates is
``0600`` and every folder it creates ``0700``. The mode is set with ``chmod`` after creation,
because ``mkdir``/``open`` modes pass through the process umask (``0o777`` would leave nothing
readable, ``0o000`` everything). Folders that already existed keep their mode: they are the
user's.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["FILE_MODE", "FOLDER_MODE", "create_private", "private_folder", "write_private"]

FILE_MODE = 0o600
FOLDER_MODE = 0o700


def private_folder(path: Path) -> Path:
    """Make ``path`` and its missing parents; each folder made here becomes ``0700``."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            continue  # another process made it: it is theirs to set
        os.chmod(folder, FOLDER_MODE)
    return path


def create_private(path: Path) -> bool:
    """Create ``path`` empty and ``0600`` if it does not exist yet; whether it was created."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(handle, FILE_MODE)
    finally:
        os.close(handle)
    return True


def write_private(path: Path, data: bytes, *, make_folder: bool = True) -> None:
    """Replace ``path`` whole with ``data`` (never half-written), as a ``0600`` file.

    The folder is made (``0700``) when missing, unless ``make_folder`` is false. A file that
    existed becomes ``0600`` too: the replacement is a new file.
    """
    import tempfile  # here, not at the top: it pulls shutil, random and the compressors in

    if make_folder:
        private_folder(path.parent)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(handle, FILE_MODE)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
