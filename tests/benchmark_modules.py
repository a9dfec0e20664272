"""The benchmark scripts as modules, for tests that drive the provider simulator through the SDKs.

The scripts import each other by plain name (``from provider_shapes import …``), so they are
loaded with ``benchmarks/`` on the path for the time of the import, each under its own name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["BENCHMARKS", "load_benchmarks"]

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_benchmarks(*names: str) -> ModuleType:
    """Load the scripts ``names`` in order (a later one may import an earlier); the last."""
    assert names
    sys.path.insert(0, str(BENCHMARKS))
    try:
        for name in names:
            module = _load(name)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module
