"""A write fails at every write point of a scripted session with tools: nothing is lost or redone.

A clean run of the script counts its writes (creating the session, taking its lease, each
admission, each response, each tool result, the title, releasing the lease). Then, for every N,
the script runs again on a store whose N-th write fails — refused before it happens, or
committed with the answer lost (``"after"``: a connection dropped during ``COMMIT``). Right
after the failure:

- a commit after a model or tool call leaves ``session.unflushed_entries`` holding exactly the
  step not yet in the log (the refused batch and the results of calls that ran after it);
  ``flush()`` writes it, after which the log holds exactly those entries after what was there
  before, and a lost answer's batch is not written twice; a refused response runs no tool
  (write-ahead);
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
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags

from .script import PROMPTS, When, assert_same_as_clean, run_script


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
