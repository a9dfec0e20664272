"""Protected paths: files whose change would give a folder's contents authority or code execution.

A project's ``.mcp.json`` starts processes and reaches servers; ``.agentsession/`` holds the
project's own agentsession settings; ``.git/`` holds hooks and config that git runs or obeys; the
user's agentsession config and data folders hold trust records, instructions and every session.
A model that may write inside the project must still not be able to change any of them on its own,
so a write that touches one needs an approval naming it — under every preset, ``full-access``
included, and a standing "always" never covers it (``permissions.decide``, ``gate``). The built-in
file tools check again when they write, beneath the project by descriptors, so a call made without
the gate is refused too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PROTECTED_FOLDERS", "PROTECTED_NAMES", "protected_reason", "user_folders"]

PROTECTED_FOLDERS = (".git", ".agentsession")
PROTECTED_NAMES = (".mcp.json",)
_WHY = {
    ".git": "git runs its hooks and obeys its config",
    ".agentsession": "it holds this project's agentsession settings",
    ".mcp.json": "it can start programs and contact servers on the next run",
}


def user_folders() -> tuple[Path, ...]:
    """The user's agentsession config and data folders (as the environment names them now)."""
    import platformdirs  # here, not at the top: it takes longer to import than it is used

    found: list[Path] = []
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    candidates = [
        platformdirs.user_config_dir("agentsession"),
        platformdirs.user_data_dir("agentsession"),
        os.path.join(xdg, "agentsession") if os.path.isabs(xdg) else "",
    ]
    for folder in candidates:
        if folder:
            resolved = Path(os.path.realpath(folder))
            if resolved not in found:
                found.append(resolved)
    return tuple(found)


def _parts_reason(parts: Sequence[str]) -> str | None:
    for index, part in enumerate(parts):
        if part in PROTECTED_FOLDERS:
            where = "/".join(parts[: index + 1])
            return f"{where}/ is protected: {_WHY[part]}"
        if part in PROTECTED_NAMES and index == len(parts) - 1:
            return f"{'/'.join(parts)} is protected: {_WHY[part]}"
    return None


def protected_reason(target: Path, project_dir: Path) -> str | None:
    """Why changing the resolved ``target`` needs an approval naming it, or ``None``.

    Inside the project: any ``.git`` or ``.agentsession`` folder on the way, or a file named
    ``.mcp.json`` (at any depth: a subfolder can be opened as a project of its own). Anywhere: the
    user's agentsession config and data folders.
    """
    for folder in user_folders():
        if target == folder or folder in target.parents:
            return f"{target} is protected: it is in the user's agentsession folder {folder}"
    if target == project_dir or project_dir not in target.parents:
        return None
    return _parts_reason(target.relative_to(project_dir).parts)
