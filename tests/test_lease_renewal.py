"""The lease's background renewal ends with its block, even when a cancellation is swallowed.

Under load a database driver may swallow a cancellation that lands while it waits for a pooled
connection (``asyncio.wait_for`` before Python 3.12 does); the renewal must end anyway, or the
operation that holds the lease never finishes and keeps the session leased forever.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import agentsession as ags
from agentsession.engine.leases import LeaseKeeper


class SwallowingStore(ags.SQLiteStore):
    """Renewing waits until cancelled, then swallows the cancellation and reports success."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.entered = asyncio.Event()
        self.renewals = 0

    async def renew_lease(self, session_id: str, owner: str, ttl: float = 30.0) -> bool:
        self.renewals += 1
        self.entered.set()
        with contextlib.suppress(asyncio.CancelledError):  # the driver loses the cancellation
            await asyncio.Event().wait()
        return True


async def test_renewal_ends_when_its_cancellation_is_swallowed(tmp_path: Path) -> None:
    store = SwallowingStore(tmp_path / "db.sqlite")
    runtime = ags.Runtime(store=store, model=ags.ScriptedModel([]), project_dir=tmp_path)
    session = await runtime.create_session()
    keeper = LeaseKeeper(store, session.id, ttl=0.3)
    await keeper.hold()

    async def block() -> None:
        async with keeper.renewing():
            await asyncio.wait_for(store.entered.wait(), 120)

    await asyncio.wait_for(block(), 120)  # without the fix this never returns
    assert store.renewals == 1
    await runtime.close()
