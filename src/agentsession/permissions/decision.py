"""The decision taken before every tool call, under a permission preset (``presets``).

``decide`` is pure and reads only what cannot be talked into anything: the tool's *declared*
effect, its declared path arguments resolved on disk (``..`` and symlinks followed, also through
the nearest existing parent of a file not yet created), and the optional ``allowed_tools`` of a
skill, which can only narrow. No prompt, file or tool output is an input, so no text claiming
"full-access" changes a decision.

What a call needs: a read needs ``read``; a write needs ``write_project`` for each path inside the
project and ``write_elsewhere`` for each path outside it (a write tool that declares no path
arguments counts as writing inside the project); execute and network need their own capability.
Any path outside the project — read or written — also needs ``write_elsewhere``: only a preset that
lets tools act anywhere lets them look anywhere. A ``destructive`` tool asks for approval under a
preset that asks for anything, even where it would otherwise be allowed.

Two exceptions, both about paths: a folder in ``readable`` (a loaded skill's own folder) may be
read like the project, never written; and a write to a protected path (``protected``: ``.git/``,
``.mcp.json``, the user's agentsession folders…) asks for approval under every preset that would
allow it — ``full-access`` included — naming the path.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from .._frozen import frozen
from ..tools import Tool
from ..tools.context import is_within, resolve_path
from ..tools.protected import protected_reason
from .presets import (
    ABILITY,
    BUILTIN_PRESETS,
    CAPABILITIES,
    LEVELS,
    Capability,
    Level,
    PermissionPreset,
)

__all__ = ["Decision", "decide"]

_EFFECT_TEXT = {
    "read": "reads files",
    "write": "writes files",
    "execute": "runs commands",
    "network": "uses the network",
}
_VERB = {"read": "read", "write": "write", "execute": "use", "network": "use"}


@frozen
class Decision:
    """The verdict on one tool call, before it runs.

    ``reason`` is written for the model (a denial becomes the call's result) and for the person
    asked to approve. ``needs`` lists the capabilities the call uses; ``outside`` the resolved
    paths it touches outside the project (a call allowed or approved with such paths runs with
    ``ToolContext.allow_outside``); ``protected`` the resolved protected paths it would change
    (only an approval of this very call lets it run, never a standing "always").
    """

    kind: Literal["allow", "ask", "deny"]
    reason: str = ""
    preset: str = ""
    tool: str = ""
    needs: tuple[Capability, ...] = ()
    outside: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        """Whether the call may run without asking anyone."""
        return self.kind == "allow"


@frozen
class _Target:
    raw: str
    resolved: Path | None  # None: no file system accepts this name
    inside: bool

    def shown(self) -> str:
        raw = self.raw if len(self.raw) <= 200 else self.raw[:200] + "…"
        if self.resolved is None:
            return f"{raw!r} (not a valid path)"
        if str(self.resolved) == raw:
            return str(self.resolved)
        return f"{raw!r} ({self.resolved})"


def decide(
    preset: PermissionPreset,
    tool: Tool,
    arguments: Mapping[str, Any],
    project_dir: str | Path,
    *,
    allowed_tools: Collection[str] | None = None,
    readable: Collection[Path] = (),
) -> Decision:
    """Whether ``tool`` may run with ``arguments`` under ``preset`` in ``project_dir``.

    Reads only the tool's declared effect, its declared path arguments, ``allowed_tools`` (a
    skill's list: a tool outside it is denied, a tool inside it is still subject to the preset)
    and ``readable``: folders outside the project a read-only tool may read (loaded skills' own).
    A path that cannot be resolved (``OSError``: a folder swapped for a symlink loop while it is
    read) is a refusal, never an error that ends the turn.
    """
    try:
        return _decide(preset, tool, arguments, project_dir, allowed_tools, tuple(readable))
    except OSError as exc:
        return Decision(
            "deny",
            f"Refused: {tool.name}'s path could not be resolved ({exc}); nothing was done.",
            preset.name,
            tool.name,
        )


def _decide(
    preset: PermissionPreset,
    tool: Tool,
    arguments: Mapping[str, Any],
    project_dir: str | Path,
    allowed_tools: Collection[str] | None,
    readable: tuple[Path, ...],
) -> Decision:
    if allowed_tools is not None and tool.name not in allowed_tools:
        listed = ", ".join(sorted(allowed_tools)) or "none"
        return Decision(
            "deny",
            f"Permission denied: {tool.name} is not one of the tools the active skill allows "
            f"({listed}).",
            preset.name,
            tool.name,
        )
    # Only path arguments are resolved against the project's real path: a tool without any
    # (most) skips resolving it, a walk of every folder above the project at each call.
    if tool.paths:
        root = Path(os.path.realpath(project_dir))
    else:  # a Path as given (parsing it again into an equal one costs a few µs per call)
        root = project_dir if isinstance(project_dir, Path) else Path(project_dir)
    reads = tool.effect == "read"
    targets = _targets(tool, arguments, root, readable if reads else ())
    needs = _needs(tool, targets)
    outside = tuple(str(t.resolved or t.raw) for t in targets if not t.inside)
    level = _strictest(preset.level(c) for c in needs)
    if level != "deny" and tool.effect == "write":
        guarded = _protected(targets, root)
        if guarded:
            why = "; ".join(guarded.values())
            reason = (
                f"Approval needed for a protected path: {tool.name} would change it — {why}. "
                "A change there needs the user's approval of this call, under every preset."
            )
            return Decision("ask", reason, preset.name, tool.name, needs, outside, tuple(guarded))
    if level == "allow" and tool.destructive and preset.asks:
        reason = (
            f"Approval needed under preset '{preset.name}': {tool.name} is marked destructive, "
            "and this preset asks the user before destructive tools run."
        )
        return Decision("ask", reason, preset.name, tool.name, needs, outside)
    if level == "allow":
        return Decision("allow", "", preset.name, tool.name, needs, outside)
    blocking = tuple(c for c in needs if preset.level(c) == level)
    what = "; ".join(_what(tool, c, targets) for c in blocking)
    if level == "ask":
        asked = ", ".join(ABILITY[c] for c in blocking)
        reason = (
            f"Approval needed under preset '{preset.name}': {what}; this preset asks the user "
            f"before {asked}."
        )
        return Decision("ask", reason, preset.name, tool.name, needs, outside)
    reason = (
        f"Permission denied by preset '{preset.name}': {what}; {_allows(preset)}."
        f"{_hint(needs)} Only the user can change the permission preset."
    )
    return Decision("deny", reason, preset.name, tool.name, needs, outside)


def _protected(targets: list[_Target], root: Path) -> dict[str, str]:
    """Resolved protected path → why it is protected, for each target that is one."""
    found: dict[str, str] = {}
    for target in targets:
        reason = protected_reason(target.resolved, root) if target.resolved else None
        if reason is not None:
            found[str(target.resolved)] = reason
    return found


def _targets(
    tool: Tool, arguments: Mapping[str, Any], root: Path, readable: tuple[Path, ...] = ()
) -> list[_Target]:
    """The declared path arguments of the call, resolved against ``root``."""
    args: Mapping[str, Any] = arguments if isinstance(arguments, Mapping) else {}
    properties = tool.parameters.get("properties", {})
    found: list[_Target] = []
    for name in tool.paths:
        value = args.get(name, properties.get(name, {}).get("default"))
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if item is None:
                continue
            found.append(_target(item, root, readable))
    return found


def _target(item: object, root: Path, readable: tuple[Path, ...]) -> _Target:
    if not isinstance(item, str):
        return _Target(repr(item), None, False)  # not a path the check can follow: outside
    try:
        resolved = resolve_path(item, root)
    except ValueError:
        return _Target(item, None, False)
    inside = is_within(resolved, root) or any(is_within(resolved, r) for r in readable)
    return _Target(item, resolved, inside)


def _needs(tool: Tool, targets: list[_Target]) -> tuple[Capability, ...]:
    base: dict[str, Capability] = {
        "read": "read",
        "write": "write_project",
        "execute": "execute",
        "network": "network",
    }
    needs: list[Capability] = []
    if tool.effect != "write" or not targets or any(t.inside for t in targets):
        needs.append(base[tool.effect])
    if any(not t.inside for t in targets):
        needs.append("write_elsewhere")
    return tuple(needs)


def _strictest(levels: Iterable[Level]) -> Level:
    return max(levels, key=LEVELS.index, default="allow")


def _what(tool: Tool, capability: Capability, targets: list[_Target]) -> str:
    if capability != "write_elsewhere":
        return f"{tool.name} {_EFFECT_TEXT[tool.effect]}"
    outside = [t.shown() for t in targets if not t.inside]
    shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
    return f"{tool.name} would {_VERB[tool.effect]} {shown}, outside the project"


def _allows(preset: PermissionPreset) -> str:
    allowed = [ABILITY[c] for c in CAPABILITIES if preset.level(c) == "allow"]
    if not allowed:
        return "this preset allows nothing"
    if allowed == [ABILITY["read"]]:
        return "this preset allows reading only"
    return f"this preset allows {', '.join(allowed)}"


def _hint(needs: tuple[Capability, ...]) -> str:
    fitting = [
        name
        for name, preset in BUILTIN_PRESETS.items()
        if all(preset.level(c) == "allow" for c in needs)
    ]
    if not fitting:
        return ""
    return f" It would need a preset such as '{fitting[0]}'."
