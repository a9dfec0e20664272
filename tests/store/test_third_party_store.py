"""A store written the way a third party would, from the public protocol alone, passes the
shipped contract suite; and the package's own stores pass it too."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.errors import ConflictError, SessionNotFoundError, StoreError, UsageError
from agentsession.log import LogEntry, Record, dump_entry, load_entry, now
from agentsession.store import Lease, SessionInfo
from agentsession.testing import StoreContract

Row = tuple[str, int, str]


class RowStore:
    """Sessions as rows of JSON text in dicts: every entry stored in its versioned form."""

    def __init__(self) -> None:
        self.infos: dict[str, SessionInfo] = {}
        self.rows: dict[str, list[Row]] = {}
        self.leases: dict[str, Lease] = {}
        self.closed = False

    def _open(self, session_id: str) -> SessionInfo:
        if self.closed:
            raise StoreError("the row store is closed")
        if session_id not in self.infos:
            raise SessionNotFoundError(session_id)
        return self.infos[session_id]

    def _records(self, session_id: str) -> list[Record]:
        return [
            Record(seq, load_entry(*row, session_id=session_id, seq=seq))
            for seq, row in enumerate(self.rows[session_id])
        ]

    async def create_session(self, info: SessionInfo, entries: Sequence[LogEntry] = ()) -> None:
        if self.closed:
            raise StoreError("the row store is closed")
        if info.id in self.infos:
            raise ConflictError(f"session {info.id} already exists")
        self.infos[info.id] = dataclasses.replace(info, next_seq=0)
        self.rows[info.id] = []
        await self.append(info.id, 0, entries)

    async def get_session(self, session_id: str) -> SessionInfo:
        return self._open(session_id)

    async def list_sessions(self) -> list[SessionInfo]:
        if self.closed:
            raise StoreError("the row store is closed")
        return sorted(self.infos.values(), key=lambda i: i.updated_at, reverse=True)

    async def set_title(self, session_id: str, title: str) -> None:
        self.infos[session_id] = dataclasses.replace(self._open(session_id), title=title)

    async def delete_session(self, session_id: str) -> None:
        self._open(session_id)
        del self.infos[session_id], self.rows[session_id]
        self.leases.pop(session_id, None)

    async def fork_session(self, source_id: str, info: SessionInfo, upto_seq: int) -> SessionInfo:
        rows = self.rows[self._open(source_id).id]
        if not 0 <= upto_seq < len(rows):
            raise UsageError(f"no entry {upto_seq} to fork at")
        if info.id in self.infos:
            raise ConflictError(f"session {info.id} already exists")
        self.rows[info.id] = rows[: upto_seq + 1]
        self.infos[info.id] = dataclasses.replace(info, next_seq=upto_seq + 1)
        return self.infos[info.id]

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        info = self._open(session_id)
        if expected_seq != info.next_seq:
            raise ConflictError(f"next seq is {info.next_seq}, not {expected_seq}")
        rows: list[Row] = []
        for number, entry in enumerate(entries):
            try:
                rows.append(dump_entry(entry))
            except Exception as exc:
                raise StoreError(f"entry {number} of the batch cannot be stored") from exc
        if not rows:
            return []
        self.rows[session_id].extend(rows)
        self.infos[session_id] = dataclasses.replace(
            info, next_seq=info.next_seq + len(rows), updated_at=now()
        )
        return self._records(session_id)[expected_seq:]

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | str | None = None,
    ) -> list[Record]:
        self._open(session_id)
        wanted = [kinds] if isinstance(kinds, str) else kinds
        return [
            r
            for r in self._records(session_id)[max(0, start) : end]
            if wanted is None or r.entry.kind in wanted
        ]

    async def last(self, session_id: str, kinds: Sequence[str] | str) -> Record | None:
        found = await self.read(session_id, kinds=kinds)
        return found[-1] if found else None

    async def acquire_lease(self, session_id: str, owner: str, ttl: float = 30.0) -> bool:
        self._open(session_id)
        held = self.leases.get(session_id)
        if held is not None and held.owner != owner and held.expires_at > time.time():
            return False
        self.leases[session_id] = Lease(session_id, owner, time.time() + ttl)
        return True

    async def renew_lease(self, session_id: str, owner: str, ttl: float = 30.0) -> bool:
        held = self.leases.get(session_id)
        if held is None or held.owner != owner:
            return False
        return await self.acquire_lease(session_id, owner, ttl)

    async def release_lease(self, session_id: str, owner: str) -> bool:
        held = self.leases.get(session_id)
        if held is None or held.owner != owner:
            return False
        del self.leases[session_id]
        return True

    async def lease_of(self, session_id: str) -> Lease | None:
        self._open(session_id)
        return self.leases.get(session_id)

    async def close(self) -> None:
        self.closed = True


class TestRowStore(StoreContract):
    def open_store(self) -> ags.Store:
        return RowStore()


class TestMemoryStore(StoreContract):
    def open_store(self) -> ags.Store:
        return ags.MemoryStore()


class TestSQLiteStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path: Path) -> None:
        self.folder = tmp_path

    def open_store(self) -> ags.Store:
        return ags.SQLiteStore(self.folder / "contract.db")


async def test_a_session_runs_on_the_third_party_store(tmp_path: Path) -> None:
    model = ags.ScriptedModel(["one", "two"])
    async with ags.Runtime(store=RowStore(), model=model, project_dir=tmp_path) as runtime:
        session = await runtime.create_session()
        await session.prompt("hi")
        await session.close()
        again = await runtime.open_session(session.id)
        assert (await again.prompt("more")).text == "two"
        assert [m.role for m in again.messages] == ["user", "assistant"] * 2


def test_only_a_declared_fast_path_is_used() -> None:
    from agentsession.store.fast import FastPaths, fast_paths

    assert fast_paths(RowStore()) == FastPaths()
    memory = ags.MemoryStore()
    assert fast_paths(memory).reads() is not None and fast_paths(memory).finds() is not None

    class Declaring(RowStore):  # the older form: names, and methods of those names
        fast_paths = frozenset({"read_now"})

        def read_now(self, *args: Any) -> list[Record]:
            raise AssertionError("not called here")

        def count_now(self, *args: Any) -> int:
            raise AssertionError("not called here")

    declaring = Declaring()
    found = fast_paths(declaring)
    assert found.read_now == declaring.read_now and found.count_now == declaring.count_now
    assert found.finds() is None and found.append_soon is None

    class Undeclared(RowStore):  # the declaration is what counts, not a method's presence
        read_now = Declaring.read_now

    assert fast_paths(Undeclared()).read_now is None
