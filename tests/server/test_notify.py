"""News of new entries: woken readers in this process, and across processes by PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.log import UserEntry, now
from agentsession.server.notify import Notifier
from agentsession.server.turns import TurnRun
from agentsession.store import SessionInfo


async def test_a_reader_is_woken_by_news_from_this_process(tmp_path: Path) -> None:
    store = ags.SQLiteStore(tmp_path / "db.sqlite")
    notifier = Notifier(store)
    notifier.poll_interval = 600  # only news can wake the reader in time
    seen = notifier.generation("s")
    reader = asyncio.create_task(notifier.wait("s", seen))
    await asyncio.sleep(0)
    assert not reader.done()
    await notifier.published("other")
    await asyncio.sleep(0)
    assert not reader.done()  # news of another session wakes nobody here
    await notifier.published("s")
    await asyncio.wait_for(reader, 120)
    assert notifier.generation("s") == seen + 1
    await store.close()


@pytest.mark.postgres
async def test_news_travels_between_processes_over_listen_notify(pg_dsn: str) -> None:
    """The database notifies each commit of entries (its trigger): no process has to say it."""
    writer_store, reader_store = ags.PostgresStore(pg_dsn), ags.PostgresStore(pg_dsn)
    reader = Notifier(reader_store)
    reader.poll_interval = 600  # only a notification can wake it within the test's bound
    await reader.start()
    try:
        await asyncio.wait_for(reader.listening.wait(), 120)
        stamp = now()
        # The channel is the database's: tests in other schemas notify it too, so the id must
        # be this test's alone for the count of news to be this session's.
        sid = f"news-{uuid.uuid4().hex}"
        await writer_store.create_session(SessionInfo(sid, stamp, stamp))
        waiting = asyncio.create_task(reader.wait(sid, reader.generation(sid)))
        await writer_store.append(sid, 0, [UserEntry("one"), UserEntry("two")])
        await asyncio.wait_for(waiting, 120)
        assert waiting.result() is True
        heard = reader.generation(sid)
        # A write that rolls back commits nothing, so it notifies nothing: the next news is
        # the next commit's.
        with pytest.raises(ags.ConflictError):
            await writer_store.append(sid, 0, [UserEntry("stale")])
        waiting = asyncio.create_task(reader.wait(sid, heard))
        await writer_store.append(sid, 2, [UserEntry("three")])
        await asyncio.wait_for(waiting, 120)
        assert reader.generation(sid) == heard + 1
    finally:
        await reader.close()
        await writer_store.close()
        await reader_store.close()


# Operations of a random schedule: start a waiter; cancel one (by index), maybe again after a
# few loop rounds (a stream torn down twice); publish; let the loop run a few rounds.
_OP = st.one_of(
    st.just(("spawn", 0, 0)),
    st.tuples(st.just("cancel"), st.integers(0, 7), st.integers(-1, 3)),
    st.just(("publish", 0, 0)),
    st.tuples(st.just("tick"), st.integers(1, 3), st.just(0)),
)
Op = tuple[str, int, int]


async def _ticks(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def _cancel(tasks: list[asyncio.Task[Any]], index: int) -> asyncio.Task[Any] | None:
    if not tasks:
        return None
    task = tasks[index % len(tasks)]
    task.cancel()
    return task


async def _run_schedule(notifier: Notifier, ops: list[Op]) -> None:
    waiters: list[asyncio.Task[Any]] = []
    for op, arg, again in ops:
        if op == "spawn":
            seen = notifier.generation("s")
            waiters.append(asyncio.create_task(notifier.wait("s", seen)))
        elif op == "cancel":
            task = _cancel(waiters, arg)  # a client leaving
            if task is not None and again >= 0:
                await _ticks(again)
                task.cancel()
        elif op == "publish":
            await asyncio.wait_for(notifier.published("s"), 60)  # every publish returns
        else:
            await _ticks(arg)
    await asyncio.wait_for(notifier.published("s"), 60)
    # Whatever happened, every waiter ends (woken, timed out or cancelled) ...
    await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 60)
    # ... and a later waiter is still woken by news alone.
    notifier.poll_interval = 600
    later = asyncio.create_task(notifier.wait("s", notifier.generation("s")))
    await asyncio.sleep(0)
    await asyncio.wait_for(notifier.published("s"), 60)
    await asyncio.wait_for(later, 60)


@given(ops=st.lists(_OP, max_size=40), poll=st.sampled_from([0.0, 600.0]))
@settings(max_examples=300)
def test_waiters_cancelled_at_random_never_wedge_the_notifier(ops: list[Op], poll: float) -> None:
    store = ags.MemoryStore()
    notifier = Notifier(store)
    notifier.poll_interval = poll
    asyncio.run(_run_schedule(notifier, ops))


async def _run_listeners(ops: list[Op]) -> None:
    run = TurnRun("s")
    listeners: list[asyncio.Task[Any]] = []

    async def listen() -> list[bytes]:
        return [frame async for frame in run.listen()]

    added = 0
    for op, arg, again in ops:
        if op == "spawn":
            listeners.append(asyncio.create_task(listen()))
        elif op == "cancel":
            task = _cancel(listeners, arg)
            if task is not None and again >= 0:
                await _ticks(again)
                task.cancel()
        elif op == "publish":
            await asyncio.wait_for(run.add(b"%d" % added), 60)
            added += 1
        else:
            await _ticks(arg)
    later = asyncio.create_task(listen())
    await asyncio.wait_for(run.finish(), 60)
    expected = [b"%d" % n for n in range(added)]
    assert await asyncio.wait_for(later, 60) == expected
    for task, got in zip(
        listeners, await asyncio.gather(*listeners, return_exceptions=True), strict=True
    ):
        if not task.cancelled():
            assert got == expected  # a listener left alone saw every frame once, in order


@given(ops=st.lists(_OP, max_size=40))
@settings(max_examples=300)
def test_listeners_of_a_turn_cancelled_at_random_never_hold_it_up(ops: list[Op]) -> None:
    asyncio.run(_run_listeners(ops))


def test_a_reader_leaving_never_takes_another_readers_live_frames(tmp_path: Path) -> None:
    """Two followers of one session, both caught up (empty buffers, equal as lists): when the
    later one closed its stream, the earlier one's buffer was the one removed — it got no live
    frame again, while the closed one's kept filling for as long as anyone followed."""
    notifier = Notifier(ags.MemoryStore())
    with notifier.subscribe("s") as staying:
        with notifier.subscribe("s"):
            pass  # the second follower's client closes its stream
        notifier.live("s", b"data: delta\n\n", 3)
        assert list(staying) == [(b"data: delta\n\n", 3)]
    notifier.live("s", b"data: later\n\n", 3)
    assert "s" not in notifier._live, "nobody follows: no buffer fills"


def test_a_client_that_never_reads_holds_a_bounded_amount_of_live_frames() -> None:
    """A client that connects to ``/events`` and never reads stops its follower at the socket,
    and the turn's live frames wait for it: bounded by their bytes, not only by their count
    (a tool's result or a call's arguments are often tens of kilobytes)."""
    notifier = Notifier(ags.MemoryStore())
    frame = b"data: " + b"x" * 64 * 1024 + b"\n\n"
    with notifier.subscribe("s") as stuck:
        for _ in range(200):
            notifier.live("s", frame, None)
        assert 0 < stuck.held <= 1024 * 1024
        assert stuck.held == sum(len(f) for f, _ in stuck)
        stuck.pop(0)  # the reader sends one: room for one more
        notifier.live("s", frame, None)
        assert stuck.held == sum(len(f) for f, _ in stuck) <= 1024 * 1024
