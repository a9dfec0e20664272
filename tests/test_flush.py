"""A database that refuses a write: nothing a model or tool produced is lost or produced twice."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.store._sqlite_sql import KIND_CODES  # SQLite stores kind codes

from .conftest import MakeRuntime

Make = MakeRuntime

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


async def test_refused_tool_result_is_kept_for_flush(make_runtime: Make, db_path: Path) -> None:
    runs = {"n": 0}

    @ags.tool(effect="write")
    def append_line(text: str) -> str:
        """Append a line somewhere (a side effect that must not run twice)."""
        runs["n"] += 1
        return f"appended {text!r}"

    model = ags.ScriptedModel(["hello", [ags.ToolCall("append_line", {"text": "x"})], "done"])
    runtime = make_runtime(model=model, tools=[append_line])
    session = await runtime.create_session()
    await session.prompt("hi")
    sql(db_path, REFUSE_RESULTS)

    with pytest.raises(ags.StoreError, match="flush"):
        await session.prompt("append x")
    assert runs["n"] == 1 and session.unflushed_entries == 1
    with pytest.raises(ags.SessionBusyError, match="flush"):
        await session.prompt("something else")
    with pytest.raises(ags.SessionBusyError):
        await session.switch_model(ags.ScriptedModel([]))
    with pytest.raises(ags.StoreError):
        await session.flush()  # still refused: kept
    assert session.unflushed_entries == 1

    sql(db_path, "DROP TRIGGER refuse;")
    assert await session.flush() == 1
    assert session.unflushed_entries == 0
    kinds = [r.entry.kind for r in await session.log()]
    assert kinds[-2:] == ["assistant", "tool_result"]
    assert len(model.requests) == 2

    result = await session.retry()
    assert result.text == "done"
    assert runs["n"] == 1  # the tool did not run again
    last = model.requests[-1]
    assert isinstance(last.messages[-1], ags.ToolResultMessage)
    assert last.messages[-1].content == "appended 'x'"
    reopened = await make_runtime().open_session(session.id)
    assert [m.role for m in reopened.messages][-4:] == ["user", "assistant", "tool", "assistant"]


async def test_refused_admission_stores_nothing_and_calls_no_model(
    make_runtime: Make, db_path: Path
) -> None:
    model = ags.ScriptedModel(["never"])
    runtime = make_runtime(model=model)
    session = await runtime.create_session()
    sql(
        db_path,
        "CREATE TRIGGER refuse BEFORE INSERT ON entries BEGIN SELECT RAISE(ABORT, 'no'); END;",
    )
    with pytest.raises(ags.StoreError):
        await session.prompt("hello")
    assert model.requests == [] and session.unflushed_entries == 0
    sql(db_path, "DROP TRIGGER refuse;")
    assert await session.log() == []
    assert (await session.prompt("hello")).text == "never"
