"""The world the provider-compaction tests share: the simulator of ``benchmarks/`` running on
loopback, a clock it and the runtime both read, and the one tool the sessions call.

Each provider's test file subclasses ``SimWorld`` with its own ``runtime`` (model, config) and
gets the running world from ``running_world``; what differs between providers stays in its file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from types import ModuleType
from typing import Any, TypeVar

import pytest

import agentsession as ags

from .benchmark_modules import load_benchmarks

__all__ = ["SimWorld", "load_sim_bench", "lookup", "running_world"]


def load_sim_bench(sdk: str) -> ModuleType:
    """The simulator and the cache benchmark's policy; skipped without the provider's SDK."""
    pytest.importorskip(sdk)
    return load_benchmarks("provider_sim", "provider_cache")


@ags.tool
def lookup(n: int) -> str:
    """Look a record up."""
    return f"record {n}:\n" + "".join(f"line {i}: value {n * i}\n" for i in range(80))


class SimWorld:
    """A simulator, its URL and one clock the runtime and the simulated cache share."""

    def __init__(self, bench: ModuleType, url: str, sim: Any) -> None:
        self.bench, self.url, self.sim = bench, url, sim
        self.now = datetime(2026, 3, 1, 9, 0).astimezone()

    async def turns(self, session: ags.Session, *texts: str) -> None:
        for text in texts:
            self.now += timedelta(seconds=20)
            await session.prompt(text)

    async def two_turns_compacted(self, session: ags.Session) -> None:
        """Two turns that each call the tool, then a compaction that happens."""
        await self.turns(session, "check record 1", "check record 2")
        assert await session.compact() is True


W = TypeVar("W", bound=SimWorld)


def running_world(
    bench: ModuleType,
    make: Callable[[ModuleType, str, Any], W],
    replies: Mapping[str, str] | None = None,
) -> Iterator[W]:
    """The world ``make`` builds on a running simulator, for the time of one test.

    The simulator answers a local summary request with a short summary, a prompt holding one of
    ``replies``' keys with its text, and everything else as the cache benchmark's policy does.
    """
    sim_module = sys.modules["provider_sim"]

    def policy(shape: str, text: str, tool_turn: bool) -> Any:
        if "comes from the agent runtime" in text:  # a local summary request
            return sim_module.Reply(text="## Goal\nCheck records.")
        for key, reply in (replies or {}).items():
            if key in text:
                return sim_module.Reply(text=reply)
        return bench.policy(shape, text, tool_turn)

    made: dict[str, W] = {}
    sim = sim_module.Simulator(policy, bench.SIM_PRICES, lambda: made["world"].now)
    with sim_module.running(sim) as url:
        made["world"] = make(bench, url, sim)
        yield made["world"]
