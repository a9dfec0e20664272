"""The public surface as text: every name in ``agentsession.__all__`` (and ``MODULES``), signatures.

``test_public_api.py`` compares it with ``tests/fixtures/public_api.txt``, so any change to the
public surface shows in review. After an intended change, write the file anew with
``python -m tests.public_api > tests/fixtures/public_api.txt``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Iterator
from types import ModuleType

import agentsession


def _signature(value: object) -> str:
    try:
        return str(inspect.signature(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"


def _member(name: str, value: object) -> str | None:
    """The line of one member: a property, a static or class method, or a method's signature."""
    if isinstance(value, property):
        return f"  .{name}: property"
    if isinstance(value, (staticmethod, classmethod)):
        return f"  .{name}{_signature(value.__func__)}  [{type(value).__name__}]"
    if inspect.isfunction(value):
        kind = "async " if inspect.iscoroutinefunction(value) else ""
        return f"  .{name}{_signature(value)}  {kind}".rstrip()
    return None


def _members(cls: type) -> Iterator[str]:
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    for name, value in sorted(vars(cls).items()):
        line = None if name.startswith("_") or name in fields else _member(name, value)
        if line is not None:
            yield line
    # A member a base of the package gives is pinned as fully as the class's own, with where it
    # comes from: moving a method into a mixin changes that mark, never its pinned signature.
    for base in cls.__mro__[1:]:
        if base.__module__.startswith("agentsession"):
            for name, value in sorted(vars(base).items()):
                public = not name.startswith("_") and name not in vars(cls)
                if public and (callable(value) or isinstance(value, property)):
                    line = _member(name, value) or f"  .{name}"
                    yield f"{line} (from {base.__name__})"


#: Public modules beside the top-level namespace, pinned with their names prefixed.
MODULES = ("agentsession.durable",)


def surface() -> list[str]:
    """One block per public name: what it is and, for callables, its signature."""
    lines = _names(agentsession, "")
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        lines.extend(_names(module, f"{module_name}."))
    return lines


def _names(module: ModuleType, prefix: str) -> list[str]:
    lines = []
    for short in module.__all__:
        value = getattr(module, short)
        name = f"{prefix}{short}"
        if inspect.isclass(value):
            kind = "exception" if issubclass(value, BaseException) else "class"
            lines.append(f"{kind} {name}{_signature(value)}")
            lines.extend(_members(value))
        elif inspect.isfunction(value):
            kind = "async def" if inspect.iscoroutinefunction(value) else "def"
            lines.append(f"{kind} {name}{_signature(value)}")
        else:
            lines.append(f"{name}: {type(value).__name__}")
    return lines


if __name__ == "__main__":
    print("\n".join(surface()))
