"""The test wrappers are ordinary stores: they delegate, count and fail exactly as asked.

The last test drives a real session over ``FaultyStore``: a refused write at any commit point of
a scripted turn with a tool loses nothing and repeats no model or tool call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import agentsession as ags
from agentsession.errors import StoreError
from agentsession.log import UserEntry, now
from agentsession.providers.scripted import Reply
from agentsession.store import SessionInfo, SQLiteStore, Store

from .wrappers import CountingStore, FaultyStore


def info(session_id: str) -> SessionInfo:
    return SessionInfo(session_id, now(), now())


async def test_the_wrappers_are_stores(tmp_path: Path) -> None:
    inner = SQLiteStore(tmp_path / "s.db")
    for wrapper in (CountingStore(inner), FaultyStore(inner)):
        assert isinstance(wrapper, Store)
    await inner.close()


async def test_counting_store_counts_decoded_records(tmp_path: Path) -> None:
    store = CountingStore(SQLiteStore(tmp_path / "s.db"))
    try:
        await store.create_session(info("a"), [UserEntry(c) for c in "abcdefgh"])
        await store.read("a", start=2, end=5)
        assert store.records == 3
        await store.last("a", ["user"])
        assert store.records == 4
        await store.last("a", ["epoch"])
        await store.read("a", start=20)
        assert store.records == 4
        assert store.calls["read"] == 2
        assert store.calls["last"] == 2
    finally:
        await store.close()


async def test_faulty_store_refuses_the_chosen_writes_before_they_happen(tmp_path: Path) -> None:
    store = FaultyStore(SQLiteStore(tmp_path / "s.db"), fail_at={2, 4})
    try:
        await store.create_session(info("a"))  # write 1
        with pytest.raises(StoreError, match="injected failure of write 2"):
            await store.append("a", 0, [UserEntry("lost")])
        await store.append("a", 0, [UserEntry("kept")])  # write 3
        assert [r.entry for r in await store.read("a")] == [UserEntry("kept")]  # reads pass
        with pytest.raises(StoreError, match="write 4"):
            await store.set_title("a", "lost")
        assert (await store.get_session("a")).title is None
        assert store.failed == [(2, "append"), (4, "set_title")]
    finally:
        await store.close()


async def test_faulty_store_can_lose_the_acknowledgement_instead(tmp_path: Path) -> None:
    store = FaultyStore(SQLiteStore(tmp_path / "s.db"), fail_at={2}, when="after")
    try:
        await store.create_session(info("a"))
        with pytest.raises(StoreError, match="write 2"):
            await store.append("a", 0, [UserEntry("stored anyway")])
        # The write happened: the caller that retries blindly meets a conflict.
        assert [r.entry for r in await store.read("a")] == [UserEntry("stored anyway")]
        with pytest.raises(ags.ConflictError):
            await store.append("a", 0, [UserEntry("stored anyway")])
    finally:
        await store.close()


def script() -> list[Reply]:
    return [[ags.ToolCall("append_line", {"text": "x"})], "done"]


async def run_turn(store: Store, project: Path) -> tuple[ags.Runtime, ags.Session, dict[str, int]]:
    runs = {"tool": 0}

    @ags.tool(effect="write")
    def append_line(text: str) -> str:
        """Append a line (a side effect that must not run twice)."""
        runs["tool"] += 1
        return f"appended {text!r}"

    runtime = ags.Runtime(
        store=store,
        model=ags.ScriptedModel(script()),
        project_dir=project,
        tools=[append_line],
        config=ags.Config(retry_base_delay=0),
    )
    session = await runtime.create_session()
    return runtime, session, runs


async def test_a_clean_turn_makes_a_known_number_of_writes(tmp_path: Path) -> None:
    store = FaultyStore(SQLiteStore(tmp_path / "s.db"))
    runtime, session, runs = await run_turn(store, tmp_path)
    try:
        assert (await session.prompt("append x")).text == "done"
        assert runs["tool"] == 1
        # create; admission, response, tool result; admission, response; the title.
        assert store.writes == WRITES_IN_A_CLEAN_TURN
    finally:
        await runtime.close()


#: Counted by ``test_a_clean_turn_makes_a_known_number_of_writes``.
WRITES_IN_A_CLEAN_TURN = 7


@pytest.mark.parametrize("n", range(2, WRITES_IN_A_CLEAN_TURN + 1))
async def test_a_refused_write_at_any_commit_point_loses_nothing(tmp_path: Path, n: int) -> None:
    store = FaultyStore(SQLiteStore(tmp_path / "s.db"), fail_at={n})
    runtime, session, runs = await run_turn(store, tmp_path)
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    try:
        try:
            text = (await session.prompt("append x")).text
        except ags.StoreError:
            if not await session.log():  # the admission itself was refused: nothing stored
                assert model.requests == []
                text = (await session.prompt("append x")).text
            else:
                kept = session.unflushed_entries
                assert await session.flush() == kept
                try:
                    text = (await session.retry()).text
                except ags.UsageError as exc:  # the flushed entry was the turn's last answer
                    assert "the last turn finished" in str(exc)
                    last = session.messages[-1].content
                    assert isinstance(last, str)
                    text = last
        assert text == "done"
        assert runs["tool"] == 1
        assert len(model.requests) == 2
        kinds = [r.entry.kind for r in await session.log()]
        assert kinds.count("tool_result") == 1
        assert kinds.count("assistant") == 2
    finally:
        await runtime.close()
