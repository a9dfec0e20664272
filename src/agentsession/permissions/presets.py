"""Permission presets: what tools may do, capability by capability, under one named preset.

A preset says, for five capabilities — read, write inside the project, write elsewhere, execute,
network — whether a tool call is allowed, needs the user's approval, or is denied. Three are
built in (``read-only``, ``workspace-write``, ``full-access``); an application or a user's config
adds its own by name, never redefining a built-in one. A preset is data the user chose: no prompt,
file or tool output names or changes it. What a preset means for commands (``commands_text``,
``unsandboxed``) is said here too, where the model's permissions text is written from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from .._frozen import frozen
from ..config import Config
from ..errors import UsageError
from ..tools.sandbox import SandboxMode

__all__ = [
    "BUILTIN_PRESETS",
    "CAPABILITIES",
    "DEFAULT_PRESET",
    "FULL_ACCESS",
    "READ_ONLY",
    "WORKSPACE_WRITE",
    "Capability",
    "Level",
    "PermissionPreset",
    "commands_text",
    "get_preset",
    "preset_table",
    "presets_within",
    "unsandboxed",
]

Level: TypeAlias = Literal["allow", "ask", "deny"]
Capability: TypeAlias = Literal["read", "write_project", "write_elsewhere", "execute", "network"]
CAPABILITIES: tuple[Capability, ...] = (
    "read",
    "write_project",
    "write_elsewhere",
    "execute",
    "network",
)
#: The levels from the most to the least permissive (the strictest of several wins).
LEVELS: tuple[Level, ...] = ("allow", "ask", "deny")
#: How much each level lets a tool do: a higher number is more permissive.
_REACH: dict[Level, int] = {"deny": 0, "ask": 1, "allow": 2}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Each capability as the permissions text and the refusals name it.
ABILITY: dict[Capability, str] = {
    "read": "reading files",
    "write_project": "writing files inside the project",
    "write_elsewhere": "reading and writing outside the project",
    "execute": "running commands",
    "network": "network access",
}


@frozen
class PermissionPreset:
    """What tools may do under one named preset: each capability is allow, ask or deny."""

    name: str
    read: Level
    write_project: Level
    write_elsewhere: Level
    execute: Level
    network: Level
    kind: Literal["permission_preset"] = "permission_preset"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise UsageError(
                f"permission preset name {self.name!r} must be 1-64 letters, digits, '.', '_' "
                "or '-', starting with a letter or digit"
            )
        for capability in CAPABILITIES:
            level = getattr(self, capability)
            if level not in LEVELS:
                raise UsageError(
                    f"permission preset {self.name!r}: {capability} must be one of "
                    f"{', '.join(LEVELS)}, got {level!r}"
                )

    @classmethod
    def from_rules(cls, name: str, rules: Mapping[str, Any]) -> PermissionPreset:
        """A preset from a mapping of capability → level; a capability left out is denied.

        Args:
            name: The preset's name.
            rules: Capability (``read``, ``write_project``, ``write_elsewhere``, ``execute``,
                ``network``) to level (``allow``, ``ask``, ``deny``).

        Raises:
            UsageError: ``rules`` is not a mapping, or names an unknown capability or level.
        """
        if not isinstance(rules, Mapping):
            raise UsageError(f"permission preset {name!r} must be a mapping of capability → level")
        unknown = sorted(str(key) for key in rules if key not in CAPABILITIES)
        if unknown:
            raise UsageError(
                f"permission preset {name!r}: unknown capability {', '.join(unknown)} "
                f"(known: {', '.join(CAPABILITIES)})"
            )
        levels = {capability: rules.get(capability, "deny") for capability in CAPABILITIES}
        return cls(name=name, **levels)

    def level(self, capability: Capability) -> Level:
        """The level of one capability.

        Args:
            capability: ``read``, ``write_project``, ``write_elsewhere``, ``execute`` or
                ``network``.
        """
        value: Level = getattr(self, capability)
        return value

    def within(self, other: PermissionPreset) -> bool:
        """Whether this preset lets tools do nothing that ``other`` does not.

        Each capability's level is no more permissive than ``other``'s (``deny`` < ``ask`` <
        ``allow``): a partial order on the rules, names aside. ``read-only`` is within
        ``workspace-write``, which is within ``full-access``; a preset that allows network
        access but denies writing is within neither ``read-only`` nor ``workspace-write``.

        Args:
            other: The preset to compare with.
        """
        return all(
            _REACH[self.level(capability)] <= _REACH[other.level(capability)]
            for capability in CAPABILITIES
        )

    @property
    def asks(self) -> bool:
        """Whether this preset asks for approval for anything (then destructive tools ask too)."""
        return any(self.level(c) == "ask" for c in CAPABILITIES)

    def summary(self) -> str:
        """A plain description of the preset, for the model and for people."""
        groups: dict[Level, list[str]] = {level: [] for level in LEVELS}
        for capability in CAPABILITIES:
            groups[self.level(capability)].append(ABILITY[capability])
        lines = [f"Permission preset: {self.name}."]
        titles = {"allow": "Allowed", "ask": "Needs the user's approval", "deny": "Not allowed"}
        for level in LEVELS:
            if groups[level]:
                lines.append(f"{titles[level]}: {', '.join(groups[level])}.")
        lines.append(
            "The runtime enforces this on every tool call; only the user can change the preset."
        )
        return "\n".join(lines)


READ_ONLY = PermissionPreset("read-only", "allow", "deny", "deny", "deny", "deny")
WORKSPACE_WRITE = PermissionPreset("workspace-write", "allow", "allow", "deny", "ask", "deny")
FULL_ACCESS = PermissionPreset("full-access", "allow", "allow", "allow", "allow", "allow")
BUILTIN_PRESETS: Mapping[str, PermissionPreset] = MappingProxyType(
    {p.name: p for p in (READ_ONLY, WORKSPACE_WRITE, FULL_ACCESS)}
)
DEFAULT_PRESET = WORKSPACE_WRITE.name


def preset_table(config: Config | None = None) -> dict[str, PermissionPreset]:
    """The built-in presets plus the user-defined ones of ``config``, validated, by name.

    A user-defined preset may be a mapping of rules or a ``PermissionPreset``; a name that clashes
    with a built-in preset, an unknown capability or level, and a ``Config.permission_preset``
    that names no preset are each a ``UsageError``.
    """
    table = dict(BUILTIN_PRESETS)
    config = config or Config()
    for name, rules in config.permission_presets.items():
        if name in BUILTIN_PRESETS:
            raise UsageError(
                f"permission preset {name!r} is built in and cannot be redefined; give your "
                "preset another name"
            )
        if isinstance(rules, PermissionPreset):
            if rules.name != name:
                raise UsageError(f"permission preset {rules.name!r} is listed under {name!r}")
            table[name] = rules
        else:
            table[name] = PermissionPreset.from_rules(name, rules)
    get_preset(config.permission_preset, table)
    return table


def presets_within(
    table: Mapping[str, PermissionPreset], ceiling: PermissionPreset
) -> tuple[str, ...]:
    """The names of the presets of ``table`` within ``ceiling``, sorted (each is within itself)."""
    return tuple(sorted(name for name, preset in table.items() if preset.within(ceiling)))


def get_preset(name: str, table: Mapping[str, PermissionPreset] | None = None) -> PermissionPreset:
    """The preset called ``name`` (from ``table``, default the built-ins); else ``UsageError``."""
    presets = BUILTIN_PRESETS if table is None else table
    preset = presets.get(name)
    if preset is None:
        raise UsageError(
            f"unknown permission preset {name!r}; known presets: {', '.join(sorted(presets))}"
        )
    return preset


def unsandboxed(preset: PermissionPreset) -> bool:
    """Whether ``preset`` runs commands without the sandbox: it lets tools act anywhere."""
    return preset.write_elsewhere == "allow"


def commands_text(preset: PermissionPreset, mode: SandboxMode) -> str:
    """The sentence of the permissions text that says how commands run (empty: none may run)."""
    if preset.execute == "deny":
        return ""
    if unsandboxed(preset):
        return (
            "Commands run without a sandbox: they can read and change anything this user can, "
            "with the full environment and the network."
        )
    network = "may use the network" if preset.network == "allow" else "have no network access"
    if mode == "bwrap":
        return (
            "Commands run in a sandbox: they can write only inside the project and a private "
            f"/tmp, see no credentials in their environment, {network}, reach no host socket, "
            "and nothing they start outlives the call. In the project, .git/, .mcp.json and "
            ".agentsession/ are read-only: a command that must change them (git commit) needs "
            "run_command's write_protected set, and the user's approval."
        )
    return (
        "Commands are not sandboxed here (no bubblewrap with a user namespace, or the "
        "application turned the sandbox off): each command runs UNSANDBOXED only after the "
        "user approves it; its environment has no credentials, but it can read and change what "
        "this user can."
    )
