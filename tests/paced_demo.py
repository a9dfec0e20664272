"""The command line with a slow demo model: a script the tests start instead of ``agentsession``.

``python tests/paced_demo.py SECONDS ARGS…`` runs ``agentsession ARGS…`` whose offline demo model
(``scripted:demo``) pauses ``SECONDS`` before each event, so a test can watch a reply that is
still streaming, or interrupt it. The pacing lives here, with the tests: the package's own demo
model reads no setting for it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from agentsession.cli import demo
from agentsession.providers.base import Model, ModelEvent, ModelProfile
from agentsession.request import Request

__all__ = ["PACED", "Paced"]

#: This script, to start as ``[sys.executable, str(PACED), SECONDS, *argv]``.
PACED = Path(__file__)


class Paced:
    """A model with a pause before each of its events (a slow reply, on purpose)."""

    def __init__(self, model: Model, delay: float) -> None:
        self._model = model
        self._delay = delay

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def profile(self) -> ModelProfile:
        return self._model.profile

    async def stream(self, request: Request) -> AsyncIterator[ModelEvent]:
        async for event in self._model.stream(request):
            await asyncio.sleep(self._delay)
            yield event


def _main() -> None:
    seconds, *argv = sys.argv[1:]
    made = demo.demo_model

    def paced() -> Model:
        return Paced(made(), float(seconds))

    # The command line looks the demo model up when it resolves ``scripted:demo``.
    demo.demo_model = paced
    from agentsession.cli import main

    main(argv)


if __name__ == "__main__":
    _main()
