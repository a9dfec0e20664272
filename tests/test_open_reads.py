"""Opening a stored session asks its independent reads at once, not one after another.

A busy server opens the session at the start of every turn (a takeover too), and each read
that waits for the one before costs it a round trip. The store here answers the state read
only once the lease has been asked about as well: an open that asked them in turn would never
finish (the bound around it fails the test instead), one that asks them together opens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import agentsession as ags
from agentsession.log import STATE_KINDS, Record
from agentsession.store import Lease

from .store.wrappers import DelegatingStore

#: A bound for an open that never comes, not a measure of time.
NEVER = 120.0


class StateAfterLease(DelegatingStore):
    """Holds the read of the state entries until the session's lease has been asked about."""

    def __init__(self, inner: ags.SQLiteStore) -> None:
        super().__init__(inner)
        self.gating = False
        self.lease_asked = asyncio.Event()
        self.held_reads = 0

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        if self.gating and kinds is not None and set(kinds) == set(STATE_KINDS):
            self.held_reads += 1
            await self.lease_asked.wait()
        return await super().read(session_id, start, end, kinds)

    async def lease_of(self, session_id: str) -> Lease | None:
        if self.gating:
            self.lease_asked.set()
        return await super().lease_of(session_id)


async def test_opening_asks_the_state_and_the_lease_at_once(tmp_path: Path) -> None:
    store = StateAfterLease(ags.SQLiteStore(tmp_path / "s.db"))
    runtime = ags.Runtime(
        store=store,
        model=ags.ScriptedModel(["an answer", "another"]),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    session = await runtime.create_session()
    await session.prompt("hello")
    await session.close()
    store.gating = True
    reopened = await asyncio.wait_for(runtime.open_session(session.id), NEVER)
    result = await reopened.prompt("again")
    await runtime.close()
    assert store.held_reads == 1
    assert result.text == "another"
    assert [m.role for m in reopened.messages] == ["user", "assistant", "user", "assistant"]
