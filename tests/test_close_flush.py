"""An orderly close never drops a tool result silently; the log never claims what it cannot know.

The database refuses the write of a tool result (a full disk: a trigger aborts the insert) and
the application closes the runtime without ``flush()``. Close writes what the store accepts
again; what it still cannot write is reported with ``StoreError``. A reopened history says the
call's result is unknown, never that the call did not finish.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.log import ToolResultEntry
from agentsession.providers.scripted import Reply
from agentsession.store._sqlite_sql import KIND_CODES  # SQLite stores kind codes

REFUSE_RESULTS = f"""
CREATE TRIGGER refuse BEFORE INSERT ON entries WHEN NEW.kind = {KIND_CODES["tool_result"]}
BEGIN SELECT RAISE(ABORT, 'disk full'); END;
"""


def sql(db: Path, statement: str) -> None:
    connection = sqlite3.connect(db)
    try:
        connection.executescript(statement)
    finally:
        connection.close()


class Ledger:
    def __init__(self) -> None:
        self.runs = 0

        @ags.tool(effect="write")
        def append_line(text: str) -> str:
            """Append a line (a side effect that must not be taken for one that never ran)."""
            self.runs += 1
            return f"appended {text!r}"

        self.tool = append_line


def runtime_for(db: Path, ledger: Ledger, replies: list[Reply]) -> ags.Runtime:
    return ags.Runtime(
        store=ags.SQLiteStore(db),
        model=ags.ScriptedModel(replies),
        tools=[ledger.tool],
        project_dir=db.parent,
        config=ags.Config(retry_base_delay=0, titles=False),
    )


async def refused_result(db: Path, ledger: Ledger) -> tuple[ags.Runtime, ags.Session]:
    """A session whose tool ran and whose result the store refused."""
    runtime = runtime_for(db, ledger, [[ags.ToolCall("append_line", {"text": "x"})], "done"])
    session = await runtime.create_session()
    sql(db, REFUSE_RESULTS)
    with pytest.raises(ags.StoreError):
        await session.prompt("append x")
    assert ledger.runs == 1 and session.unflushed_entries == 1
    return runtime, session


async def test_close_writes_a_refused_tool_result_the_store_now_accepts(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    ledger = Ledger()
    runtime, session = await refused_result(db, ledger)
    sql(db, "DROP TRIGGER refuse;")
    await runtime.close()  # no flush() first: close writes it
    again = runtime_for(db, ledger, ["done"])
    try:
        reopened = await again.open_session(session.id)
        results = [r.entry for r in await reopened.log() if isinstance(r.entry, ToolResultEntry)]
        assert [(r.content, r.is_error) for r in results] == [("appended 'x'", False)]
        assert (await reopened.retry()).text == "done"
        assert ledger.runs == 1  # the tool did not run again
    finally:
        await again.close()


async def test_what_close_cannot_write_is_reported_and_never_called_unfinished(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    ledger = Ledger()
    runtime, session = await refused_result(db, ledger)
    with pytest.raises(ags.StoreError, match=rf"1 of session {session.id}.*lost"):
        await runtime.close()
    sql(db, "DROP TRIGGER refuse;")
    again = runtime_for(db, ledger, ["I will check before running it again."])
    try:
        reopened = await again.open_session(session.id)
        await reopened.prompt("what happened?")
        (result,) = [r.entry for r in await reopened.log() if isinstance(r.entry, ToolResultEntry)]
        assert result.is_error
        assert "finished" not in result.content  # it did finish: the log must not say otherwise
        assert "may have run" in result.content and "unknown" in result.content
        assert ledger.runs == 1
    finally:
        await again.close()


async def test_session_close_returns_what_it_could_not_write(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    runtime, session = await refused_result(db, Ledger())
    assert await session.close() == 1
    sql(db, "DROP TRIGGER refuse;")
    assert await session.close() == 0  # written now
    await runtime.close()
