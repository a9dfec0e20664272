"""A prompt that finds its session held by another process that runs no turn: it waits.

Every process of a fleet runs the idle pass (``serve --idle-interval``), which holds a session's
lease for one keep-warm or compaction call. A prompt sent to another process at that moment
would be refused (409) for the package's own upkeep. So a turn's start that meets a lease held
elsewhere looks at the log: while no step is under way there (nothing dispatched and left
unanswered, no tool call without its result), the holder is taken to be busy with upkeep and
the prompt waits for the lease to be let go, then starts. As soon as the log shows a step under
way — the holder runs a turn after all — the conflict stands (409, as before), and so it does
when the lease outlives its own lifetime (a holder that is alive but stuck).
"""

from __future__ import annotations

import asyncio
import time

from ..engine.leases import live_lease
from ..engine.recovery import closing_entries
from ..log import now
from ..store.base import Store

__all__ = ["POLL", "released"]

#: Seconds between looks at the lease while waiting (a keep-warm call lasts about a second).
POLL = 0.2


async def _step_under_way(store: Store, session_id: str) -> bool:
    """Whether the log shows a dispatched step that is not settled (a turn running there)."""
    last = await store.last(session_id, ["dispatch"])
    if last is None:
        return False
    return bool(closing_entries(await store.read(session_id, last.seq), now(), "process"))


async def released(store: Store, session_id: str, holder: str, longest: float) -> bool:
    """Wait while ``holder`` keeps the session's lease and runs no turn; whether it let go.

    ``False`` at once when the log shows a step under way, or after ``longest`` seconds.
    """
    until = time.monotonic() + longest
    while True:
        if await _step_under_way(store, session_id):
            return False
        lease = await live_lease(store, session_id)
        if lease is None or lease.owner != holder:
            return True
        if time.monotonic() >= until:
            return False
        await _pause()


async def _pause() -> None:
    await asyncio.sleep(POLL)
