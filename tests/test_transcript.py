"""The user transcript is a lazy, paged sequence: opening a session reads none of it.

Reads are counted by subclasses of the real stores that count the rows their synchronous reads
decode; the transcript they page in must equal the transcript derived from the whole log.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.log import (
    AssistantEntry,
    Dispatch,
    LogEntry,
    Record,
    ToolResultEntry,
    UserEntry,
    now,
)
from agentsession.projection import transcript_from
from agentsession.request import Message, ToolCall, UserMessage
from agentsession.store import SessionInfo
from agentsession.transcript import Transcript

from .conftest import MakeRuntime
from .store.wrappers import CountingStore

Make = MakeRuntime


class CountingSQLite(ags.SQLiteStore):
    """The real SQLite store, counting the rows its synchronous reads decode."""

    rows = 0

    def _read_now(self, *args: Any, **kwargs: Any) -> list[Record]:
        found = super()._read_now(*args, **kwargs)
        self.rows += len(found)
        return found


class CountingMemory(ags.MemoryStore):
    rows = 0

    def _read_now(self, *args: Any, **kwargs: Any) -> list[Record]:
        found = super()._read_now(*args, **kwargs)
        self.rows += len(found)
        return found


def turn(i: int) -> list[LogEntry]:
    call = ToolCall("look", {"n": i}, id=f"call_{i}")
    return [
        UserEntry(f"question {i}", timestamp=now()),
        Dispatch("scripted", 1, "d"),
        AssistantEntry("", (call,), model="scripted"),
        ToolResultEntry(f"call_{i}", "look", f"result {i}"),
        Dispatch("scripted", 2, "d"),
        AssistantEntry(f"answer {i}", model="scripted"),
    ]


async def stored_session(store: Any, turns: int, tmp_path: Path) -> list[LogEntry]:
    stamp = now()
    await store.create_session(SessionInfo("long", stamp, stamp, project_dir=str(tmp_path)))
    log = [e for i in range(turns) for e in turn(i)]
    for first in range(0, len(log), 5_000):
        await store.append("long", first, log[first : first + 5_000])
    return log


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_open_reads_no_transcript_and_pages_on_demand(kind: str, tmp_path: Path) -> None:
    store: CountingSQLite | CountingMemory = (
        CountingSQLite(tmp_path / "t.db") if kind == "sqlite" else CountingMemory()
    )
    log = await stored_session(store, 2_000, tmp_path)
    expected = transcript_from(Record(seq, e) for seq, e in enumerate(log))
    runtime = ags.Runtime(store=store, model=ags.ScriptedModel(), project_dir=tmp_path)
    try:
        session = await runtime.open_session("long")
        opened = store.rows
        assert opened <= 3  # the last step's tail (dispatch, answer), not the transcript
        messages = session.messages
        assert len(messages) == len(expected) == 8_000
        assert store.rows == opened

        assert messages[-1] == expected[-1]
        assert 0 < store.rows - opened <= 256  # one page from the end
        assert messages[0] == expected[0]
        assert store.rows - opened <= 512  # and one from the start
        assert messages[-30:] == expected[-30:]
        assert await session.transcript(limit=5) == expected[-5:]
        assert await session.transcript(limit=5, before=10) == expected[5:10]
        assert await session.transcript(limit=5, before=3) == expected[:3]
        assert await session.transcript(limit=0) == []
        with pytest.raises(ags.UsageError):
            await session.transcript(limit=-1)
        assert list(messages) == expected  # iteration reads everything, in order
        assert messages == expected and messages == session.messages
        assert list(reversed(messages))[:2] == expected[::-1][:2]
        with pytest.raises(IndexError):
            messages[8_000]
    finally:
        await runtime.close()


async def test_a_snapshot_keeps_its_length_while_the_session_goes_on(make_runtime: Make) -> None:
    runtime = make_runtime(["one", "two"])
    session = await runtime.create_session()
    await session.prompt("first")
    before = session.messages
    await session.prompt("second")
    assert [m.content for m in before] == ["first", "one"]
    assert [m.content for m in session.messages] == ["first", "one", "second", "two"]

    reopened = await runtime.open_session(session.id)
    assert reopened.messages == session.messages
    assert len(reopened.messages) == 4


async def test_a_store_without_synchronous_reads_gives_the_same_transcript(
    tmp_path: Path,
) -> None:
    inner = ags.SQLiteStore(tmp_path / "t.db")
    log = await stored_session(inner, 50, tmp_path)
    expected = transcript_from(Record(seq, e) for seq, e in enumerate(log))
    runtime = ags.Runtime(
        store=CountingStore(inner), model=ags.ScriptedModel(), project_dir=tmp_path
    )
    try:
        session = await runtime.open_session("long")
        assert list(session.messages) == expected
        assert await session.transcript(limit=2) == expected[-2:]
    finally:
        await runtime.close()


async def test_skill_selection_after_reopen_counts_the_stored_user_turns(
    tmp_path: Path,
) -> None:
    store = CountingSQLite(tmp_path / "t.db")
    await stored_session(store, 300, tmp_path)
    skill = ags.Skill(name="pdf", description="PDF files.", instructions="Use pypdf.")
    runtime = ags.Runtime(
        store=store, model=ags.ScriptedModel(["done"]), project_dir=tmp_path, skills=[skill]
    )
    try:
        session = await runtime.open_session("long")
        await session.prompt("read the file", skills=["pdf"])
        [snapshot] = session.runtime_contexts()
        assert snapshot.user_turn == 300  # the 301st user message, counted, not read
        reopened = await runtime.open_session("long")
        assert [s.user_turn for s in reopened.runtime_contexts()] == [300]
        assert len(reopened.messages) == 300 * 4 + 2
    finally:
        await runtime.close()


async def test_checkpoints_are_read_at_first_use(make_runtime: Make) -> None:
    runtime = make_runtime(["one", "two"])
    session = await runtime.create_session()
    await session.prompt("first")
    reopened = await runtime.open_session(session.id)
    assert reopened.system_prompt_checkpoints() == session.system_prompt_checkpoints()
    await reopened.prompt("second")
    assert len(reopened.system_prompt_checkpoints()) >= 1


# -- the paging itself, against a plain list ----------------------------------------------------


def records_of(shape: Sequence[int]) -> list[Record]:
    """Records of transcript kinds (0) and metadata (1) in the order ``shape`` gives."""
    out: list[Record] = []
    for seq, what in enumerate(shape):
        entry: LogEntry = UserEntry(f"m{seq}") if what == 0 else Dispatch("m", 1, "d")
        out.append(Record(seq, entry))
    return out


@settings(max_examples=200, deadline=None)
@given(
    shape=st.lists(st.integers(0, 1), max_size=1_500),
    probes=st.lists(st.integers(-1_600, 1_600), max_size=30),
    appended=st.integers(0, 3),
)
def test_paged_access_equals_the_list(shape: list[int], probes: list[int], appended: int) -> None:
    records = records_of(shape)
    reads: list[tuple[int, int]] = []

    def reader(start: int, end: int) -> list[Record]:
        reads.append((start, end))
        return [r for r in records[start:end] if r.entry.kind == "user"]

    expected: list[Message] = transcript_from(records)
    transcript = Transcript(stored=len(expected), end_seq=len(records), reader=reader)
    for i in range(appended):
        transcript.append(UserMessage(f"new {i}"))
        expected.append(UserMessage(f"new {i}"))
    view = transcript.view()
    for probe in probes:
        if -len(expected) <= probe < len(expected):
            assert view[probe] == expected[probe]
        else:
            with pytest.raises(IndexError):
                view[probe]
    assert list(view) == expected
    assert view[3:-2] == expected[3:-2]
    # Pages never overlap: each stored record is read at most once.
    covered = sorted(seq for start, end in reads for seq in range(start, end))
    assert covered == sorted(set(covered))


class CountingPostgres(ags.PostgresStore):
    """The real PostgreSQL store, counting the rows its reads decode (both kinds)."""

    rows = 0

    def _read_now(self, *args: Any, **kwargs: Any) -> list[Record]:
        found = super()._read_now(*args, **kwargs)
        self.rows += len(found)
        return found

    async def read(self, *args: Any, **kwargs: Any) -> list[Record]:
        found = await super().read(*args, **kwargs)
        self.rows += len(found)
        return found


@pytest.mark.postgres
async def test_open_on_postgres_reads_no_transcript_and_pages_on_demand(
    pg_dsn: str, tmp_path: Path
) -> None:
    store = CountingPostgres(pg_dsn)
    log = await stored_session(store, 2_000, tmp_path)
    expected = transcript_from(Record(seq, e) for seq, e in enumerate(log))
    runtime = ags.Runtime(store=store, model=ags.ScriptedModel(), project_dir=tmp_path)
    try:
        store.rows = 0
        session = await runtime.open_session("long")
        opened = store.rows
        assert opened <= 3  # the last step's tail (dispatch, answer), not the transcript
        messages = session.messages
        assert len(messages) == len(expected) == 8_000
        assert messages[-1] == expected[-1]
        assert 0 < store.rows - opened <= 256  # one page from the end
        assert messages[0] == expected[0]
        assert store.rows - opened <= 512  # and one from the start
        assert await session.transcript(limit=5, before=10) == expected[5:10]
        assert list(messages) == expected  # iteration reads everything, in order
    finally:
        await runtime.close()
