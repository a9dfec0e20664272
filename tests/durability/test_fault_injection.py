"""A write fails at every write point of a scripted session with tools: nothing is lost or redone.

A clean run of the script counts its writes (creating the session, taking its lease, each
admission, each response, each tool result, the title, releasing the lease). Then, for every N,
the script runs again on a store whose N-th write fails — refused before it happens, or
committed with the answer lost (``"after"``: a connection dropped during ``COMMIT``). Right
after the failure:

- a commit after a model or tool call leaves ``session.pending`` holding exactly the step not yet
  in the log (the refused batch and the results of calls that ran after it); ``flush()`` writes
  it, after which the log holds exactly those entries after what was there before, and a lost
  answer's batch is not written twice; a refused response runs no tool (write-ahead);
- a failed admission keeps nothing pending; the model was not called for it;
- ``retry()`` finishes the turn (when the prompt itself was never stored, it is sent again).

At the end the model got exactly the requests of the clean run (same digests, same order), each
tool call ran once, the transcript is the clean run's, and the log passes ``check_log``. A
property test then fails several writes at once, of both kinds, including during ``flush()`` and
``retry()`` themselves.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.errors import StoreError
from agentsession.log import (
    AssistantEntry,
    Dispatch,
    LogEntry,
    Record,
    ToolResultEntry,
    UserEntry,
)
from agentsession.request import digest

from ..store.wrappers import WRITES, DelegatingStore
from .common import (
    check_log,
    fingerprint,
    plan_prompt,
    planned_reply,
    side_runs,
    side_tool,
    transcript,
)
from .conftest import fixed_clock

When = Literal["before", "after"]
#: Every write a session makes: the log and session-row changes, and its lease.
FAULT_POINTS = (*WRITES, "acquire_lease", "renew_lease", "release_lease")
#: Writes whose failure is not raised by design: a title and a release are conveniences.
SILENT = ("set_title", "release_lease")
PROMPTS = [plan_prompt("f", k) for k in range(4)]
CONFIG = ags.Config(retry_base_delay=0, titles=False, environment=())


@dataclass(frozen=True)
class Attempt:
    """One append as the store was asked for it, and how many tool runs had happened."""

    expected_seq: int
    entries: tuple[LogEntry, ...]
    side_runs: int


class Faults(DelegatingStore):
    """Fails the writes numbered in ``faults`` (1 = the first), each before or after it happens.

    Wraps a store the whole test shares (closing it is the test's job) and notes every append.
    """

    def __init__(self, inner: ags.Store, faults: Mapping[int, When], side: Path) -> None:
        super().__init__(inner)
        self.faults = dict(faults)
        self.side = side
        self.writes = 0
        self.failed: list[tuple[int, str]] = []
        self.attempts: list[Attempt] = []

    def _fail(self, method: str) -> None:
        self.failed.append((self.writes, method))
        raise StoreError(f"injected failure of write {self.writes} ({method})")

    async def _before(self, method: str) -> None:
        await super()._before(method)
        if method in FAULT_POINTS:
            self.writes += 1
            if self.faults.get(self.writes) == "before":
                self._fail(method)

    async def _after(self, method: str) -> None:
        if method in FAULT_POINTS and self.faults.get(self.writes) == "after":
            self._fail(method)

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        runs = sum(side_runs(self.side).values())
        self.attempts.append(Attempt(expected_seq, tuple(entries), runs))
        return await super().append(session_id, expected_seq, entries)

    async def close(self) -> None:
        """The inner store outlives this run."""


@dataclass
class Outcome:
    """What one run of the script produced."""

    records: list[Record]
    requests: list[str]
    runs: Counter[str]
    writes: int
    raised: int
    failed: list[tuple[int, str]]
    points: list[str] = field(default_factory=list)


async def run_script(
    inner: ags.Store, folder: Path, faults: Mapping[int, When], *, check: bool = True
) -> Outcome:
    """Run the script over ``faults``; ``check`` each failure's state (one fault at a time)."""
    side = folder / "side.txt"
    store = Faults(inner, faults, side)
    model = ags.ScriptedModel(planned_reply)
    runtime = ags.Runtime(
        store=store,
        model=model,
        tools=[side_tool(side)],
        project_dir=folder,
        config=CONFIG,
        clock=fixed_clock,
    )
    raised = 0
    points: list[str] = []
    try:
        session = None
        while session is None:
            try:
                session = await runtime.create_session()
            except ags.StoreError:
                raised += 1  # a new session then; one whose answer was lost stays empty
                points.append("create")
        for text in PROMPTS:
            try:
                await session.prompt(text)
                continue
            except ags.StoreError:
                raised += 1
                if check:
                    points.append(await check_failure(session, store, inner, faults))
            raised += await finish(session, text)
        records = await inner.read(session.id)
        assert session.pending == 0
    finally:
        await runtime.close()
    requests = [digest(r) for r in model.requests]
    return Outcome(records, requests, side_runs(side), store.writes, raised, store.failed, points)


async def check_failure(
    session: ags.Session, store: Faults, inner: ags.Store, faults: Mapping[int, When]
) -> str:
    """Right after a failed write: what is pending, what the log holds; flush. Returns its kind."""
    number, method = store.failed[-1]
    if method != "append":
        assert session.pending == 0
        return method
    attempt = store.attempts[-1]
    batch = list(attempt.entries)
    held = len(await inner.read(session.id))
    written = len(batch) if faults[number] == "after" else 0
    assert held == attempt.expected_seq + written  # whole or nothing
    if any(isinstance(e, Dispatch) for e in batch):
        # An admission: raised at once, nothing kept; the model was not called for it.
        assert session.pending == 0
        return "admission"
    pending = session.pending
    assert pending >= len(batch)
    response = any(isinstance(e, AssistantEntry) for e in batch)
    if response:
        # Write-ahead: no tool of a response that is not durable ran.
        assert sum(side_runs(store.side).values()) == attempt.side_runs
        assert pending == 1
    assert await session.flush() == pending
    assert session.pending == 0
    log = await inner.read(session.id)
    assert len(log) == attempt.expected_seq + pending  # exactly the step, once
    stored = log[attempt.expected_seq :]
    assert [fingerprint(r.entry) for r in stored[: len(batch)]] == [fingerprint(e) for e in batch]
    assert all(isinstance(r.entry, ToolResultEntry) for r in stored[len(batch) :])
    return "response" if response else "tool_result"


async def finish(session: ags.Session, text: str) -> int:
    """Finish the prompt's turn after a failure, as an application would; count new failures."""
    raised = 0
    while True:
        try:
            if session.pending:
                await session.flush()
            try:
                await session.retry()
            except ags.UsageError as exc:
                assert "nothing to retry" in str(exc), exc
                log = await session.log()
                users = [r.entry.content for r in log if isinstance(r.entry, UserEntry)]
                if text not in users:  # the prompt itself was never stored: send it again
                    await session.prompt(text)
            return raised
        except ags.StoreError:
            raised += 1
            assert raised < 20, "the store keeps failing"


def assert_same_as_clean(outcome: Outcome, clean: Outcome, label: str) -> None:
    assert outcome.raised == sum(m not in SILENT for _, m in outcome.failed), label
    assert outcome.requests == clean.requests, label  # the same requests, none repeated
    assert set(outcome.runs.values()) == {1}, label  # every call ran once
    assert len(outcome.runs) == len(clean.runs), label
    assert transcript(outcome.records) == transcript(clean.records), label
    report = check_log(outcome.records, [side_tool(Path("unused"))], CONFIG)
    assert report.problems() == [], label
    results = {
        r.entry.call_id
        for r in outcome.records
        if isinstance(r.entry, ToolResultEntry) and not r.entry.is_error
    }
    assert results == set(outcome.runs), label
    extra = Counter(r.entry.kind for r in outcome.records)
    extra.subtract(Counter(r.entry.kind for r in clean.records))
    # A lost answer of an admission: that step is closed as interrupted and sent again.
    assert {k for k, n in extra.items() if n} <= {"interrupted", "dispatch"}, (label, extra)


@pytest.mark.parametrize("when", ["before", "after"])
async def test_a_failed_write_at_every_write_point(
    inner_store: ags.Store, tmp_path: Path, when: When
) -> None:
    for name in ["clean", *(f"fail-{n}" for n in range(1, 100))]:
        (tmp_path / name).mkdir()
    clean = await run_script(inner_store, tmp_path / "clean", {})
    assert clean.raised == 0 and clean.failed == []
    kinds = Counter(r.entry.kind for r in clean.records)
    assert kinds["tool_result"] == len(clean.runs) >= 6 and kinds["user"] == len(PROMPTS)
    assert 15 <= clean.writes < 100
    points: Counter[str] = Counter()
    for n in range(1, clean.writes + 1):
        outcome = await run_script(inner_store, tmp_path / f"fail-{n}", {n: when})
        label = f"write {n} failed {when} it happened"
        assert len(outcome.failed) == 1, label
        assert_same_as_clean(outcome, clean, label)
        points.update(outcome.points or [outcome.failed[0][1]])
    # Every kind of write point was hit, each commit kind more than once.
    assert set(points) == {
        "create",
        "acquire_lease",
        "admission",
        "response",
        "tool_result",
        "set_title",
        "release_lease",
    }, points
    assert min(points["admission"], points["response"], points["tool_result"]) >= 3, points


@settings(max_examples=30, deadline=None)
@given(
    faults=st.dictionaries(
        st.integers(min_value=1, max_value=40),
        st.sampled_from(["before", "after"]),
        min_size=1,
        max_size=6,
    ),
    sqlite=st.booleans(),
)
def test_several_failed_writes_anywhere_lose_nothing(faults: dict[int, When], sqlite: bool) -> None:
    """Failures in a row, also while flushing or retrying: the end is the clean run's."""

    async def play(folder: Path) -> None:
        for name in ("clean", "faulty"):
            (folder / name).mkdir()
        inner: ags.Store = ags.SQLiteStore(folder / "s.db") if sqlite else ags.MemoryStore()
        try:
            clean = await run_script(inner, folder / "clean", {}, check=False)
            outcome = await run_script(inner, folder / "faulty", faults, check=False)
        finally:
            await inner.close()
        assert_same_as_clean(outcome, clean, f"faults {faults}")

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(play(Path(folder)))
