"""A retry of a step a dead process left reads that step once, or not at all after the lease.

Opening the session reads the step from its last dispatch on (to show it as interrupted); the
retry then takes the lease, closes the step and reads it again to see where to go on. The
writer keeps the tail it read and extends it with what it writes, so the second read is never
made; and where the store reads the log's end in the same round trip as it takes the lease
(the ``take_lease`` fast path), the first is not made either when nothing was written since the
open. When something was written between the open and the lease, the kept tail is dropped and
the retry decides from the log as it is — it never closes a step twice or runs one again.

The step is left unfinished the way a killed process leaves it: a fork of a finished turn up to
its response (or its dispatch) has no lease and no result after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.errors import UsageError
from agentsession.log import Interrupted, Record, ToolResultEntry
from agentsession.store.fast import FastPaths, fast_paths

from .store.wrappers import DelegatingStore


@ags.tool
def count_words(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text to count.
    """
    return len(text.split())


class Counted(DelegatingStore):
    """Counts the reads of the last dispatch (each one the start of a tail read)."""

    def __init__(self, inner: ags.Store) -> None:
        super().__init__(inner)
        self.dispatch_reads = 0

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        if list(kinds) == ["dispatch"]:
            self.dispatch_reads += 1
        return await super().last(session_id, kinds)


class Seeing(Counted):
    """Also takes a lease the way PostgreSQL does: the log's end read right after taking it."""

    def __init__(self, inner: ags.Store) -> None:
        super().__init__(inner)
        self.fast_paths = FastPaths(take_lease=self._take_lease_seeing)

    async def _take_lease_seeing(
        self, session_id: str, owner: str, ttl: float
    ) -> tuple[bool, int | None]:
        took = await self.acquire_lease(session_id, owner, ttl)
        return took, (await self.get_session(session_id)).next_seq


def _runtime(store: ags.Store, tmp_path: Path, replies: list[Any]) -> ags.Runtime:
    return ags.Runtime(
        store=store,
        model=ags.ScriptedModel(replies),
        tools=[count_words],
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )


async def _left_unfinished(tmp_path: Path, upto: str) -> str:
    """A session whose last step a dead process left: up to its response or its dispatch."""
    runtime = _runtime(
        ags.SQLiteStore(tmp_path / "db.sqlite"),
        tmp_path,
        [[ags.ToolCall("count_words", {"text": "a b c"})], "three"],
    )
    session = await runtime.create_session()
    await session.prompt("count a b c")
    log = await session.log()
    at = next(r.seq for r in log if r.entry.kind == upto)
    fork = await session.fork(at)
    await runtime.close()
    return fork.id


@pytest.mark.parametrize("upto", ["assistant", "dispatch"])
async def test_a_retry_reads_no_tail_after_the_lease_when_the_log_is_unchanged(
    tmp_path: Path, upto: str
) -> None:
    sid = await _left_unfinished(tmp_path, upto)
    store = Seeing(ags.SQLiteStore(tmp_path / "db.sqlite"))
    assert fast_paths(store).take_lease is not None
    model = ags.ScriptedModel(["done"])
    runtime = ags.Runtime(
        store=store,
        model=model,
        tools=[count_words],
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    session = await runtime.open_session(sid)
    opened = store.dispatch_reads
    result = await session.retry()
    await runtime.close()
    assert opened == 1  # the open read the step once
    assert store.dispatch_reads == opened  # and the retry not again
    assert result.text == "done"
    entries = [r.entry for r in await _log(tmp_path, sid)]
    # The dead step closed once, truthfully, and the turn went on once.
    assert sum(isinstance(e, Interrupted) for e in entries) == 1
    if upto == "assistant":
        results = [e for e in entries if isinstance(e, ToolResultEntry)]
        assert len(results) == 1 and results[0].is_error  # never run again: unknown
    assert len(model.requests) == 1


async def test_on_a_store_that_cannot_tell_the_retry_reads_the_tail_once_after_the_lease(
    tmp_path: Path,
) -> None:
    sid = await _left_unfinished(tmp_path, "assistant")
    store = Counted(ags.SQLiteStore(tmp_path / "db.sqlite"))
    assert fast_paths(store).take_lease is None
    runtime = _runtime(store, tmp_path, ["done"])
    session = await runtime.open_session(sid)
    opened = store.dispatch_reads
    result = await session.retry()
    await runtime.close()
    # Read afresh once the lease is held (the open's read may be stale), not again after the
    # step's closing: that is kept from what the writer wrote.
    assert store.dispatch_reads == opened + 1
    assert result.text == "done"


@pytest.mark.parametrize("seeing", [True, False])
async def test_a_log_written_between_the_open_and_the_lease_is_read_again(
    tmp_path: Path, seeing: bool
) -> None:
    sid = await _left_unfinished(tmp_path, "assistant")
    wrap = Seeing if seeing else Counted
    model = ags.ScriptedModel(["late"])
    late = ags.Runtime(
        store=wrap(ags.SQLiteStore(tmp_path / "db.sqlite")),
        model=model,
        tools=[count_words],
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    stale = await late.open_session(sid)  # reads the unfinished step; takes no lease
    first = _runtime(ags.SQLiteStore(tmp_path / "db.sqlite"), tmp_path, ["first"])
    taker = await first.open_session(sid)
    assert (await taker.retry()).text == "first"  # another process finished it meanwhile
    await first.close()
    before = [r.entry for r in await _log(tmp_path, sid)]
    # The late retry takes the free lease, sees the log moved, and decides from the log as it
    # is: the turn is over. Never a second closing, never the model again.
    with pytest.raises(UsageError, match="nothing to retry"):
        await stale.retry()
    await late.close()
    assert [r.entry for r in await _log(tmp_path, sid)] == before
    assert model.requests == []


async def _log(tmp_path: Path, sid: str) -> list[Record]:
    store = ags.SQLiteStore(tmp_path / "db.sqlite")
    try:
        return await store.read(sid)
    finally:
        await store.close()
