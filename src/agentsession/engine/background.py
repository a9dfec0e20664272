"""Background compaction: a summary written while the session is idle, adopted at the next prompt.

``prepare_summary`` runs when the application (or its idle timer) asks: under the session's
guard — never while a turn runs or approvals wait — and only past a size threshold, it writes
the summary the next compaction would (the provider's block or the cache-reading summary,
``Config.compaction`` decides) and commits only the call's bill (a ``SideCall`` with reason
``"background"``). The summary waits in memory (``Admitter.prepared``) with the log's next
seq; the next prompt's boundary commits it with its epoch in one transaction if the log is
unchanged and the model the same (``Admitter.adopt``), and drops it otherwise. A process that
dies in between leaves the bill and the old epoch: nothing is half-done, and the next prompt
runs as if nothing had been prepared.
"""

from __future__ import annotations

from ..budget import total_tokens
from ..errors import ProviderError, UsageError
from ..providers.base import Model
from .admission import Admitter
from .deps import SessionDeps
from .guard import Guard
from .summary_call import Prepared, write_summary

__all__ = ["BACKGROUND_SHARE", "background_threshold", "prepare_summary"]

BACKGROUND_SHARE = 0.8
"""Prepared past this share of the tokens at which a prompt compacts automatically: the next
prompts would likely cross it, and the summary is then written while nobody waits."""


def background_threshold(deps: SessionDeps, model: Model) -> int:
    """The size of the live request past which a background summary is prepared."""
    profile = model.profile
    limit = deps.budget.limit(
        model_window=profile.context_window, max_output_tokens=profile.max_output_tokens
    )
    return int(limit * deps.config.compact_threshold * BACKGROUND_SHARE)


async def prepare_summary(
    deps: SessionDeps, guard: Guard, admitter: Admitter, model: Model, min_tokens: int | None
) -> bool:
    """Write the next compaction's summary now; ``False``: too small, or nothing to summarise.

    Raises the guard's errors (``SessionBusyError`` while a turn runs or approvals wait) and
    the summariser's (translated), leaving no summary and, for a failed call, no bill.
    """
    async with guard.exclusive(upkeep=True):
        admitter.prepared = None
        plan = await admitter.compaction_plan()
        if plan is None:
            return False
        threshold = background_threshold(deps, model) if min_tokens is None else min_tokens
        try:
            live = await admitter.rebuild(model)
        except UsageError:
            return False
        if total_tokens(live, deps.budget.counter) < threshold:
            return False
        writer = admitter.writer
        written = await write_summary(
            deps,
            writer,
            plan,
            model,
            admitter.rebuild,
            warm=not admitter.cold(),
            reason="background",
        )
        await writer.append([written.call])  # billed now, whatever becomes of the summary
        if not written.text:
            raise ProviderError("the summariser returned an empty summary")
        admitter.prepared = Prepared(written, writer.next_seq, model.name)
        return True
