"""A turn that is running, for tests: a tool call or a model reply held until the test lets go.

Both say when they started (an event the test awaits), so a test acts during the turn without
sleeping or timing anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import agentsession as ags

__all__ = ["Gated", "HeldCall", "Hold"]


class Hold:
    """A tool call that waits until the test lets it go (and says when it started)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go = asyncio.Event()

    def tool(self) -> ags.Tool:
        hold = self

        @ags.tool
        async def work(step: str) -> str:
            """Do one step of the work.

            Args:
                step: Which step.
            """
            hold.started.set()
            await hold.go.wait()
            return f"did {step}"

        return work


class Gated(ags.ScriptedModel):
    """Holds its first reply until ``release`` is set: a turn that is running."""

    def __init__(self, name: str = "scripted") -> None:
        super().__init__(["held answer", "next answer", "third"], name=name)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def stream(self, request: ags.Request) -> AsyncIterator[ags.providers.ModelEvent]:
        if not self.release.is_set():
            self.entered.set()
            await self.release.wait()
        async for event in super().stream(request):
            yield event


class HeldCall(ags.ScriptedModel):
    """Answers ``reply(request)``; holds the first request ``held`` picks until ``go`` is set.

    ``entered`` is set when that request arrives: the call is then in flight.
    """

    def __init__(
        self,
        reply: Callable[[ags.Request], str],
        held: Callable[[ags.Request], bool],
        **kwargs: Any,
    ) -> None:
        super().__init__(reply, **kwargs)
        self._held = held
        self.entered = asyncio.Event()
        self.go = asyncio.Event()

    async def stream(self, request: ags.Request) -> AsyncIterator[ags.providers.ModelEvent]:
        if not self.go.is_set() and self._held(request):
            self.entered.set()
            await self.go.wait()
        async for event in super().stream(request):
            yield event
