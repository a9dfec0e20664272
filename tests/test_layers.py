"""The package's shape: no import cycles, and imports never point up the layers of the docs.

The layer list lives in docs/architecture.md; this test parses it, so the documented picture and
the code cannot drift apart. Every import counts, including those inside functions and under
``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "agentsession"
DOC = ROOT / "docs" / "architecture.md"


def documented_layers() -> dict[str, int]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- layers:", 1)[1].split("```", 2)[1]
    layers: dict[str, int] = {}
    for line in block.strip().splitlines():
        number, *names = line.split()
        for name in names:
            layers[name] = int(number)
    return layers


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room_of(module: str) -> str:
    """The layer entry a module belongs to: its first name below the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The package modules ``path`` imports; ``from X import y`` means ``X.y`` when that is one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            for alias in node.names:
                sub = f"{stem}.{alias.name}"
                found.add(sub if sub in modules else stem)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def module_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in SRC.rglob("*.py")}
    names = set(modules)
    return {
        name: {t for t in imports_of(path, names) if t in modules and t != name}
        for name, path in modules.items()
    }


def test_every_module_has_a_documented_layer() -> None:
    layers = documented_layers()
    missing = sorted({room_of(m) for m in module_graph()} - set(layers))
    assert missing == [], f"add these to the layer list in docs/architecture.md: {missing}"


def test_no_import_points_up() -> None:
    layers = documented_layers()
    upward = []
    for source, targets in module_graph().items():
        for target in targets:
            if layers[room_of(target)] < layers[room_of(source)]:
                upward.append(f"{source} -> {target}")
    assert upward == []


def test_no_import_cycles() -> None:
    graph = module_graph()
    # Packages' __init__ modules re-export their own submodules: an edge from a submodule to
    # its own package would be the cycle we look for, so keep all edges.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == []


def test_the_layer_list_names_only_existing_rooms() -> None:
    rooms = {room_of(m) for m in module_graph()}
    assert sorted(set(documented_layers()) - rooms) == []


def test_the_top_level_keeps_at_most_twenty_modules() -> None:
    # Folders follow the layers: what only the command line, the inspection or the session's
    # engine uses lives in its sub-package, so the top level shows the public modules.
    top = sorted(p.stem for p in SRC.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= 20, top
    packages = {p.parent.name for p in SRC.glob("*/__init__.py")}
    assert {"cli", "inspection", "engine"} <= packages
    assert not (SRC / "inspect.py").exists()  # it would shadow the standard library's module
