"""Every public method and function documents its arguments and what it raises (Google style).

The API reference is built from these docstrings (mkdocstrings), so a newcomer reads there what
each argument means and which errors to expect. For each name in ``agentsession.__all__``: the
function itself, or each public method, class method, static method and property of the class
(its own and those a base of the package gives it, as ``tests/public_api.py`` pins them).

- A callable with parameters has an ``Args:`` section naming every parameter. A class the
  application constructs has one for its constructor's parameters, in the class's docstring
  or its ``__init__``'s (the reference shows them merged). Protocols, and the classes the
  package constructs for the application (``MADE_FOR_YOU``), have no constructor to document.
- A store's methods of the ``Store`` protocol are documented once, by ``Store`` (the stores'
  reference says so); its fast paths (the capabilities it declares in ``fast_paths``, and
  ``count_now`` of ``read_now``) are the engine's seam, described in docs/storage.md, not API.
- A callable whose own body raises a named exception has a ``Raises:`` section naming it; one
  that raises an exception held in a variable has a ``Raises:`` section.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import agentsession as ags

SECTION = re.compile(r"^(?P<name>[A-Z][A-Za-z ]*):$")
ENTRY = re.compile(r"^    (?P<name>\*{0,2}\w+)(?: \([^)]*\))?:")


def public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    for name in ags.__all__:
        value = getattr(ags, name)
        if inspect.isfunction(value):
            yield name, value
        elif inspect.isclass(value):
            skipped = _documented_by_store(value)
            for member, fn in _members(value):
                if member not in skipped:
                    yield f"{name}.{member}", fn


def _documented_by_store(cls: type) -> set[str]:
    protocol = {name for name, _ in _members(ags.Store)}
    if cls is ags.Store or not all(hasattr(cls, name) for name in protocol):
        return set()
    declared = set(getattr(cls, "fast_paths", ()))
    return protocol | declared | ({"count_now"} if "read_now" in declared else set())


def _members(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("agentsession"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            elif isinstance(value, property):
                value = value.fget
            if inspect.isfunction(value):
                yield name, value


def sections(doc: str) -> dict[str, list[str]]:
    """The docstring's sections by title (``Args``, ``Raises``, ...): the names each lists."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in doc.splitlines():
        title = SECTION.match(line)
        if title:
            current = found.setdefault(title["name"], [])
        elif current is not None and line and not line.startswith(" "):
            current = None
        elif current is not None and (entry := ENTRY.match(line)):
            current.append(entry["name"].lstrip("*"))
    return found


def parameters(fn: Callable[..., Any]) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p not in ("self", "cls")]


def raised(fn: Callable[..., Any]) -> set[str]:
    """What the function's own body raises: class names, or ``?`` for an exception in a variable.

    A bare ``raise`` (re-raising what an ``except`` caught) and raises inside nested functions
    are not the function's own.
    """
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    top = tree.body[0]
    found: set[str] = set()
    pending: list[ast.AST] = list(ast.iter_child_nodes(top))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = ast.unparse(exc).rsplit(".", 1)[-1]
            found.add(name if name[:1].isupper() else "?")
        pending.extend(ast.iter_child_nodes(node))
    return found


# Handed out by the package, never constructed by an application.
MADE_FOR_YOU = {
    "Session": "runtime.create_session() / open_session()",
    "TurnStream": "session.stream()",
    "ComponentHandle": "runtime.register_component()",
    "PluginScope": "runtime.plugin()",
}


def constructed() -> Iterator[tuple[str, type]]:
    """The public classes with a constructor of the package's own that an application calls."""
    for name in ags.__all__:
        value = getattr(ags, name)
        if not inspect.isclass(value) or name in MADE_FOR_YOU or _is_protocol(value):
            continue
        owner = next(k for k in value.__mro__ if "__init__" in vars(k))
        generated = getattr(value, "__dataclass_fields__", None) is not None
        if owner.__module__.startswith("agentsession") and not generated:
            yield name, value


def _is_protocol(cls: type) -> bool:
    return bool(getattr(cls, "_is_protocol", False))


CALLABLES = sorted(public_callables())
CLASSES = sorted(constructed(), key=lambda item: item[0])


def test_the_public_callables_are_found() -> None:
    names = dict(CALLABLES)
    assert {"Runtime.create_session", "Session.prompt", "Store.append", "tool"} <= set(names)
    documented_by_store = {"SQLiteStore.append", "PostgresStore.read_view", "MemoryStore.read_now"}
    assert not documented_by_store & set(names)
    assert len(CALLABLES) > 100


@pytest.mark.parametrize(("name", "fn"), CALLABLES, ids=[name for name, _ in CALLABLES])
def test_a_public_callable_documents_its_arguments_and_raises(
    name: str, fn: Callable[..., Any]
) -> None:
    doc = inspect.getdoc(fn) or ""
    assert doc.strip(), f"{name} has no docstring"
    found = sections(doc)
    missing = [p for p in parameters(fn) if p not in found.get("Args", [])]
    assert not missing, f"{name}: Args: does not name {missing}"
    raises = raised(fn)
    if raises:
        assert "Raises" in found, f"{name} raises {sorted(raises)} but has no Raises: section"
        unnamed = sorted(raises - {"?"} - set(found["Raises"]))
        assert not unnamed, f"{name}: Raises: does not name {unnamed}"


def test_the_constructed_classes_are_found() -> None:
    names = {name for name, _ in CLASSES}
    assert {"Runtime", "SQLiteStore", "ScriptedModel", "ContextComponent"} <= names
    assert not names & {"Session", "Store", "Config"}


@pytest.mark.parametrize(("name", "cls"), CLASSES, ids=[name for name, _ in CLASSES])
def test_a_constructed_class_documents_its_arguments(name: str, cls: type) -> None:
    owner = next(k for k in cls.__mro__ if "__init__" in vars(k))
    docs = [inspect.getdoc(owner) or "", inspect.getdoc(vars(owner)["__init__"]) or ""]
    documented = [arg for doc in docs for arg in sections(doc).get("Args", [])]
    missing = [p for p in parameters(cls) if p not in documented]
    assert not missing, f"{name}({owner.__name__}): Args: does not name {missing}"


def test_the_section_parser_reads_google_style() -> None:
    doc = inspect.cleandoc(
        """Do a thing.

        Args:
            path: Where.
            *names (str): Which ones,
                over two lines.
            **options: How.

        Raises:
            UsageError: When misused.

        Returns:
            Something.
        """
    )
    assert sections(doc) == {
        "Args": ["path", "names", "options"],
        "Raises": ["UsageError"],
        "Returns": [],
    }


def test_the_raise_finder_sees_own_raises_only() -> None:
    def sample(flag: bool) -> None:
        def nested() -> None:
            raise KeyError("not ours")

        try:
            nested()
        except KeyError:
            raise
        if flag:
            raise ags.UsageError("ours")
        error = ValueError("held")
        raise error

    assert raised(sample) == {"UsageError", "?"}
