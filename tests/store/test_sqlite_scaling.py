"""Reading what the next request needs costs the same for a short and a very long history."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentsession.log import AssistantEntry, ContextEpoch, LogEntry, UserEntry, now
from agentsession.store import SessionInfo, SQLiteStore

from .wrappers import CountingStore

WINDOW = 100
BATCH = 10_000


def history(n: int) -> list[LogEntry]:
    """``n`` entries: an epoch at 0 and one in the middle, user/assistant turns elsewhere."""
    turn: list[LogEntry] = [UserEntry("question " * 5), AssistantEntry("answer " * 20, model="m")]
    log = [turn[i % 2] for i in range(n)]
    log[0] = ContextEpoch(0, (("core.date", "today"),), (), 0)
    log[n // 2] = ContextEpoch(1, (("core.date", "tomorrow"),), (), n // 2)
    return log


class Work:
    """Counts records decoded (a counting wrapper) and SQLite virtual-machine steps per call.

    The steps come from SQLite itself: ``sqlite3.connect`` is wrapped so that every connection
    opened meanwhile reports each step to a progress handler.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps = 0
        real = sqlite3.connect

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn: sqlite3.Connection = real(*args, **kwargs)
            conn.set_progress_handler(self._tick, 1)
            return conn

        monkeypatch.setattr(sqlite3, "connect", connect)

    def _tick(self) -> int:
        self.steps += 1
        return 0

    async def measure(
        self, store: CountingStore, call: Callable[[], Awaitable[Any]]
    ) -> tuple[int, int, Any]:
        records, steps = store.records, self.steps
        result = await call()
        return store.records - records, self.steps - steps, result


async def costs(work: Work, path: Path, n: int) -> dict[str, tuple[int, int]]:
    store = CountingStore(SQLiteStore(path))
    try:
        stamp = now()
        await store.create_session(SessionInfo("s", stamp, stamp))
        log = history(n)
        for start in range(0, n, BATCH):
            await store.append("s", start, log[start : start + BATCH])

        tail_rows, tail_steps, tail = await work.measure(
            store, lambda: store.read("s", start=n - WINDOW)
        )
        assert [r.seq for r in tail] == list(range(n - WINDOW, n))
        last_rows, last_steps, epoch = await work.measure(store, lambda: store.last("s", ["epoch"]))
        assert epoch.seq == n // 2
        assert epoch.entry.epoch == 1
        info_rows, info_steps, info = await work.measure(store, lambda: store.get_session("s"))
        assert info.next_seq == n
        return {
            "tail": (tail_rows, tail_steps),
            "last": (last_rows, last_steps),
            "info": (info_rows, info_steps),
        }
    finally:
        await store.close()


async def test_window_reads_do_not_depend_on_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = Work(monkeypatch)
    small = await costs(work, tmp_path / "small.db", 1_000)
    large = await costs(work, tmp_path / "large.db", 50_000)

    assert small["tail"][0] == large["tail"][0] == WINDOW
    assert small["last"][0] == large["last"][0] == 1
    assert small["info"][0] == large["info"][0] == 0
    # The database does the same work too: index descents, no scans (a scan of 50,000 rows
    # would cost hundreds of thousands of steps).
    for name in small:
        assert large[name][1] <= small[name][1] * 1.1 + 20, (name, small, large)
