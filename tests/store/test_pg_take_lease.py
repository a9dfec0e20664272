"""PostgreSQL takes a lease and reads the log's end in one round trip (``take_lease``).

The seq is read after the lease is taken, in a statement of its own on the same connection, so
a session that took the lease and finds the log ending where its open read it knows nothing was
written since. A retry of a step a dead process left then reads that step from the open's
snapshot alone: no read of the tail after the lease, before or after closing the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.errors import SessionNotFoundError
from agentsession.log import Interrupted, Record
from agentsession.store import PostgresStore
from agentsession.store.fast import fast_paths

pytestmark = pytest.mark.postgres


def _runtime(store: ags.Store, tmp_path: Path, replies: list[Any]) -> ags.Runtime:
    return ags.Runtime(
        store=store,
        model=ags.ScriptedModel(replies),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )


async def test_the_lease_comes_with_the_logs_end(pg_dsn: str, tmp_path: Path) -> None:
    store = PostgresStore(pg_dsn)
    runtime = _runtime(store, tmp_path, ["one", "two"])
    try:
        session = await runtime.create_session()
        await session.prompt("hello")
        await session.close()
        take = fast_paths(store).take_lease
        assert take is not None
        end = (await store.get_session(session.id)).next_seq
        assert await take(session.id, "first-owner", 30.0) == (True, end)
        # Another live owner is refused, and still told where the log ends.
        assert await take(session.id, "second-owner", 30.0) == (False, end)
        lease = await store.lease_of(session.id)
        assert lease is not None and lease.owner == "first-owner"
        with pytest.raises(SessionNotFoundError):
            await take("0" * 32, "first-owner", 30.0)
    finally:
        await runtime.close()


class Watching(PostgresStore):
    """Watches its leases through ``acquire_lease`` alone."""

    taken = 0

    async def acquire_lease(self, session_id: str, owner: str, ttl: float = 30.0) -> bool:
        self.taken += 1
        return await super().acquire_lease(session_id, owner, ttl)


async def test_a_store_that_watches_acquire_lease_is_not_bypassed(
    pg_dsn: str, tmp_path: Path
) -> None:
    store = Watching(pg_dsn)
    assert fast_paths(store).take_lease is None
    runtime = _runtime(store, tmp_path, ["one"])
    try:
        session = await runtime.create_session()
        await session.prompt("hello")
        assert store.taken >= 1
    finally:
        await runtime.close()


async def test_a_retry_on_a_serving_store_reads_the_dead_step_from_the_open_alone(
    pg_dsn: str, tmp_path: Path
) -> None:
    first = _runtime(PostgresStore(pg_dsn), tmp_path, ["answer"])
    session = await first.create_session()
    await session.prompt("hello")
    log = await session.log()
    dispatched = [r.seq for r in log if r.entry.kind == "dispatch"][-1]
    fork = await session.fork(dispatched)  # dispatched, never answered: as a killed process
    await first.close()

    store = PostgresStore(pg_dsn)
    model = ags.ScriptedModel(["again"])
    runtime = ags.Runtime(
        store=store, model=model, project_dir=tmp_path, config=ags.Config(titles=False)
    )
    try:
        await (await runtime.create_session()).close()  # the store serves: its pool in use
        opened = await runtime.open_session(fork.id)  # a serving store: the open's snapshot
        tails: list[Sequence[str]] = []
        last = store.last

        async def counted(session_id: str, kinds: Sequence[str]) -> Record | None:
            tails.append(kinds)
            return await last(session_id, kinds)

        store.last = counted  # type: ignore[method-assign]
        result = await opened.retry()
        assert result.text == "again"
        assert ["dispatch"] not in [list(k) for k in tails]  # the tail was never read again
        entries = [r.entry for r in await store.read(fork.id)]
        assert sum(isinstance(e, Interrupted) for e in entries) == 1
        assert len(model.requests) == 1
    finally:
        await runtime.close()
