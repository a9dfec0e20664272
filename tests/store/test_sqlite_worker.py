"""The SQLite store's own worker thread: calls run in order, whole, and the thread ends."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
from pathlib import Path

import pytest

from agentsession.errors import StoreError
from agentsession.log import UserEntry, now
from agentsession.store import SessionInfo, SQLiteStore
from agentsession.store._worker import Worker

THREAD = "agentsession-sqlite"


def new_info(session_id: str) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp)


def store_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == THREAD)


async def test_a_cancelled_append_is_written_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db", busy_timeout=120)
    try:
        await store.create_session(new_info("s"))
        # Another program holds the write lock, so the append cannot be done when it is cancelled.
        other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        task = asyncio.create_task(store.append("s", 0, [UserEntry("hello")]))
        await asyncio.sleep(0)  # the task hands the write over and waits
        task.cancel()
        other.execute("COMMIT")
        other.close()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Handed over is handed over: it committed, once, before anything handed over later.
        records = await store.read("s")
        assert [(r.seq, r.entry) for r in records] == [(0, UserEntry("hello"))]
        assert (await store.get_session("s")).next_seq == 1
        await store.append("s", 1, [UserEntry("again")])
        assert len(await store.read("s")) == 2
    finally:
        await store.close()


async def test_calls_run_in_the_order_they_were_handed_over(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        await store.create_session(new_info("s"))
        texts = [f"prompt {i}" for i in range(40)]
        # All handed over before the first runs: each expects the seq the previous one leaves.
        await asyncio.gather(
            *(store.append("s", seq, [UserEntry(text)]) for seq, text in enumerate(texts))
        )
        records = await store.read("s")
        assert [r.entry for r in records] == [UserEntry(t) for t in texts]
    finally:
        await store.close()


async def test_close_ends_the_thread_and_later_calls_fail(tmp_path: Path) -> None:
    before = store_threads()
    store = SQLiteStore(tmp_path / "s.db")
    assert store_threads() == before  # started on first use, not at open
    await store.create_session(new_info("s"))
    assert store_threads() == before + 1
    await store.close()
    assert store_threads() == before
    await store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        await store.read("s")
    with pytest.raises(StoreError, match="closed"):
        await store.append("s", 0, [UserEntry("late")])
    assert store_threads() == before


class Owner:
    """Something a worker serves; the worker must not keep it alive."""


def test_an_unfinished_worker_ends_with_its_owner() -> None:
    owner = Owner()
    worker = Worker(owner, "test-worker-owner", lambda: RuntimeError("finished"))
    assert asyncio.run(worker.run(lambda: 7)) == 7
    (thread,) = [t for t in threading.enumerate() if t.name == "test-worker-owner"]
    del owner
    gc.collect()
    thread.join(timeout=120)
    assert not thread.is_alive()


def test_errors_reach_the_caller_and_a_closed_loop_stops_nothing() -> None:
    owner = Owner()
    worker = Worker(owner, "test-worker-loop", lambda: RuntimeError("finished"))
    gate = threading.Event()

    async def abandoned() -> None:
        # The loop ends (its task cancelled) while the call still blocks on the thread.
        task = asyncio.create_task(worker.run(gate.wait))
        await asyncio.sleep(0)
        task.cancel()

    asyncio.run(abandoned())
    gate.set()  # the call finishes for a loop that is closed by now

    async def later() -> int:
        with pytest.raises(ValueError, match="bad"):
            await worker.run(int, "bad")
        result = await worker.run(lambda: 42)
        await worker.finish(lambda: None)
        with pytest.raises(RuntimeError, match="finished"):
            await worker.run(lambda: 0)
        return result

    assert asyncio.run(later()) == 42
    assert not any(t.name == "test-worker-loop" for t in threading.enumerate())
