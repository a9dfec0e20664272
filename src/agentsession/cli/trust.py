"""Project trust on the command line: ask once, ``--trust``, ``agentsession trust [--revoke]``.

A command that runs an agent in a folder with a ``.mcp.json`` uses the file's servers only when
the folder is trusted with exactly these file contents (``trust.TrustStore``). Otherwise, on a
terminal, it shows what the file would start or contact and which environment variables it
would read, and asks once; ``--trust`` (before or after the command name) answers yes without
asking; without a terminal the file is left out with one ``warning:`` line. The file is read
once: the servers used are the ones shown, and a malformed file of a folder being trusted is
one error naming it (an untrusted file is data: it is never parsed further than to describe
it, so it cannot fail a run).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import UsageError
from ..hygiene import visible_line
from ..mcp import MCPServer, ProjectMCP, read_project_mcp
from ..trust import ProjectFiles, TrustStore, project_files

__all__ = ["project_servers_for", "trust_command"]


def _can_ask() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def _describe(project: ProjectMCP) -> str:
    lines = [f"  {line}" for line in project.summary()]
    return "\n".join([f"{visible_line(str(project.path))} declares MCP servers:", *lines])


def _ask(project: ProjectMCP) -> bool:
    print(_describe(project), file=sys.stderr)
    print(
        "Trust this project's .mcp.json (start and contact these servers, read the variables"
        " above)? [y/N] ",
        end="",
        file=sys.stderr,
        flush=True,
    )
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _left_out(project: ProjectMCP, why: str) -> None:
    folder = visible_line(str(project.path.parent))
    print(
        f"warning: {visible_line(str(project.path))} is left out: {why}; review it, then run"
        f" `agentsession trust {folder}` (or pass --trust)",
        file=sys.stderr,
    )


def project_servers_for(args: argparse.Namespace, folder: Path) -> list[MCPServer]:
    """The servers of ``folder``'s ``.mcp.json`` this command may use (none when untrusted)."""
    files = project_files(folder)
    project = read_project_mcp(files) if files else None
    if project is None:
        return []
    store = TrustStore()
    allowed = store.variables(files)
    if allowed is None:
        if getattr(args, "trust", False):
            allowed = _trust(store, files, project)
        elif _can_ask():
            if not _ask(project):
                _left_out(project, "you did not trust it")
                return []
            allowed = _trust(store, files, project)
        else:
            _left_out(project, "the project is not trusted and there is no terminal to ask")
            return []
    return project.servers(os.environ, allowed)


def _trust(store: TrustStore, files: ProjectFiles, project: ProjectMCP) -> frozenset[str]:
    variables = frozenset(project.variables)
    project.servers(os.environ, variables)  # a malformed file is refused before it is trusted
    store.trust(files, variables)
    return variables


def trust_command(args: argparse.Namespace) -> int:
    """``agentsession trust [DIR]`` / ``trust --revoke [DIR]``."""
    folder = Path(args.dir or ".")
    if not folder.is_dir():
        raise UsageError(f"no folder at {folder}")
    store = TrustStore()
    shown = visible_line(os.path.realpath(folder))
    if args.revoke:
        had = store.revoke(folder)
        print(f"{shown} is {'no longer' if had else 'not'} trusted", file=sys.stderr)
        return 0
    files = project_files(folder)
    project = read_project_mcp(files) if files else None
    if project is None:
        raise UsageError(f"{shown} has no project configuration to trust (.mcp.json)")
    print(_describe(project), file=sys.stderr)
    _trust(store, files, project)
    print(f"trusted {shown} (an edit of its .mcp.json asks again)", file=sys.stderr)
    return 0
