"""After a reopen, the next request is the one the session would have sent had it stayed open.

A reopened session reads only the entries its model view needs (``VIEW_KINDS``) from where the
view starts, and learns whether the epoch was dispatched from the last dispatch record; a
session that stayed open extends the view it read with every entry it committed. The two must
lead to the same requests and the same admissions — on SQLite (one worker-thread read), on a
store with only the asynchronous protocol, and in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.log import ContextEpoch, LogEntry, Record, SystemPromptCheckpoint
from agentsession.projection import VIEW_KINDS, project
from agentsession.request import digest
from agentsession.store import Store

from .store.strategies import ENTRY_STRATEGIES
from .store.wrappers import DelegatingStore


@ags.tool
def look(n: int) -> str:
    """Look a number up."""
    return f"found {n}"


def reply(request: ags.Request) -> Any:
    """A tool call for every question, an answer for every result (the same in every run)."""
    last = request.messages[-1]
    if last.role == "user" and str(last.content).startswith("question"):
        n = len(request.messages)
        return [ags.ToolCall("look", {"n": n}, id=f"call_{n}")]
    return f"answer after {len(request.messages)} messages"


class DecodedKinds(ags.SQLiteStore):
    """The real SQLite store, noting the kind of every entry its reads decode."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kinds: list[str] = []

    def _read_now(self, *args: Any, **kwargs: Any) -> list[Record]:
        found = super()._read_now(*args, **kwargs)
        self.kinds.extend(r.entry.kind for r in found)
        return found

    def _last_now(self, *args: Any, **kwargs: Any) -> Record | None:
        found = super()._last_now(*args, **kwargs)
        self.kinds.extend([found.entry.kind] if found is not None else [])
        return found

    async def _read_view(
        self, *args: Any, **kwargs: Any
    ) -> tuple[Record | None, list[Record], Record | None]:
        epoch, records, dispatch = await super()._read_view(*args, **kwargs)
        self.kinds.extend(r.entry.kind for r in (epoch, *records, dispatch) if r is not None)
        return epoch, records, dispatch


STORES: dict[str, Callable[[Path], Store]] = {
    "sqlite": lambda folder: ags.SQLiteStore(folder / "s.db"),
    "async only": lambda folder: DelegatingStore(ags.SQLiteStore(folder / "s.db")),
    "memory": lambda folder: ags.MemoryStore(),
}


def _runtime(store: Store, project: Path) -> ags.Runtime:
    config = ags.Config(max_transcript_messages=8, window_step=1, keep_user_turns=1)
    return ags.Runtime(
        store=store,
        model=ags.ScriptedModel(reply),
        tools=[look],
        project_dir=project,
        config=config,
    )


async def _log(store: Store, session_id: str, start: int) -> list[tuple[str, Any]]:
    """The entries from ``start`` on, with what decides an admission (not the timestamps)."""
    shown: list[tuple[str, Any]] = []
    for record in await store.read(session_id, start):
        entry = record.entry
        detail: Any = None
        if isinstance(entry, SystemPromptCheckpoint):
            detail = sorted(entry.changed)
        elif isinstance(entry, ContextEpoch):
            detail = (entry.epoch, entry.history_start, entry.reason, entry.baseline)
        shown.append((entry.kind, detail))
    return shown


@pytest.mark.parametrize("name", list(STORES))
@pytest.mark.parametrize("compact_at", [None, 3])
async def test_a_reopened_session_sends_what_an_open_one_sends(
    name: str, compact_at: int | None, tmp_path: Path
) -> None:
    results: list[tuple[bool, int | str, list[Any]]] = []
    for reopen in (False, True):
        folder = tmp_path / f"reopen={reopen}"
        folder.mkdir()
        runtime = _runtime(STORES[name](folder), tmp_path)
        try:
            session = await runtime.create_session()
            for i in range(7):
                if i == compact_at:
                    assert await session.compact()
                if reopen:
                    session = await runtime.open_session(session.id)
                start = (await runtime.store.get_session(session.id)).next_seq
                await session.prompt(f"question {i}")
                results.append((reopen, i, await _log(runtime.store, session.id, start)))
            model = runtime.model
            assert isinstance(model, ags.ScriptedModel)
            results.append((reopen, "requests", [digest(r) for r in model.requests]))
        finally:
            await runtime.close()
    stayed = [(i, what) for reopen, i, what in results if not reopen]
    reopened = [(i, what) for reopen, i, what in results if reopen]
    assert reopened == stayed
    assert any(kind == "epoch" for _, log in stayed[:-1] for kind, _ in log)


async def test_reopening_decodes_no_dispatch_record_nor_checkpoint(tmp_path: Path) -> None:
    store = DecodedKinds(tmp_path / "s.db")
    runtime = _runtime(store, tmp_path)
    try:
        session = await runtime.create_session()
        for i in range(6):
            await session.prompt(f"question {i}")
        reopened = await runtime.open_session(session.id)
        store.kinds.clear()
        await reopened.preview_request("question 6")
        # The epoch, the view's entries and the one newest dispatch record (was it sent?).
        assert store.kinds.count("dispatch") <= 1
        assert "system_prompt_checkpoint" not in store.kinds
        assert set(store.kinds) <= {*VIEW_KINDS, "epoch", "dispatch"}
        assert "epoch" in store.kinds and "user" in store.kinds  # the view was read
    finally:
        await runtime.close()


_any_entry: st.SearchStrategy[LogEntry] = st.one_of(*ENTRY_STRATEGIES.values())


@settings(max_examples=150, deadline=None)
@given(
    entries=st.lists(_any_entry, max_size=14),
    start=st.integers(0, 6),
    number=st.integers(0, 2),
    summary=st.none() | st.integers(0, 14),
)
def test_the_model_view_reads_only_its_kinds(
    entries: list[LogEntry], start: int, number: int, summary: int | None
) -> None:
    epoch = ContextEpoch(number, (), (), start, summary_seq=summary)
    records = [Record(seq, entry) for seq, entry in enumerate(entries)]
    kept = [r for r in records if r.entry.kind in VIEW_KINDS]
    assert project(records, epoch) == project(kept, epoch)
    assert project(records, None) == project(kept, None)
