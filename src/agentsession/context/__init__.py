"""The System Context: components, registry, epochs and checkpoint comparison."""

from __future__ import annotations

from .builtins import date_component, environment_component
from .component import (
    ABSENT,
    UNAVAILABLE,
    Absent,
    ContextComponent,
    LoadResult,
    Rendered,
    Unavailable,
    content_hash,
)
from .engine import ComponentState, diff, effective_state, fresh_baseline, render_update
from .registry import ComponentHandle, ComponentRegistry, PluginScope

__all__ = [
    "ABSENT",
    "UNAVAILABLE",
    "Absent",
    "ComponentHandle",
    "ComponentRegistry",
    "ComponentState",
    "ContextComponent",
    "LoadResult",
    "PluginScope",
    "Rendered",
    "Unavailable",
    "content_hash",
    "date_component",
    "diff",
    "effective_state",
    "environment_component",
    "fresh_baseline",
    "render_update",
]
