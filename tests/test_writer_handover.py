"""The writer's append on a store that hands a write over at once (SQLite's ``append_soon``).

The write is not run as a task of the writer's own: the writer waits for the store's future.
Cancelling the caller must still leave the write to finish and its outcome to the writer, so
the next write neither repeats it nor conflicts with it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentsession.engine.writer import LogWriter
from agentsession.errors import StoreError
from agentsession.log import AssistantEntry, Record, UserEntry, now
from agentsession.request import ToolCall
from agentsession.store import SessionInfo, SQLiteStore
from agentsession.store.base import Store
from agentsession.store.fast import fast_paths


def new_info(session_id: str) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp)


class PlainStore(SQLiteStore):
    """The same store without the fast path: the writer runs its appends as tasks."""

    def __init__(self, path: Path, **options: Any) -> None:
        super().__init__(path, **options)
        self.fast_paths = replace(self.fast_paths, append_soon=None)


class WatchedStore(SQLiteStore):
    """A subclass that watches its writes: they must keep going through its ``append``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.appended = 0

    async def append(self, session_id: str, expected_seq: int, entries: Any) -> list[Record]:
        self.appended += 1
        return await super().append(session_id, expected_seq, entries)


def test_only_a_store_that_declares_it_hands_writes_over(tmp_path: Path) -> None:
    fast, plain = SQLiteStore(tmp_path / "a.db"), PlainStore(tmp_path / "b.db")
    assert fast_paths(fast).append_soon is not None
    assert fast_paths(plain).append_soon is None
    assert fast_paths(WatchedStore(tmp_path / "c.db")).append_soon is None


async def test_a_subclass_that_overrides_append_sees_every_write(tmp_path: Path) -> None:
    store = WatchedStore(tmp_path / "s.db")
    try:
        await store.create_session(new_info("s"))
        writer = LogWriter(store, "s", 0, [], [])
        await writer.append([UserEntry("one")])
        await writer.commit([AssistantEntry("two")])
        assert store.appended == 2
    finally:
        await store.close()


@pytest.mark.parametrize("kind", [SQLiteStore, PlainStore])
async def test_a_cancelled_append_is_taken_by_the_next_one(
    tmp_path: Path, kind: type[SQLiteStore]
) -> None:
    store: Store = kind(tmp_path / "s.db", busy_timeout=120)
    try:
        await store.create_session(new_info("s"))
        writer = LogWriter(store, "s", 0, [], [])
        # Another program holds the write lock: the append cannot be done when it is cancelled.
        other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        task = asyncio.create_task(writer.append([UserEntry("hello")]))
        for _ in range(3):
            await asyncio.sleep(0)  # the write is handed over and waited for
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        other.execute("COMMIT")
        other.close()
        records = await writer.append([AssistantEntry("hi")])
        assert [r.seq for r in records] == [1]  # the cancelled write's outcome was taken
        assert writer.next_seq == 2
        assert [r.entry.kind for r in await store.read("s")] == ["user", "assistant"]
        assert [m.role for m in writer.transcript] == ["user", "assistant"]
    finally:
        await store.close()


async def test_an_entry_that_cannot_be_stored_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        await store.create_session(new_info("s"))
        writer = LogWriter(store, "s", 0, [], [])
        unstorable = ToolCall("f", {"x": object()})
        with pytest.raises(StoreError):
            await writer.append([UserEntry("ok"), AssistantEntry(tool_calls=(unstorable,))])
        assert await store.read("s") == []
        records = await writer.append([UserEntry("fine")])
        assert [r.seq for r in records] == [0]
    finally:
        await store.close()


class AnsweredStore(SQLiteStore):
    """Cancels the writer's task in the same round the store's answer arrives, before it resumes."""

    task: asyncio.Task[Any] | None = None

    def _append_soon(self, session_id: str, expected_seq: int, entries: Any) -> Any:
        future = super()._append_soon(session_id, expected_seq, entries)
        task = self.task
        if task is not None:  # runs before the task's own wake-up: both are queued in order
            future.add_done_callback(lambda _: task.cancel())
        return future


@pytest.mark.parametrize("resync", [True, False])
async def test_a_cancellation_after_the_store_answered_keeps_the_write_once(
    tmp_path: Path, resync: bool
) -> None:
    store = AnsweredStore(tmp_path / "s.db")
    try:
        await store.create_session(new_info("s"))
        writer = LogWriter(store, "s", 0, [], [])
        await writer.append([UserEntry("first")])
        store.task = asyncio.create_task(writer.append([AssistantEntry("answer")]))
        with pytest.raises(asyncio.CancelledError):
            await store.task
        store.task = None
        if resync:  # what a cancelled session does next: catch up, then write on
            taken = await writer.resync()
            assert [(r.seq, r.entry.kind) for r in taken] == [(1, "assistant")]
            assert writer.next_seq == 2
        records = await writer.append([UserEntry("again")])
        assert [r.seq for r in records] == [2]
        assert [r.entry.kind for r in await store.read("s")] == ["user", "assistant", "user"]
        assert [m.role for m in writer.transcript] == ["user", "assistant", "user"]
        view = await writer.epoch_view()
        assert [r.seq for r in view.records] == [0, 1, 2]
    finally:
        await store.close()
