"""The component registry: deterministic order, unique keys, scoped replayable plugin scopes.

Built-in components keep their declaration order; plugin components follow in lexicographic key
order, so the rendered context does not depend on registration timing. A duplicate key fails
assembly with ``UsageError``, and the ``core.`` namespace belongs to the runtime. Plugins
register through a ``PluginScope`` — one per name, the same object for the same name — whose
keys must sit under ``plugin.<name>.``: ``scope.replay(comps)`` replaces everything the scope
registered, so a hot reload that drops a component removes it (the next boundary announces the
removal once, with the component's own removal text), one that keeps it changes nothing, and a
new one is announced once. Nothing here samples a component: sources are read lazily at the
boundary.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from ..errors import UsageError
from .component import ContextComponent

__all__ = ["ComponentHandle", "ComponentRegistry", "PluginScope"]

_PLUGIN_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class ComponentHandle:
    """A registration; ``remove()`` unregisters the component (idempotent)."""

    def __init__(self, registry: ComponentRegistry, component: ContextComponent) -> None:
        self._registry = registry
        self.component = component

    @property
    def key(self) -> str:
        """The registered component's key."""
        return self.component.key

    def remove(self) -> None:
        """Unregister; the next safe boundary tells the model the component no longer applies."""
        self._registry._remove(self.component)


class PluginScope:
    """All components one plugin registered; ``replay`` swaps them in one step."""

    def __init__(self, registry: ComponentRegistry, name: str) -> None:
        self._registry = registry
        self.name = name
        self._handles: dict[str, ComponentHandle] = {}

    @property
    def keys(self) -> list[str]:
        """Keys this scope currently holds, sorted."""
        return sorted(self._handles)

    @property
    def prefix(self) -> str:
        """The key namespace of this plugin: ``plugin.<name>.``."""
        return f"plugin.{self.name}."

    def _check(self, component: ContextComponent) -> None:
        if not isinstance(component, ContextComponent):
            raise UsageError(f"expected a ContextComponent, got {type(component).__name__}")
        if not component.key.startswith(self.prefix):
            raise UsageError(
                f"plugin {self.name!r} may only register keys under {self.prefix!r};"
                f" got {component.key!r}"
            )

    def register(self, component: ContextComponent) -> ComponentHandle:
        """Register one component under this scope.

        Args:
            component: The component; its key must start with this scope's ``prefix``.

        Raises:
            UsageError: The key is outside the scope or a duplicate.
        """
        self._check(component)
        handle = self._registry.register(component)
        self._handles[component.key] = handle
        return handle

    def replay(self, components: Iterable[ContextComponent]) -> None:
        """Replace this scope's components with ``components`` (a plugin reload).

        New keys are added, unchanged ones stay (nothing is announced for them), and keys no
        longer listed are removed; the next boundary announces each removal once, with the
        component's own removal text.

        Args:
            components: Every component the plugin has now; keys start with the scope's ``prefix``.

        Raises:
            UsageError: Two components share a key, or a key is outside the scope or taken.
        """
        new = list(components)
        for comp in new:
            self._check(comp)
        keys = [c.key for c in new]
        if len(set(keys)) != len(keys):
            raise UsageError(f"plugin {self.name}: duplicate component keys in {keys}")
        with self._registry._lock:
            for comp in new:
                owner = self._registry._plugins.get(comp.key)
                if owner is not None and comp.key not in self._handles:
                    raise UsageError(f"duplicate context component key {comp.key!r}")
            for handle in self._handles.values():
                self._registry._plugins.pop(handle.key, None)
            self._handles = {}
            for comp in new:
                self._registry._plugins[comp.key] = comp
                self._handles[comp.key] = ComponentHandle(self._registry, comp)

    def clear(self) -> None:
        """Remove every component of this scope (plugin unloaded)."""
        self.replay(())


class ComponentRegistry:
    """Built-ins in declaration order, then plugin components by key."""

    def __init__(self, builtins: Iterable[ContextComponent] = ()) -> None:
        self._lock = threading.RLock()
        self._builtins: list[ContextComponent] = []
        self._plugins: dict[str, ContextComponent] = {}
        self._scopes: dict[str, PluginScope] = {}
        for comp in builtins:
            self.add_builtin(comp)

    def _has(self, key: str) -> bool:
        return key in self._plugins or any(c.key == key for c in self._builtins)

    def add_builtin(self, component: ContextComponent) -> None:
        """Append a built-in component (declaration order is kept)."""
        with self._lock:
            if self._has(component.key):
                raise UsageError(f"duplicate context component key {component.key!r}")
            self._builtins.append(component)

    def register(self, component: ContextComponent) -> ComponentHandle:
        """Register a plugin component; ``UsageError`` for a duplicate or a ``core.`` key."""
        if not isinstance(component, ContextComponent):
            raise UsageError(f"expected a ContextComponent, got {type(component).__name__}")
        if component.key.startswith("core."):
            raise UsageError(
                f"context component key {component.key!r}: the core. namespace belongs to the"
                " runtime's own components; use plugin.<name>.<key>"
            )
        with self._lock:
            if self._has(component.key):
                raise UsageError(f"duplicate context component key {component.key!r}")
            self._plugins[component.key] = component
        return ComponentHandle(self, component)

    def scope(self, name: str) -> PluginScope:
        """The scope of plugin ``name``: the same object every time for the same name."""
        if not isinstance(name, str) or not _PLUGIN_NAME.match(name):
            raise UsageError(f"plugin name {name!r} must match {_PLUGIN_NAME.pattern}")
        with self._lock:
            scope = self._scopes.get(name)
            if scope is None:
                scope = self._scopes[name] = PluginScope(self, name)
            return scope

    def _remove(self, component: ContextComponent) -> None:
        with self._lock:
            if self._plugins.get(component.key) is component:
                del self._plugins[component.key]

    def components(self) -> list[ContextComponent]:
        """Every component in rendering order."""
        return [*self.builtins(), *self.plugins()]

    def builtins(self) -> list[ContextComponent]:
        """The built-in components, in declaration order."""
        with self._lock:
            return list(self._builtins)

    def plugins(self) -> list[ContextComponent]:
        """The plugin components, in lexicographic key order."""
        with self._lock:
            return [self._plugins[k] for k in sorted(self._plugins)]
