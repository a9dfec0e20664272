"""What a session needs from its runtime, passed in as one frozen value.

A ``Session`` never sees the ``Runtime``: the runtime builds ``SessionDeps`` once and every session
it creates or opens gets it. Mutable parts (the component registry, the token counter's
calibration) are shared objects the runtime owns; the value itself never changes. This keeps the
dependency pointing one way (runtime → session) and makes each part replaceable in tests by an
ordinary implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from datetime import datetime

from .._frozen import frozen
from ..budget import BudgetPolicy
from ..config import Config
from ..context.component import ContextComponent
from ..context.registry import ComponentRegistry
from ..ledger.idle import GapPool
from ..permissions import PermissionPreset
from ..providers.base import Model
from ..store.base import Store
from ..tools import Tool
from .titles import Titler

__all__ = ["SessionDeps"]


@frozen
class SessionDeps:
    """The runtime's parts a session uses: store, config, tools, components, budget, helpers."""

    store: Store
    config: Config
    tools: tuple[Tool, ...]
    registry: ComponentRegistry
    budget: BudgetPolicy
    titler: Titler
    summarizer: Model | None = None
    presets: Mapping[str, PermissionPreset] = field(default_factory=dict)
    clock: Callable[[], datetime] | None = None  # the runtime's clock (cache lifetimes)
    gap_pool: GapPool = field(default_factory=GapPool)  # every tended session's gaps (idle)

    def tool_named(self, name: str) -> Tool | None:
        """The application tool called ``name``, if any."""
        return next((t for t in self.tools if t.name == name), None)

    def components(self) -> Sequence[ContextComponent]:
        """Every component in rendering order, as registered right now."""
        return self.registry.components()
