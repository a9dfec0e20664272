"""The scripted session the fault tests drive, and how an application gets over a failed write.

``run_script`` runs four prompts with tools (0, 1 or 2 rounds of 1 or 2 parallel calls) over a
wrapper of a shared real store that fails chosen writes (``Faults``: the N-th write, refused
before it happens or committed with the answer lost); ``check_failure`` checks the state right
after a failure and flushes; ``finish`` ends the turn as an application would (flush, retry, or
send the prompt again when it was never stored); ``assert_same_as_clean`` compares a run with
the clean run of the same script.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

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
    inner: ags.Store,
    folder: Path,
    faults: Mapping[int, When],
    *,
    check: bool = True,
    wrapper: Callable[[ags.Store, Mapping[int, When], Path], Faults] | None = None,
) -> Outcome:
    """Run the script over ``faults``; ``check`` each failure's state (one fault at a time).

    ``wrapper`` makes the failing store (default: ``Faults``).
    """
    side = folder / "side.txt"
    store = (wrapper or Faults)(inner, faults, side)
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
        assert session.unflushed_entries == 0
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
        assert session.unflushed_entries == 0
        return method
    attempt = store.attempts[-1]
    batch = list(attempt.entries)
    held = len(await inner.read(session.id))
    written = len(batch) if faults[number] == "after" else 0
    assert held == attempt.expected_seq + written  # whole or nothing
    if any(isinstance(e, Dispatch) for e in batch):
        # An admission: raised at once, nothing kept; the model was not called for it.
        assert session.unflushed_entries == 0
        return "admission"
    pending = session.unflushed_entries
    assert pending >= len(batch)
    response = any(isinstance(e, AssistantEntry) for e in batch)
    if response:
        # Write-ahead: no tool of a response that is not durable ran.
        assert sum(side_runs(store.side).values()) == attempt.side_runs
        assert pending == 1
    assert await session.flush() == pending
    assert session.unflushed_entries == 0
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
            if session.unflushed_entries:
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
