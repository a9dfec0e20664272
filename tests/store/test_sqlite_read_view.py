"""SQLite reads a reopened session's view in one call: the same records as three separate reads.

``SQLiteStore.read_view`` reads the newest epoch, the view's kinds from where it starts and the
newest dispatch in one read transaction. It must give what ``last_now`` / ``read_now`` /
``last_now`` give one after the other, run on the caller's thread only while no other call holds
the connection, and report an unknown session or a damaged row as the other reads do.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsession.engine.epoch_view import record_view_start
from agentsession.errors import CorruptEntryError, SessionNotFoundError
from agentsession.log import ContextEpoch, Dispatch, LogEntry, Record, UserEntry
from agentsession.projection import VIEW_KINDS
from agentsession.store import SessionInfo, SQLiteStore

from .conftest import inject_row
from .strategies import ENTRY_STRATEGIES

T = "2026-12-01T16:00:00+00:00"


def _epoch(number: int, start: int, summary: int | None = None) -> ContextEpoch:
    baseline = (("core.instructions", "Answer briefly.\n" * 30),)
    return ContextEpoch(
        number, baseline, (), start, "window", "m", summary_seq=summary, timestamp=T
    )


def _separately(
    store: SQLiteStore, session_id: str, end: int
) -> tuple[Record | None, list[Record], Record | None]:
    found = store._last_now(session_id, ["epoch"])
    start = 0 if found is None else record_view_start(found)
    records = store._read_now(session_id, start, end, VIEW_KINDS)
    dispatch = store._last_now(session_id, ["dispatch"]) if found is not None else None
    return found, records, dispatch


_entries = st.lists(
    st.one_of(
        *ENTRY_STRATEGIES.values(),
        st.builds(_epoch, st.integers(0, 3), st.integers(0, 40), st.none() | st.integers(0, 40)),
    ),
    max_size=30,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries=_entries, dispatch=st.booleans())
def test_read_view_gives_what_three_reads_give(
    tmp_path_factory: pytest.TempPathFactory, entries: list[LogEntry], dispatch: bool
) -> None:
    async def run() -> None:
        store = SQLiteStore(tmp_path_factory.mktemp("view") / "s.db")
        try:
            await store.create_session(SessionInfo("s", T, T), entries)
            end = len(entries)
            found, records, last = await store._read_view(
                "s", end, VIEW_KINDS, record_view_start, dispatch
            )
            expected_found, expected_records, expected_last = _separately(store, "s", end)
            assert (found, records) == (expected_found, expected_records)
            assert last == (expected_last if dispatch else None)
            assert all(r.entry.kind in VIEW_KINDS for r in records)
        finally:
            await store.close()

    asyncio.run(run())


async def test_a_free_store_reads_the_view_on_the_callers_thread(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        entries: list[LogEntry] = [UserEntry("q"), _epoch(0, 0), Dispatch("m", 1, "d")]
        await store.create_session(SessionInfo("s", T, T), entries)
        threads: list[int] = []

        def start_of(record: Record) -> int:
            threads.append(threading.get_ident())
            return record_view_start(record)

        found, records, last = await store._read_view("s", 3, VIEW_KINDS, start_of, True)
        assert threads == [threading.get_ident()]
        assert found is not None and found.seq == 1
        assert [r.seq for r in records] == [0]
        assert last is not None and last.seq == 2
    finally:
        await store.close()


async def test_a_busy_store_reads_the_view_on_a_worker_once_the_connection_is_free(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        entries: list[LogEntry] = [UserEntry("q"), _epoch(0, 0), UserEntry("again")]
        await store.create_session(SessionInfo("s", T, T), entries)
        threads: list[int] = []

        def start_of(record: Record) -> int:
            threads.append(threading.get_ident())
            return record_view_start(record)

        store._lock.acquire()  # another call holds the connection
        try:
            reading = asyncio.ensure_future(store._read_view("s", 3, VIEW_KINDS, start_of, False))
            await asyncio.sleep(0)
            assert not reading.done()
        finally:
            store._lock.release()
        found, records, last = await reading
        assert threads and threads[0] != threading.get_ident()
        assert found is not None and [r.seq for r in records] == [0, 2] and last is None
    finally:
        await store.close()


async def test_an_unknown_session_and_a_damaged_row_are_reported(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        with pytest.raises(SessionNotFoundError):
            await store._read_view("nobody", 5, VIEW_KINDS, record_view_start, True)
        with pytest.raises(SessionNotFoundError):
            await store._read_view("", 5, VIEW_KINDS, record_view_start, True)
        await store.create_session(SessionInfo("s", T, T), [_epoch(0, 0), UserEntry("q")])
        assert (await store._read_view("s", 2, VIEW_KINDS, record_view_start, True))[1]
        inject_row(store, "s", 2, "user", 1, '{"text": 5')
        with pytest.raises(CorruptEntryError) as raised:
            await store._read_view("s", 3, VIEW_KINDS, record_view_start, True)
        assert raised.value.seq == 2
    finally:
        await store.close()


async def test_epochs_asked_for_come_with_their_kept_texts(tmp_path: Path) -> None:
    # An epoch's long baseline texts are kept beside the log; only epoch rows refer to them.
    entries: list[LogEntry] = [_epoch(0, 0), UserEntry("hi", T), _epoch(1, 0), UserEntry("ho", T)]
    async with SQLiteStore(tmp_path / "s.db") as store:
        await store.create_session(SessionInfo("s", T, T), entries)
        kinds = (*VIEW_KINDS, "epoch")
        found, records, _ = await store._read_view("s", 4, kinds, record_view_start, False)
        assert records == store._read_now("s", 0, 4, kinds)
        assert [r.entry for r in records] == entries
        assert found is not None and found.entry == entries[2]
