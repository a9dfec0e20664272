"""The benchmark scripts as modules, for tests that drive the provider simulator through the SDKs.

The scripts import each other by plain name (``from provider_shapes import …``), so they are
loaded with ``benchmarks/`` on the path for the time of the import, each under its own name.
"""

from __future__ import annotations

import importlib.util
import sys
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

from agentsession import Config, Model, Runtime, Session, SQLiteStore

__all__ = [
    "BENCHMARKS",
    "IDLE_PAUSES",
    "load_benchmarks",
    "prompted_with_pauses",
    "sim_runtime",
    "spied_simulator",
]

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


#: Five prompts a session sends on the idle tests' virtual clock: two quick, three 40 minutes on.
IDLE_PAUSES = (0, 30, 2400, 2500, 2600)


def sim_runtime(
    bench: ModuleType, model: Model, folder: str, clock: dict[str, datetime], config: Config
) -> Runtime:
    """A runtime on ``bench``'s application prompt, a SQLite file in ``folder`` and ``clock``."""
    return Runtime(
        store=SQLiteStore(Path(folder) / "s.db"),
        model=model,
        project_dir=Path(folder),
        instructions=bench.APP_PROMPT,
        clock=lambda: clock["now"],
        config=config,
    )


async def prompted_with_pauses(session: Session, clock: dict[str, datetime]) -> None:
    """``session`` asked one question after each of ``IDLE_PAUSES``, moving ``clock`` on."""
    for n, pause in enumerate(IDLE_PAUSES):
        clock["now"] += timedelta(seconds=pause)
        await session.prompt(f"question {n}")


def spied_simulator(
    bench: ModuleType, clock: dict[str, datetime]
) -> tuple[Any, list[dict[str, Any]]]:
    """``bench``'s simulator on ``clock``, and the list of every OpenAI body it is sent."""
    sim = bench.Simulator(bench.policy, bench.SIM_PRICES, lambda: clock["now"])
    bodies: list[dict[str, Any]] = []
    answer = sim.openai

    def spy(shape: str, body: dict[str, Any]) -> dict[str, Any]:
        bodies.append(body)
        return answer(shape, body)  # type: ignore[no-any-return]

    sim.openai = spy
    return sim, bodies
