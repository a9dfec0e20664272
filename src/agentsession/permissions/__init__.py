"""Permission presets and the decision on each tool call (never from prompt text).

``presets``: the five capabilities, the levels, ``PermissionPreset``, the built-in presets and a
config's own, and what a preset means for commands; ``decision``: ``decide`` and its
``Decision``, from the tool's declared effect and its declared path arguments resolved on disk.
"""

from __future__ import annotations

from .decision import Decision, decide
from .presets import (
    BUILTIN_PRESETS,
    CAPABILITIES,
    DEFAULT_PRESET,
    FULL_ACCESS,
    READ_ONLY,
    WORKSPACE_WRITE,
    Capability,
    Level,
    PermissionPreset,
    commands_text,
    get_preset,
    preset_table,
    presets_within,
    unsandboxed,
)

__all__ = [
    "BUILTIN_PRESETS",
    "CAPABILITIES",
    "DEFAULT_PRESET",
    "FULL_ACCESS",
    "READ_ONLY",
    "WORKSPACE_WRITE",
    "Capability",
    "Decision",
    "Level",
    "PermissionPreset",
    "commands_text",
    "decide",
    "get_preset",
    "preset_table",
    "presets_within",
    "unsandboxed",
]
