"""The idle tests' virtual clock and the priced, usage-reporting model profile they share."""

from __future__ import annotations

from datetime import datetime, timedelta

import agentsession as ags

__all__ = ["PRICE", "REPORTING", "Clock"]

PRICE = ags.ModelPrice(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
REPORTING = ags.ModelProfile(provider="test", reports_usage=True)


class Clock:
    """The runtime's clock, moved by ``wait`` and never slept."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0).astimezone()

    def __call__(self) -> datetime:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
