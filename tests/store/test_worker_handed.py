"""A hand-over's future resumes its waiter in the round that settles it, and is a future."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from agentsession.errors import StoreError
from agentsession.store._worker import Handed, Worker, _settle


class Owner:
    """What a worker belongs to (the store, in the package)."""


def closed() -> Exception:
    return StoreError("closed")


async def test_the_waiting_task_resumes_in_the_round_that_settles_it() -> None:
    loop = asyncio.get_running_loop()
    order: list[str] = []
    future: Handed[int] = Handed(loop=loop)

    async def waiting() -> None:
        order.append(f"resumed with {await future}")

    task = asyncio.create_task(waiting())
    await asyncio.sleep(0)  # the task waits on the future
    # What the worker thread does when the call is done, and a callback queued behind it.
    loop.call_soon(_settle, future, 7)
    loop.call_soon(order.append, "next in line")
    await task
    # A plain future would schedule the task's wake-up behind "next in line": a round later.
    assert order == ["resumed with 7", "next in line"]


async def test_a_worker_call_settles_its_future() -> None:
    owner = Owner()
    worker = Worker(owner, "test-handed", closed)
    try:
        assert await worker.submit(lambda: 7) == 7
    finally:
        await worker.finish(lambda: None)


async def test_results_errors_and_callbacks_as_a_future_gives_them() -> None:
    owner = Owner()
    worker = Worker(owner, "test-handed", closed)

    def fail() -> None:
        raise ValueError("no")

    try:
        future = worker.submit(lambda: "a")
        assert isinstance(future, asyncio.Future) and isinstance(future, Handed)
        seen: list[tuple[str, str]] = []
        future.add_done_callback(lambda f: seen.append(("one", f.result())))
        future.add_done_callback(lambda f: seen.append(("two", f.result())))
        assert list(await asyncio.gather(future, future)) == ["a", "a"]
        await asyncio.sleep(0)
        assert ("one", "a") in seen and ("two", "a") in seen
        with pytest.raises(ValueError, match="no"):
            await worker.submit(fail)
        done = worker.submit(lambda: 1)
        await done
        after: list[int] = []
        done.add_done_callback(lambda f: after.append(f.result()))  # scheduled at once
        await asyncio.sleep(0)
        assert after == [1]
        removed = worker.submit(lambda: 2)

        def dropped_callback(f: asyncio.Future[int]) -> None:
            after.append(-1)

        removed.add_done_callback(dropped_callback)
        assert removed.remove_done_callback(dropped_callback) == 1
        assert await removed == 2
        await asyncio.sleep(0)
        assert after == [1]
    finally:
        await worker.finish(lambda: None)


async def test_a_cancelled_waiter_ends_at_once_and_the_call_still_runs() -> None:
    owner = Owner()
    worker = Worker(owner, "test-handed", closed)
    gate, ran = threading.Event(), threading.Event()

    def blocked() -> str:
        gate.wait()
        ran.set()
        return "done"

    try:
        waiter = asyncio.ensure_future(worker.submit(blocked))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(waiter), 0)
        task = asyncio.create_task(wait_on(waiter))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert waiter.cancelled()
        gate.set()
        assert await worker.submit(lambda: "after") == "after"  # runs after ``blocked``
        assert ran.is_set()
    finally:
        gate.set()
        await worker.finish(lambda: None)


async def wait_on(future: asyncio.Future[str]) -> str:
    return await future


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_a_thread_of_its_own() -> None:
    owner = Owner()
    worker = Worker(owner, "test-handed", closed)

    async def ask() -> int:
        return await worker.submit(lambda: 41) + 1

    assert asyncio.run(ask()) == 42  # the parent's thread runs it
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child has no threads: the worker starts one for its first call
        try:
            os.write(write, str(asyncio.run(ask())).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        assert answer.read() == b"42"
    assert os.waitpid(child, 0)[1] == 0
    asyncio.run(worker.finish(lambda: None))
