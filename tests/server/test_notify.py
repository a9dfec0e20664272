"""News of new entries: woken readers in this process, and across processes by PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.server.notify import Notifier


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
    writer_store, reader_store = ags.PostgresStore(pg_dsn), ags.PostgresStore(pg_dsn)
    writer, reader = Notifier(writer_store), Notifier(reader_store)
    reader.poll_interval = 600  # only a notification can wake it within the test's bound
    await reader.start()
    try:
        await asyncio.wait_for(reader.listening.wait(), 120)
        waiting = asyncio.create_task(reader.wait("session-1", 0))
        await writer.published("session-1")
        await asyncio.wait_for(waiting, 120)
        assert reader.generation("session-1") == 1
    finally:
        await reader.close()
        await writer.close()
        await writer_store.close()
        await reader_store.close()
