"""Ordinary Store implementations that wrap a real store, for scenario tests.

They delegate every call to the wrapped store and add one behaviour each: refusing chosen writes,
slowing writes down (so a caller can be cancelled mid-commit) or counting what is read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from agentsession.errors import StoreError
from agentsession.log import LogEntry, Record
from agentsession.store.base import SessionInfo, Store


class Wrapped:
    """Delegates everything to ``inner``."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def create_session(self, info: SessionInfo) -> None:
        await self.inner.create_session(info)

    async def get_session(self, session_id: str) -> SessionInfo:
        return await self.inner.get_session(session_id)

    async def list_sessions(self) -> list[SessionInfo]:
        return await self.inner.list_sessions()

    async def set_title(self, session_id: str, title: str) -> None:
        await self.inner.set_title(session_id, title)

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        return await self.inner.append(session_id, expected_seq, entries)

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        return await self.inner.read(session_id, start, end, kinds)

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        return await self.inner.last(session_id, kinds)

    async def close(self) -> None:
        await self.inner.close()


class Refusing(Wrapped):
    """Refuses every append for which ``refuse(entries)`` says so (the database says no)."""

    def __init__(self, inner: Store, refuse: Callable[[Sequence[LogEntry]], bool]) -> None:
        super().__init__(inner)
        self.refuse = refuse

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        if self.refuse(entries):
            raise StoreError("disk I/O error (refused on purpose)")
        return await self.inner.append(session_id, expected_seq, entries)


class Slow(Wrapped):
    """Commits each append ``delay`` seconds after it was asked for (while ``slow`` is set)."""

    def __init__(self, inner: Store, delay: float) -> None:
        super().__init__(inner)
        self.delay = delay
        self.slow = False

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        if not self.slow:
            return await self.inner.append(session_id, expected_seq, entries)
        await asyncio.sleep(self.delay)
        return await self.inner.append(session_id, expected_seq, entries)


class Counting(Wrapped):
    """Counts the records every read returns."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.records_read = 0

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        records = await self.inner.read(session_id, start, end, kinds)
        self.records_read += len(records)
        return records

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        found = await self.inner.last(session_id, kinds)
        self.records_read += found is not None
        return found
