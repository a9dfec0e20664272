"""Building the next request reads as many rows for 50,000 stored entries as for 1,000.

Reads are counted by a wrapper store that counts the records the real SQLite store decoded.
How long it takes is a benchmark's business, not a test's.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import agentsession as ags
from agentsession.log import AssistantEntry, ContextEpoch, LogEntry, UserEntry, now
from agentsession.store import SessionInfo

from .store.wrappers import CountingStore

BATCH = 10_000
RECENT = 10  # conversation entries after the epoch's history start


def history(n: int) -> list[LogEntry]:
    """``n`` entries of user/assistant turns with an epoch whose history starts near the end."""
    question = UserEntry("a question about the project " * 3, timestamp=now())
    answer = AssistantEntry("an answer with some detail " * 8, model="scripted", timestamp=now())
    start = n - RECENT
    log: list[LogEntry] = [question if i % 2 == 0 else answer for i in range(start - 1)]
    log.append(
        ContextEpoch(
            epoch=0,
            baseline=(("core.date", "x"),),
            checkpoint=(("core.date", "h"),),
            history_start=start,
        )
    )
    log.extend(
        UserEntry(f"recent question {i}") if i % 2 == 0 else AssistantEntry(f"recent answer {i}")
        for i in range(RECENT)
    )
    assert len(log) == n
    return log


async def preview_cost(tmp_path: Path, n: int) -> tuple[int, ags.Request]:
    """Rows the store decodes for ``preview_request`` on a session of ``n`` entries."""
    store = CountingStore(ags.SQLiteStore(tmp_path / f"history-{n}.db"))
    runtime = ags.Runtime(
        store=store,
        model=ags.ScriptedModel(),
        project_dir=tmp_path,
        clock=lambda: datetime(2026, 1, 1, 12, 0),
    )
    try:
        stamp = now()
        await store.create_session(SessionInfo("long", stamp, stamp, project_dir=str(tmp_path)))
        log = history(n)
        for first in range(0, n, BATCH):
            await store.append("long", first, log[first : first + BATCH])

        session = await runtime.open_session("long")
        assert len(session.messages) == n - 1  # every entry but the epoch is a message
        before = store.records
        request = await session.preview_request("next")
        rows = store.records - before

        # Nothing was admitted by the preview.
        assert (await store.get_session("long")).next_seq == n
        return rows, request
    finally:
        await runtime.close()


async def test_next_request_reads_do_not_grow_with_history(tmp_path: Path) -> None:
    small_rows, small = await preview_cost(tmp_path, 1_000)
    large_rows, large = await preview_cost(tmp_path, 50_000)

    assert small_rows == large_rows
    # The epoch row and the log from it: a handful, not the history.
    assert 0 < large_rows <= RECENT + 5

    for request in (small, large):
        users = [m.content for m in request.messages if m.role == "user"]
        assert users[0] == "recent question 0"
        assert users[-1] == "next"
        assert not any("a question about the project" in str(u) for u in users)
        assert dict(request.system) == {"core.date": "x"}
    assert [m.content for m in small.messages] == [m.content for m in large.messages]
