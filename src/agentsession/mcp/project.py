"""A project's own ``.mcp.json``: read as data, described for a trust decision, used once trusted.

The file is read once (``trust.project_files``) and everything after works on those bytes: the
summary the user is shown, the digest trust is remembered under, and the servers a trusted
project gets. Until then nothing in it is started, contacted or expanded. ``${VAR}`` expands
only for the variables the user was shown (``allowed``); any other reads as unset. A server's
declared ``effect`` only makes its tools stricter (``from_project``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal

from .._frozen import frozen
from ..errors import UsageError
from ..hygiene import visible_line
from ..trust import ProjectFiles, project_files
from .config import PROJECT_FILE, MCPServer, parse_mcp_config, variables_in

__all__ = ["ProjectMCP", "project_servers", "read_project_mcp"]


@frozen
class ProjectMCP:
    """The decoded ``.mcp.json`` of one project folder, not yet acted on."""

    path: Path
    data: Mapping[str, Any]
    kind: Literal["project_mcp"] = "project_mcp"

    @property
    def variables(self) -> list[str]:
        """Every environment variable the file would read, sorted."""
        return variables_in(self.data.get("mcpServers", {}))

    def servers(
        self, environ: Mapping[str, str], allowed: Collection[str] | None = None
    ) -> list[MCPServer]:
        """The servers it declares; ``allowed`` limits which variables are read (``None``: all)."""
        env = environ if allowed is None else {k: v for k, v in environ.items() if k in allowed}
        return parse_mcp_config(self.data, str(self.path), env, project=True)

    def summary(self) -> list[str]:
        """What the file would start or contact, one line per server (no secret is expanded)."""
        lines: list[str] = []
        declared = self.data.get("mcpServers", {})
        for name, entry in declared.items() if isinstance(declared, dict) else ():
            entry = entry if isinstance(entry, dict) else {}
            shown = visible_line(str(name))
            if "url" in entry or entry.get("type") in ("http", "streamable-http"):
                headers = entry.get("headers")
                names = ", ".join(map(str, headers)) if isinstance(headers, dict) else ""
                also = f" (headers: {visible_line(names)})" if names else ""
                lines.append(f"{shown}: contacts {visible_line(str(entry.get('url', '')))}{also}")
                continue
            args = entry.get("args", [])
            words = [str(entry.get("command", ""))]
            words.extend(map(str, args) if isinstance(args, list) else [])
            env = entry.get("env")
            names = ", ".join(map(str, env)) if isinstance(env, dict) else ""
            also = f" (sets: {visible_line(names)})" if names else ""
            lines.append(f"{shown}: starts {visible_line(' '.join(words))}{also}")
        variables = self.variables
        if variables:
            lines.append(f"reads environment variables: {', '.join(variables)}")
        return lines


def read_project_mcp(files: ProjectFiles) -> ProjectMCP | None:
    """The project's ``.mcp.json`` from ``files``, or ``None`` when there is none.

    A file that is not JSON, or not an object with ``mcpServers``, is a ``UsageError`` naming it.
    """
    data = files.content(PROJECT_FILE)
    if data is None:
        return None
    path = files.folder / PROJECT_FILE
    try:
        decoded = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    if not isinstance(decoded, dict) or not isinstance(decoded.get("mcpServers"), dict):
        raise UsageError(f'{path}: expected an object with "mcpServers" mapping names to servers')
    return ProjectMCP(path, decoded)


def project_servers(
    project_dir: str | os.PathLike[str],
    environ: Mapping[str, str] | None = None,
    allowed: Collection[str] | None = None,
) -> list[MCPServer]:
    """The servers of a project's ``.mcp.json`` (none without one), for a *trusted* project.

    Only call this for a folder the user trusts: it reads ``environ`` (default: the process
    environment) for the file's ``${VAR}`` references, limited to ``allowed`` when given.
    """
    project = read_project_mcp(project_files(project_dir))
    if project is None:
        return []
    return project.servers(os.environ if environ is None else environ, allowed)
