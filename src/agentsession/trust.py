"""Project trust: which folders' own configuration files may act, remembered per user.

Some files in a project can start processes, reach the network or change authority — today
``.mcp.json`` (its servers are commands and URLs, its headers may carry secrets). A cloned
repository or a model's own write can put such a file there, so it applies only in a *trusted*
project. Trust is given to one real folder path and one content digest of those files: an
edited, added or removed file asks again. It is remembered in the user's configuration folder
(``$XDG_CONFIG_HOME/agentsession/trusted_projects.json``, ``0600`` in a ``0700`` folder),
with the environment variables the user was shown, so a variable nobody was told about is never
read. A trust file that cannot be read trusts nothing (fail closed).
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ._files import write_private
from ._frozen import frozen
from .errors import UsageError

__all__ = [
    "PROJECT_FILES",
    "TRUST_FILE_VERSION",
    "ProjectConfig",
    "ProjectFiles",
    "TrustStore",
    "check_project_config",
    "project_files",
    "trust_path",
]

#: Files of a project that act only once the project is trusted (relative to its folder).
PROJECT_FILES: tuple[str, ...] = (".mcp.json",)
#: The version of the trust file's JSON form.
TRUST_FILE_VERSION = 1
#: What a runtime does with a project's own configuration files.
ProjectConfig = Literal["ignore", "trusted"]
_MAX_FILE = 4 * 1024 * 1024


def check_project_config(value: object) -> ProjectConfig:
    """``value`` when it is ``"ignore"`` or ``"trusted"``; a ``UsageError`` otherwise."""
    if value == "ignore":
        return "ignore"
    if value == "trusted":
        return "trusted"
    raise UsageError(f"project_config must be 'ignore' or 'trusted', got {value!r}")


@frozen
class ProjectFiles:
    """The trust-relevant files of one folder, as read once: what is shown is what is used."""

    folder: Path
    files: tuple[tuple[str, bytes], ...]
    kind: Literal["project_files"] = "project_files"

    @property
    def digest(self) -> str:
        """``sha256:`` over every file's name and bytes (so a rename or edit changes it)."""
        hasher = hashlib.sha256()
        for name, data in self.files:
            hasher.update(f"{name}\0{len(data)}\0".encode())
            hasher.update(data)
        return f"sha256:{hasher.hexdigest()}"

    def content(self, name: str) -> bytes | None:
        """The bytes read for ``name``, or ``None`` when the folder has no such file."""
        return next((data for found, data in self.files if found == name), None)

    def __bool__(self) -> bool:
        return bool(self.files)


def project_files(folder: str | os.PathLike[str]) -> ProjectFiles:
    """Read the trust-relevant files of ``folder`` (its real path); ``UsageError`` if unreadable."""
    real = Path(os.path.realpath(folder))
    found: list[tuple[str, bytes]] = []
    for name in PROJECT_FILES:
        path = real / name
        if not path.is_file():
            continue
        try:
            with path.open("rb") as handle:
                data = handle.read(_MAX_FILE + 1)
        except OSError as exc:
            raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}") from exc
        if len(data) > _MAX_FILE:
            raise UsageError(f"{path}: larger than {_MAX_FILE // (1024 * 1024)} MiB")
        found.append((name, data))
    return ProjectFiles(real, tuple(found))


def trust_path() -> Path:
    """Where the user's trust records live."""
    import platformdirs  # here, not at the top: it takes longer to import than it is used

    return Path(platformdirs.user_config_dir("agentsession")) / "trusted_projects.json"


class TrustStore:
    """The user's trust records: folder → digest and the environment variables shown."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or trust_path()

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # unreadable or corrupt: nothing is trusted until trusted again
        if not isinstance(data, dict) or data.get("version") != TRUST_FILE_VERSION:
            return {}
        projects = data.get("projects")
        return projects if isinstance(projects, dict) else {}

    def _save(self, projects: dict[str, Any]) -> None:
        document = {"kind": "trusted_projects", "version": TRUST_FILE_VERSION}
        text = json.dumps({**document, "projects": projects}, indent=2, sort_keys=True)
        try:
            write_private(self.path, (text + "\n").encode())
        except OSError as exc:
            raise UsageError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def variables(self, files: ProjectFiles) -> frozenset[str] | None:
        """The variables shown when ``files`` were trusted, or ``None`` when they are not."""
        record = self._load().get(str(files.folder))
        if not isinstance(record, dict) or record.get("digest") != files.digest:
            return None
        names = record.get("variables", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return None
        return frozenset(names)

    def is_trusted(self, files: ProjectFiles) -> bool:
        """Whether exactly these files of this folder were trusted."""
        return self.variables(files) is not None

    def trust(self, files: ProjectFiles, variables: frozenset[str] | set[str]) -> None:
        """Remember that the user trusts ``files`` as they are, reading ``variables``."""
        projects = self._load()
        projects[str(files.folder)] = {
            "digest": files.digest,
            "files": [name for name, _ in files.files],
            "variables": sorted(variables),
            "trusted_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._save(projects)

    def revoke(self, folder: str | os.PathLike[str]) -> bool:
        """Forget the trust given to ``folder``; whether there was any."""
        projects = self._load()
        key = os.path.realpath(folder)
        if key not in projects:
            return False
        del projects[key]
        self._save(projects)
        return True
