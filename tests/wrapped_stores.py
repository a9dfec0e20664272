"""Two more store wrappers for session scenario tests, on the delegating base of tests/store.

``Refusing`` refuses the appends a predicate picks (the database says no); ``Slow`` commits each
append a while after it was asked for, so a caller can be cancelled mid-commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from agentsession.errors import StoreError
from agentsession.log import LogEntry, Record
from agentsession.store.base import Store

from .store.wrappers import CountingStore, DelegatingStore

__all__ = ["CountingStore", "Refusing", "Slow"]


class Refusing(DelegatingStore):
    """Refuses every append for which ``refuse(entries)`` says so."""

    def __init__(self, inner: Store, refuse: Callable[[Sequence[LogEntry]], bool]) -> None:
        super().__init__(inner)
        self.refuse = refuse

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        if self.refuse(entries):
            raise StoreError("disk I/O error (refused on purpose)")
        return await super().append(session_id, expected_seq, entries)


class Slow(DelegatingStore):
    """Commits each append ``delay`` seconds after it was asked for (while ``slow`` is set).

    ``committing`` is set when a slow append starts: a test cancels its caller then, mid-commit,
    however long the caller took to get there.
    """

    def __init__(self, inner: Store, delay: float) -> None:
        super().__init__(inner)
        self.delay = delay
        self.slow = False
        self.committing = asyncio.Event()

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        if self.slow:
            self.committing.set()
            await asyncio.sleep(self.delay)
        return await super().append(session_id, expected_seq, entries)
