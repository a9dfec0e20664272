"""Protected paths: files whose change would give a folder's contents authority or code execution.

A project's ``.mcp.json`` starts processes and reaches servers; ``.agentsession/`` holds the
project's own agentsession settings; a git directory holds hooks and config that git runs or obeys;
the user's agentsession config and data folders hold trust records, instructions and every session.
A model that may write inside the project must still not be able to change any of them on its own,
so a write that touches one needs an approval naming it — under every preset, ``full-access``
included, and a standing "always" never covers it (``permissions.decide``, ``gate``). The built-in
file tools check again when they write, beneath the project by descriptors, so a call made without
the gate is refused too.

Git is recognised by content, not by the name ``.git`` alone: any folder in the project that holds
(or would hold, after the write) ``HEAD`` beside ``config``, ``objects``, ``refs`` or ``commondir``
is a git directory — an embedded bare repository with ``core.fsmonitor`` runs code at the next
``git status`` there. The folder the project's repository names in ``core.hooksPath``
(``.githooks/``, husky's ``.husky/_`` and its ``.husky/``) holds hooks git runs. Names are compared
as a case-insensitive file system and HFS+ compare them: Unicode NFC, case folded, with the
code points HFS+ ignores removed (``.GIT/hooks``, ``.MCP.JSON``, ``.g\u200cit``).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "PROTECTED_FOLDERS",
    "PROTECTED_NAMES",
    "comparable",
    "hooks_folders",
    "included_configs",
    "protected_reason",
    "sandbox_read_only",
    "user_folders",
]

PROTECTED_FOLDERS = (".git", ".agentsession")
PROTECTED_NAMES = (".mcp.json",)
_WHY = {
    ".git": "git runs its hooks and obeys its config",
    ".agentsession": "it holds this project's agentsession settings",
    ".mcp.json": "it can start programs and contact servers on the next run",
}
# Code points HFS+ leaves out when it compares names (git's own list for ``.git`` look-alikes).
_IGNORED = dict.fromkeys(
    [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)
# ``commondir`` names the folder holding the rest, as a linked worktree's git directory does:
# ``HEAD`` beside it is a git directory whose config is elsewhere.
_GIT_PARTS = ("head", "config", "objects", "refs", "commondir")


def comparable(name: str) -> str:
    """``name`` as a case-insensitive, normalising file system compares it."""
    return unicodedata.normalize("NFC", name.translate(_IGNORED)).casefold()


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


def _named_reason(parts: Sequence[str]) -> str | None:
    for index, part in enumerate(parts):
        name = comparable(part)
        if name in PROTECTED_FOLDERS:
            where = "/".join(parts[: index + 1])
            return f"{where}/ is protected: {_WHY[name]}"
        if name in PROTECTED_NAMES and index == len(parts) - 1:
            return f"{'/'.join(parts)} is protected: {_WHY[name]}"
    return None


def _git_entries(folder: Path) -> set[str]:
    # Git looks these names up exactly; a case-insensitive file system finds them in any case,
    # as git would there. A few stats, not a listing of a folder that may be huge.
    return {
        name
        for name in _GIT_PARTS
        if os.path.lexists(folder / (name.upper() if name == "head" else name))
    }


def _git_directory_reason(parts: Sequence[str], project_dir: Path) -> str | None:
    """Whether a folder on the way holds, after this write, ``HEAD`` and another git part."""
    folder = project_dir
    for index, part in enumerate(parts):
        present = _git_entries(folder) | ({comparable(part)} & set(_GIT_PARTS))
        if "head" in present and len(present) > 1:
            where = "/".join(parts[:index]) or "."
            return (
                f"{where}/ is protected: it is a git directory ({', '.join(sorted(present))}), "
                "and git runs its hooks and obeys its config"
            )
        folder = folder / part
    return None


def _read_gitdir(dotgit: Path) -> Path | None:
    """The git directory a ``.git`` folder or ``gitdir:`` file stands for."""
    if dotgit.is_dir():
        return dotgit
    try:
        first = dotgit.read_text(encoding="utf-8", errors="replace").splitlines()[:1]
    except OSError:
        return None
    if not first or not first[0].startswith("gitdir:"):
        return None
    return (dotgit.parent / first[0][len("gitdir:") :].strip()).resolve()


def _config_hooks_path(config: Path) -> str | None:
    """``core.hooksPath`` in one git config file (the last one set wins, as in git)."""
    try:
        lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    section, found = "", None
    for raw in lines:
        line = raw.strip()
        if line.startswith("["):
            section = line[1 : line.find("]")].strip().casefold() if "]" in line else ""
            continue
        key, sep, value = line.partition("=")
        if sep and section == "core" and key.strip().casefold() == "hookspath":
            found = value.split("#")[0].split(";")[0].strip().strip('"')
    return found


def _config_includes(config: Path) -> list[Path]:
    """The files one git config file includes (``include.path``, ``includeIf``), resolved."""
    try:
        lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    section, found = "", []
    for raw in lines:
        line = raw.strip()
        if line.startswith("["):
            section = line[1 : line.find("]")].strip().casefold() if "]" in line else ""
            continue
        key, sep, value = line.partition("=")
        included = section == "include" or section.startswith("includeif")
        if sep and included and key.strip().casefold() == "path":
            value = os.path.expanduser(value.split("#")[0].split(";")[0].strip().strip('"'))
            found.append(Path(os.path.realpath(config.parent / value)))  # relative to the file
    return found


def _repository_configs(project_dir: Path) -> tuple[Path, list[Path]] | None:
    """The top of the project's repository and its config files (shared first), if any."""
    top = project_dir
    while True:
        dotgit = top / ".git"
        if os.path.lexists(dotgit):
            break
        if top.parent == top:
            return None
        top = top.parent
    gitdir = _read_gitdir(dotgit)
    if gitdir is None:
        return None
    configs = [gitdir / "config"]
    common = gitdir / "commondir"
    if common.is_file():
        shared = common.read_text(encoding="utf-8", errors="replace").strip()
        configs.insert(0, (gitdir / shared / "config").resolve())
    return top, configs


