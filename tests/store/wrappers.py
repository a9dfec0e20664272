"""Store wrappers for tests: ordinary ``Store`` implementations that delegate to a real store.

``CountingStore`` counts the records the inner store decoded and handed back (what reading
costs, measured from outside any store). ``FaultyStore`` fails chosen writes with ``StoreError``,
either before the inner store sees them (the database refused: nothing written) or after they
committed (the acknowledgement was lost: written, yet the caller saw an error).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import Literal

from agentsession.errors import StoreError
from agentsession.log import LogEntry, Record
from agentsession.store import DEFAULT_LEASE_TTL, Lease, SessionInfo, Store

#: The methods that change what a session holds: the commit points a fault can hit.
WRITES = ("create_session", "append", "set_title", "delete_session", "fork_session")


class DelegatingStore:
    """Every ``Store`` method passed to ``inner`` through ``_before`` / ``_after`` hooks."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    async def _before(self, method: str) -> None:
        self.calls[method] += 1

    async def _after(self, method: str) -> None:
        pass

    async def create_session(self, info: SessionInfo, entries: Sequence[LogEntry] = ()) -> None:
        await self._before("create_session")
        await self.inner.create_session(info, entries)
        await self._after("create_session")

    async def get_session(self, session_id: str) -> SessionInfo:
        await self._before("get_session")
        return await self.inner.get_session(session_id)

    async def list_sessions(self) -> list[SessionInfo]:
        await self._before("list_sessions")
        return await self.inner.list_sessions()

    async def set_title(self, session_id: str, title: str) -> None:
        await self._before("set_title")
        await self.inner.set_title(session_id, title)
        await self._after("set_title")

    async def delete_session(self, session_id: str) -> None:
        await self._before("delete_session")
        await self.inner.delete_session(session_id)
        await self._after("delete_session")

    async def fork_session(self, source_id: str, info: SessionInfo, upto_seq: int) -> SessionInfo:
        await self._before("fork_session")
        forked = await self.inner.fork_session(source_id, info, upto_seq)
        await self._after("fork_session")
        return forked

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        await self._before("append")
        records = await self.inner.append(session_id, expected_seq, entries)
        await self._after("append")
        return records

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        await self._before("read")
        records = await self.inner.read(session_id, start, end, kinds)
        self.decoded(len(records))
        return records

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        await self._before("last")
        record = await self.inner.last(session_id, kinds)
        self.decoded(0 if record is None else 1)
        return record

    def decoded(self, count: int) -> None:
        """Called with the number of records each read returned."""

    async def acquire_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        await self._before("acquire_lease")
        done = await self.inner.acquire_lease(session_id, owner, ttl)
        await self._after("acquire_lease")
        return done

    async def renew_lease(
        self, session_id: str, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> bool:
        await self._before("renew_lease")
        done = await self.inner.renew_lease(session_id, owner, ttl)
        await self._after("renew_lease")
        return done

    async def release_lease(self, session_id: str, owner: str) -> bool:
        await self._before("release_lease")
        done = await self.inner.release_lease(session_id, owner)
        await self._after("release_lease")
        return done

    async def lease_of(self, session_id: str) -> Lease | None:
        await self._before("lease_of")
        return await self.inner.lease_of(session_id)

    async def close(self) -> None:
        await self.inner.close()


class CountingStore(DelegatingStore):
    """Counts the records every read decoded (``records``) and the calls per method."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.records = 0

    def decoded(self, count: int) -> None:
        self.records += count


class FaultyStore(DelegatingStore):
    """Fails the writes numbered in ``fail_at`` (1 = the first write) with ``StoreError``.

    ``when="before"``: the inner store never sees the write. ``when="after"``: the write
    committed, then the caller gets the error, as when a connection drops during ``COMMIT``.
    ``methods`` are the writes that count (default: every log or session-row change).
    """

    def __init__(
        self,
        inner: Store,
        fail_at: Collection[int] = (),
        *,
        when: Literal["before", "after"] = "before",
        methods: Collection[str] = WRITES,
    ) -> None:
        super().__init__(inner)
        self.fail_at = set(fail_at)
        self.when = when
        self.methods = set(methods)
        self.writes = 0
        self.failed: list[tuple[int, str]] = []

    def _fail(self, method: str) -> None:
        self.failed.append((self.writes, method))
        raise StoreError(f"injected failure of write {self.writes} ({method})")

    async def _before(self, method: str) -> None:
        await super()._before(method)
        if method not in self.methods:
            return
        self.writes += 1
        if self.when == "before" and self.writes in self.fail_at:
            self._fail(method)

    async def _after(self, method: str) -> None:
        if method in self.methods and self.when == "after" and self.writes in self.fail_at:
            self._fail(method)
