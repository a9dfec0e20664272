"""Idle ``/events`` followers on PostgreSQL wait for LISTEN/NOTIFY alone: while nothing happens
they ask the database nothing, and a commit elsewhere still reaches every one of them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

import agentsession as ags
from agentsession.server.follow import follow_log
from agentsession.server.notify import Notifier
from agentsession.store.base import Store

from .harness import until

FOLLOWERS = 20


class Counting:
    """A store that counts every call made to it (each one a query or more)."""

    def __init__(self, store: ags.PostgresStore) -> None:
        self._store = store
        self.dsn = store.dsn
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return found(*args, **kwargs)

        return counted


async def _consume(frames: AsyncIterator[bytes], into: list[bytes]) -> None:
    async for frame in frames:
        into.append(frame)


@pytest.mark.postgres
async def test_idle_followers_cost_no_queries_and_still_hear_news(pg_dsn: str) -> None:
    writer = ags.Runtime(
        store=ags.PostgresStore(pg_dsn),
        model=ags.ScriptedModel(["first", "second"]),
        config=ags.Config(titles=False),
    )
    session = await writer.create_session()
    await session.prompt("one")
    reading = ags.PostgresStore(pg_dsn)
    counting = Counting(reading)
    notifier = Notifier(reading)
    await notifier.start()
    got: list[list[bytes]] = [[] for _ in range(FOLLOWERS)]
    tasks = [
        asyncio.create_task(
            _consume(follow_log(cast(Store, counting), notifier, session.id, -1), into)
        )
        for into in got
    ]
    try:
        await asyncio.wait_for(notifier.listening.wait(), 120)
        await until(lambda: all(any(b"turn_finished" in f for f in into) for into in got))
        wakeup = notifier._wakeups  # the readers that wait for news right now
        await until(lambda: session.id in wakeup and wakeup[session.id].waiting == FOLLOWERS)
        counting.calls = 0
        # Polling every second, as followers did, would have made dozens of queries by now.
        await asyncio.sleep(3)
        assert counting.calls == 0
        await session.prompt("two")  # a library user's commit: the database says so
        await until(lambda: all(any(b"second" in f for f in into) for into in got))
        # Each follower read the new entries once: a bounded cost per commit, not per second.
        assert counting.calls <= 3 * FOLLOWERS
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await notifier.close()
        await session.close()
        await writer.close()
        await reading.close()
