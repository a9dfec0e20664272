"""``agentsession cost [ID | --all] [--json]``: what sessions cost, from the stored usage.

Reads the store only (read-only, never creating a database): each session's dispatch records
and responses make its ledger, priced with the configuration file's ``[prices]`` over the
shipped table (``ledger.prices``), as ``session.cost()`` of a runtime given the same prices.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from ..config import ModelPrice
from ..errors import UsageError
from ..hygiene import visible_line
from ..ledger import LEDGER_KINDS, CostSummary, Ledger, cost_fields, cost_lines, summarize
from ..store.base import Store
from .addressing import find_session
from .invocation import Invocation
from .output import JsonOutput

__all__ = ["COST_COMMANDS", "stored_cost"]


async def stored_cost(
    store: Store, session_id: str, prices: Mapping[str, ModelPrice] | None = None
) -> CostSummary:
    """The cost summary of a stored session (``prices`` over the shipped ones)."""
    info = await store.get_session(session_id)
    ledger = Ledger(info.next_seq)
    ledger.prime(await store.read(session_id, 0, info.next_seq, kinds=list(LEDGER_KINDS)))
    return summarize(ledger.charges(), prices)


async def cost(inv: Invocation) -> int:
    """``cost``: one session's cost, or every session's with ``--all``."""
    args = inv.args
    if bool(args.all) == bool(args.id):
        raise UsageError("cost needs a session ID or --all (not both)")
    if args.all and not inv.postgres and not inv.db.exists():
        # An ID names a session that is not there: ``inv.store`` says so, as ``show`` does.
        inv.output.note(f"no sessions yet (no database at {inv.db})")
        return 0
    store = inv.store("read")
    try:
        if args.all:
            ids = [s.id for s in await store.list_sessions()]
        else:  # a unique prefix names a session, as everywhere else
            ids = [(await find_session(store, args.id)).id]
        prices = inv.config().prices
        summaries = [(sid, await stored_cost(store, sid, prices)) for sid in ids]
    finally:
        await store.close()
    if isinstance(inv.output, JsonOutput):
        for sid, summary in summaries:
            inv.output.emit("cost", id=sid, **cost_fields(summary))
        return 0
    for sid, summary in summaries:
        print(f"session {visible_line(sid)}")
        for line in cost_lines(summary):
            print(f"  {line}")
    if args.all and summaries:
        totals = [s.total_usd for _, s in summaries]
        known = [t for t in totals if t is not None]
        unpriced = len(totals) - len(known)
        # A sum over no priced session would be a made-up $0: say "no price" instead.
        money = f"${sum(known):,.4f}" if known else "no price"
        plural = "session" if unpriced == 1 else "sessions"
        tail = f" ({unpriced} {plural} without a price)" if unpriced and known else ""
        count = len(summaries)
        print(f"{f'all {count} sessions' if count > 1 else '1 session'}: {money}{tail}")
    return 0


COST_COMMANDS: dict[str, Callable[[Invocation], Awaitable[int]]] = {"cost": cost}
