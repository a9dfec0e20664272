"""MCP server declarations: ``MCPServer`` values, ``.mcp.json`` files, names every wire accepts.

A server is declared once, as a frozen value: ``MCPServer.stdio(name, command, ...)`` starts a
subprocess and talks over its stdin and stdout; ``MCPServer.http(name, url, ...)`` talks
streamable HTTP. Nothing starts here. A project's ``.mcp.json`` uses the ``mcpServers`` format
other agent tools read (``command``/``args``/``env`` or ``type: "http"`` with ``url``/``headers``;
``${VAR}`` and ``${VAR:-default}`` expand from the environment), plus three optional keys of our
own per server: ``resources`` (URIs, or names → URIs, that become context components),
``effect`` (overrides what the annotations say about every tool of the server; in a project's
file it can only make a tool stricter) and ``timeout``.
A file that cannot be read, is not JSON, or declares a server wrongly is one ``UsageError``
naming the file.

Names: a server's tools are offered as ``mcp__<server>__<tool>`` and its resources are the
components ``mcp.<server>.<resource>``; characters outside ``[A-Za-z0-9_-]`` become ``_`` (``-``
in resource keys), and a tool name longer than 64 characters keeps its head and a short hash of
the full name, so every provider accepts it and two different tools rarely meet.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, get_args

from .._frozen import frozen
from ..errors import UsageError
from ..tools import Effect
from ._fields import check_mapping, check_resources, check_strings

__all__ = [
    "AUTO_DEFER",
    "PROJECT_FILE",
    "MCPServer",
    "load_mcp_config",
    "merge_servers",
    "parse_mcp_config",
    "resource_key",
    "server_key",
    "tool_name",
    "variables_in",
]

PROJECT_FILE = ".mcp.json"
MAX_TOOL_NAME = 64
#: ``defer_tools="auto"`` defers a server's tools when it lists more than this many: about where
#: their declarations (a few hundred tokens each) outweigh a search step and the loaded few.
AUTO_DEFER = 20
_EFFECTS: tuple[str, ...] = get_args(Effect)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9_-]+")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
Transport = Literal["stdio", "http"]


def server_key(name: str) -> str:
    """The server's part of tool names and component keys: ``name`` with unsafe characters ``_``."""
    return _UNSAFE.sub("_", name)


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` within ``^[a-zA-Z0-9_-]{1,64}$`` (a hash keeps long ones apart)."""
    name = f"mcp__{server_key(server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_TOOL_NAME:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME - 9]}_{digest}"


def resource_key(server: str, resource: str) -> str:
    """The component key ``mcp.<server>.<resource>`` (runs of unsafe characters become ``-``)."""
    part = _UNSAFE_RUN.sub("-", resource).strip("-") or "resource"
    return f"mcp.{server_key(server)}.{part}"


@frozen
class MCPServer:
    """One MCP server a runtime may talk to; build with ``MCPServer.stdio`` or ``.http``.

    ``resources`` pairs a component name with a resource URI; each becomes the context
    component ``mcp.<server>.<name>``, read at every safe boundary. ``effect`` overrides the
    effect every tool of this server is declared with (otherwise its annotations decide).
    ``timeout`` bounds one tool call in seconds (``None``: ``Config.tool_timeout``; ``0``: no
    limit); ``startup_timeout`` bounds connecting; ``backoff`` is the first wait before a
    server that failed is started again (doubling up to a minute). ``max_tools`` caps the tools
    offered from this server (the rest are left out with one warning). ``defer_tools`` keeps the
    server's tools out of requests until ``search_tools`` finds them (uncapped then); ``"auto"``
    does so when it lists more than ``AUTO_DEFER`` tools. ``from_project`` marks a
    server a project's ``.mcp.json`` declared: its ``effect`` can only make a tool stricter.
    """

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = field(default=None, hash=False)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, hash=False)
    resources: tuple[tuple[str, str], ...] = ()
    effect: Effect | None = None
    timeout: float | None = None
    startup_timeout: float = 30.0
    backoff: float = 1.0
    max_tools: int = 128
    defer_tools: bool | Literal["auto"] = False
    from_project: bool = False
    kind: Literal["mcp_server"] = "mcp_server"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise UsageError(f"an MCP server needs a name, got {self.name!r}")
        where = f"MCP server {self.name!r}"
        if self.transport == "stdio":
            if not isinstance(self.command, str) or not self.command:
                raise UsageError(f"{where}: a stdio server needs a command")
        elif self.transport == "http":
            if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
                raise UsageError(f"{where}: url must start with http:// or https://")
        else:
            raise UsageError(f"{where}: transport must be 'stdio' or 'http'")
        object.__setattr__(self, "args", check_strings(self.args, f"{where}: args"))
        if self.env is not None:
            object.__setattr__(self, "env", check_mapping(self.env, f"{where}: env"))
        object.__setattr__(self, "headers", check_mapping(self.headers, f"{where}: headers"))
        object.__setattr__(self, "resources", check_resources(self.resources, where, resource_key))
        if self.effect is not None and self.effect not in _EFFECTS:
            raise UsageError(f"{where}: effect must be one of {_EFFECTS}, got {self.effect!r}")
        for label in ("timeout", "startup_timeout", "backoff"):
            value = getattr(self, label)
            optional = label == "timeout"
            if value is None and optional:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise UsageError(f"{where}: {label} must be a non-negative number, got {value!r}")
        tools = self.max_tools
        if isinstance(tools, bool) or not isinstance(tools, int) or tools < 1:
            raise UsageError(f"{where}: max_tools must be a positive whole number, got {tools!r}")
        if not (isinstance(self.defer_tools, bool) or self.defer_tools == "auto"):
            raise UsageError(f"{where}: defer_tools must be True, False or 'auto'")

    def defers(self, count: int) -> bool:
        """Whether this server's tools are deferred when it lists ``count`` of them.

        Args:
            count: How many tools the server lists.
        """
        return self.defer_tools is True or (self.defer_tools == "auto" and count > AUTO_DEFER)

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        resources: Sequence[str] | Mapping[str, str] = (),
        effect: Effect | None = None,
        timeout: float | None = None,
        startup_timeout: float = 30.0,
        backoff: float = 1.0,
        max_tools: int = 128,
        defer_tools: bool | Literal["auto"] = False,
    ) -> MCPServer:
        """A server run as ``command args...``; ``env`` is added to the usual safe variables.

        Args:
            name: The server's name; its tools are called ``mcp__<name>__<tool>``.
            command: The program to run.
            args: Its arguments.
            env: Variables added to the usual safe ones.
            cwd: The folder it runs in.
            resources: Resource URIs to keep as context components ``mcp.<name>.<key>``: a list,
                or a mapping of key to URI.
            effect: The effect of every tool (default: taken from each tool's annotations).
            timeout: Seconds a tool call may take.
            startup_timeout: Seconds the server may take to start.
            backoff: Seconds before the first restart of a server that went down (it grows).
            max_tools: How many tools the server may offer (not capped when deferred).
            defer_tools: Keep its tools out of requests until ``search_tools`` finds them;
                ``"auto"`` when it lists more than ``AUTO_DEFER``.

        Raises:
            UsageError: A field is not of its type (``args`` not a list of strings, …).
        """
        if isinstance(args, str):
            raise UsageError(f"MCP server {name!r}: args must be a list of strings")
        return cls(
            name,
            "stdio",
            command=command,
            args=tuple(args),
            env=env,
            cwd=os.fspath(cwd) if cwd is not None else None,
            resources=_named(resources),
            effect=effect,
            timeout=timeout,
            startup_timeout=startup_timeout,
            backoff=backoff,
            max_tools=max_tools,
            defer_tools=defer_tools,
        )

    @classmethod
    def http(
        cls,
        name: str,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        resources: Sequence[str] | Mapping[str, str] = (),
        effect: Effect | None = None,
        timeout: float | None = None,
        startup_timeout: float = 30.0,
        backoff: float = 1.0,
        max_tools: int = 128,
        defer_tools: bool | Literal["auto"] = False,
    ) -> MCPServer:
        """A server at ``url`` over streamable HTTP; ``headers`` go with every request.

        Args:
            name: The server's name; its tools are called ``mcp__<name>__<tool>``.
            url: The server's streamable-HTTP endpoint.
            headers: Headers sent with every request.
            resources: Resource URIs to keep as context components ``mcp.<name>.<key>``: a list,
                or a mapping of key to URI.
            effect: The effect of every tool (default: taken from each tool's annotations).
            timeout: Seconds a tool call may take.
            startup_timeout: Seconds the connection may take.
            backoff: Seconds before the first reconnection of a server that went down (it grows).
            max_tools: How many tools the server may offer (not capped when deferred).
            defer_tools: Keep its tools out of requests until ``search_tools`` finds them;
                ``"auto"`` when it lists more than ``AUTO_DEFER``.

        Raises:
            UsageError: A field is not of its type.
        """
        return cls(
            name,
            "http",
            url=url,
            headers=dict(headers or {}),
            resources=_named(resources),
            effect=effect,
            timeout=timeout,
            startup_timeout=startup_timeout,
            backoff=backoff,
            max_tools=max_tools,
            defer_tools=defer_tools,
        )

    @property
    def key(self) -> str:
        """The name as it appears in tool names and component keys."""
        return server_key(self.name)

    def target(self) -> str:
        """What the server is, for messages: its command line or URL (headers and env left out)."""
        if self.transport == "http":
            return self.url
        return " ".join([self.command, *self.args])


def _named(resources: Sequence[str] | Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    if isinstance(resources, str):
        raise UsageError("resources must be a list of URIs or a mapping of names to URIs")
    if isinstance(resources, Mapping):
        return tuple((str(k), v) for k, v in resources.items())
    return tuple((uri, uri) for uri in resources)


# -- .mcp.json -------------------------------------------------------------------------------


def load_mcp_config(
    path: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> list[MCPServer]:
    """The servers a ``.mcp.json``-style file declares; ``UsageError`` naming the file if bad."""
    where = os.fspath(path)
    try:
        text = Path(where).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: cannot read the MCP configuration: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    return parse_mcp_config(data, where, os.environ if environ is None else environ)


def parse_mcp_config(
    data: Any, where: str, environ: Mapping[str, str], *, project: bool = False
) -> list[MCPServer]:
    """The servers of a decoded ``{"mcpServers": {...}}`` document read from ``where``.

    ``project``: the document is a project's own file (its ``effect`` only makes tools stricter).
    """
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise UsageError(f'{where}: expected an object with "mcpServers" mapping names to servers')
    servers: list[MCPServer] = []
    for name, entry in data["mcpServers"].items():
        try:
            server = _server(name, _expand(entry, environ))
            if project:
                server = dataclasses.replace(server, from_project=True)
        except UsageError as exc:
            said = str(exc)
            prefix = f"MCP server {name!r}: "
            said = said if said.startswith(prefix) else prefix + said
            raise UsageError(f"{where}: {said}") from exc
        clash = next((s for s in servers if s.key == server.key), None)
        if clash is not None:
            raise UsageError(
                f"{where}: MCP servers {clash.name!r} and {name!r} would share the tool prefix "
                f"mcp__{server.key}__; rename one"
            )
        servers.append(server)
    return servers


_KEYS = {
    "stdio": {"type", "command", "args", "env", "cwd"},
    "http": {"type", "url", "headers"},
}
_OURS = {"resources", "effect", "timeout", "startupTimeout", "deferTools"}


def _server(name: str, entry: Any) -> MCPServer:
    if not isinstance(entry, dict):
        raise UsageError("must be an object")
    kind = entry.get("type", "http" if "url" in entry else "stdio")
    if kind == "streamable-http":
        kind = "http"
    if kind not in _KEYS:
        raise UsageError(f"type {kind!r} is not supported (use 'stdio' or 'http')")
    unknown = sorted(set(entry) - _KEYS[kind] - _OURS)
    if unknown:
        raise UsageError(f"unknown keys for a {kind} server: {', '.join(unknown)}")
    resources = entry.get("resources", [])
    if not isinstance(resources, list | dict):
        raise UsageError("resources must be a list of URIs or an object of names to URIs")
    extra: dict[str, Any] = {
        "resources": resources,
        "effect": entry.get("effect"),
        "timeout": entry.get("timeout"),
        "startup_timeout": entry.get("startupTimeout", 30.0),
        "defer_tools": entry.get("deferTools", False),
    }
    if kind == "http":
        return MCPServer.http(name, entry.get("url", ""), entry.get("headers"), **extra)
    return MCPServer.stdio(
        name,
        entry.get("command", ""),
        entry.get("args", ()),
        entry.get("env"),
        cwd=entry.get("cwd"),
        **extra,
    )


def _expand(value: Any, environ: Mapping[str, str]) -> Any:
    """``${VAR}`` and ``${VAR:-default}`` replaced in every string of ``value``."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            raise UsageError(f"environment variable {name} is not set (write ${{{name}:-}})")

        return _VAR.sub(one, value)
    if isinstance(value, list):
        return [_expand(v, environ) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, environ) for k, v in value.items()}
    return value


def variables_in(value: Any) -> list[str]:
    """The environment variables ``${VAR}`` references in every string of ``value``, sorted."""
    found: set[str] = set()
    if isinstance(value, str):
        found.update(match.group(1) for match in _VAR.finditer(value))
    elif isinstance(value, list):
        for item in value:
            found.update(variables_in(item))
    elif isinstance(value, dict):
        for item in value.values():
            found.update(variables_in(item))
    return sorted(found)


def merge_servers(given: Iterable[MCPServer], from_project: Iterable[MCPServer]) -> list[MCPServer]:
    """The servers a runtime talks to: ``given`` first, then the project's that ``given`` lacks.

    Two given servers whose names meet in a tool name or component key are a ``UsageError``.
    """
    servers: list[MCPServer] = []
    for server in given:
        if not isinstance(server, MCPServer):
            raise UsageError(f"mcp_servers takes ags.MCPServer values, got {type(server).__name__}")
        clash = next((s for s in servers if s.key == server.key), None)
        if clash is not None:
            raise UsageError(
                f"MCP servers {clash.name!r} and {server.name!r} would share the tool prefix "
                f"mcp__{server.key}__; rename one"
            )
        servers.append(server)
    taken = {s.key for s in servers}
    for server in from_project:
        if server.key not in taken:
            taken.add(server.key)
            servers.append(server)
    return servers