def included_configs(project_dir: Path) -> tuple[Path, ...]:
    """Files the project's repository config includes: git obeys them as its own config."""
    found = _repository_configs(project_dir)
    return () if found is None else tuple(p for c in found[1] for p in _config_includes(c))


def hooks_folders(project_dir: Path) -> tuple[Path, ...]:
    """The folders the project's repository names in ``core.hooksPath`` (resolved)."""
    repository = _repository_configs(project_dir)
    if repository is None:
        return ()
    top, configs = repository
    found: list[Path] = []
    for config in configs:
        value = _config_hooks_path(config)
        if not value:
            continue
        hooks = Path(os.path.realpath(top / os.path.expanduser(value)))
        found.append(hooks)
        if hooks.name == "_":  # husky: hooks in .husky/_ run the scripts in .husky/
            found.append(hooks.parent)
    return tuple(found)


def protected_reason(target: Path, project_dir: Path) -> str | None:
    """Why changing the resolved ``target`` needs an approval naming it, or ``None``.

    Inside the project: any ``.git`` or ``.agentsession`` folder on the way, a file named
    ``.mcp.json`` (at any depth: a subfolder can be opened as a project of its own), a folder
    that is a git directory by its content, the repository's ``core.hooksPath``. Anywhere: the
    user's agentsession config and data folders. May raise ``OSError`` (the caller refuses).
    """
    for folder in user_folders():
        if target == folder or folder in target.parents:
            return f"{target} is protected: it is in the user's agentsession folder {folder}"
    if target == project_dir or project_dir not in target.parents:
        return None
    parts = target.relative_to(project_dir).parts
    named = _named_reason(parts) or _git_directory_reason(parts, project_dir)
    if named is not None:
        return named
    for hooks in hooks_folders(project_dir):
        if target == hooks or hooks in target.parents:
            return (
                f"{target.relative_to(project_dir)} is protected: it is in {hooks}, the "
                "repository's hooks folder (core.hooksPath), whose programs git runs"
            )
    if target in included_configs(project_dir):
        return (
            f"{target.relative_to(project_dir)} is protected: the repository's git config "
            "includes it (include.path), and git obeys its config"
        )
    return None


def sandbox_read_only(project_dir: Path) -> list[Path]:
    """What a sandboxed command finds read-only in the project, where it exists.

    ``.git``, ``.mcp.json``, ``.agentsession`` (in any case) and the hooks folder.
    """
    found: list[Path] = []
    try:
        names = os.listdir(project_dir)
    except OSError:
        return found
    wanted = {*PROTECTED_FOLDERS, *PROTECTED_NAMES}
    found += [project_dir / n for n in sorted(names) if comparable(n) in wanted]
    dotgit = project_dir / ".git"
    gitdir = _read_gitdir(dotgit) if os.path.lexists(dotgit) else None
    if gitdir is not None and gitdir not in found:
        found.append(gitdir)
    found += [h for h in hooks_folders(project_dir) if h.is_dir() and h not in found]
    found += [c for c in included_configs(project_dir) if c.is_file() and c not in found]
    return found
