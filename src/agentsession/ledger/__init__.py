"""The cost ledger: every dispatched request, its provider-reported usage and what it cost.

A ``Charge`` pairs a dispatch record with the response that answered it. Costs are computed
from the recorded usage with the prices in force (``pricing.price_for``), so a corrected price
applies to the past as well; the log keeps the tokens, which are the provider's facts.

A *shortfall* is a request that read from the provider's cache clearly less than the request
before it had sent (more than ``SHORTFALL_SLACK`` tokens less), although nothing the model
was sent in between should have moved the prefix. It is *explained* by the local diagnosis
(the prefix changed), by the provider's own diagnosis (a miss reason) or by a known expiry
(the gap since the request before, by the runtime's clock where it was recorded, exceeds
``SHORTEST_TTL``); otherwise it is an *unexplained
miss*: counted, never hidden.

Calls beside the conversation (``SideCall``: a session title, a compaction summary) are charges
too, with their ``purpose``: billed and summed like any other, but they send another prefix, so
they neither take a turn's response nor count in the shortfall comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Literal

from .._frozen import frozen
from ..codec import builder
from ..log import AssistantEntry, CacheDiagnosis, Dispatch, Record, SideCall, Summary
from ..log.usage_check import checked_usage
from ..request import Usage
from .idle import IdleCall
from .misses import CacheMiss, cache_misses
from .prices import ModelPrice, price_for
from .summary import CostSummary, ModelCost, cost_fields, cost_lines

__all__ = [
    "LEDGER_KINDS",
    "LONGEST_TTL",
    "SHORTEST_TTL",
    "SHORTFALL_SLACK",
    "CacheMiss",
    "Charge",
    "CostEstimate",
    "CostSummary",
    "GapCounts",
    "IdleCall",
    "Ledger",
    "ModelCost",
    "charge_usd",
    "charges_of",
    "cost_fields",
    "cost_lines",
    "summarize",
    "unexplained",
]

LEDGER_KINDS: tuple[str, ...] = ("dispatch", "assistant", "side_call", "summary")
"""The log kinds a ledger is built from."""


@frozen
class CostEstimate:
    """The expected input cost of the next request, from what the provider's cache holds.

    ``cached_tokens`` are expected to be read from the cache (the prefix the previous request
    left warm, if its lifetime has not run out), ``uncached_tokens`` the rest. ``input_usd`` is
    ``None`` when the model has no price (``reason`` then says ``"no price"``); ``reason`` also
    says when the tokens were counted locally rather than by the provider.
    """

    input_usd: float | None
    cached_tokens: int
    uncached_tokens: int
    model: str = ""
    reason: str = ""
    kind: Literal["cost_estimate"] = "cost_estimate"


SHORTEST_TTL = 300.0
"""Seconds: the shortest cache lifetime a provider documents (5 minutes); a longer gap may
have let the cache expire, which explains a miss."""

LONGEST_TTL = 3600.0
"""Seconds: the longest cache lifetime a provider offers (Anthropic's 1 hour)."""

SHORTFALL_SLACK = 1024
"""Tokens: providers cache in blocks and need a minimum prefix; less than this is no miss."""

_PROVIDER_HITS = frozenset({"", "hit", "pending"})


@frozen
class GapCounts:
    """The measured gaps as the cost model needs them: how many, and how many fit each lifetime.

    A session keeps these counts instead of every gap, so choosing a lifetime costs the same at
    the thousandth request as at the third.
    """

    total: int = 0
    within_short: int = 0
    within_long: int = 0
    kind: Literal["gap_counts"] = "gap_counts"

    @classmethod
    def of(cls, gaps: Sequence[float]) -> GapCounts:
        """The counts of ``gaps``."""
        counts = cls()
        for gap in gaps:
            counts = counts.add(gap)
        return counts

    def add(self, gap: float) -> GapCounts:
        """These counts with one more gap of ``gap`` seconds."""
        return GapCounts(
            self.total + 1,
            self.within_short + (gap <= SHORTEST_TTL),
            self.within_long + (gap <= LONGEST_TTL),
        )


@frozen
class Charge:
    """One dispatched request; ``usage`` is ``None`` while (or when) no response was recorded."""

    seq: int
    model: str
    timestamp: str
    local_cache: CacheDiagnosis
    usage: Usage | None = None
    estimated: bool = False
    provider_cache: str = ""
    response_id: str = ""
    sent_at: str = ""  # by the runtime's clock, when known
    purpose: Literal["turn", "title", "compaction", "keep_warm"] = "turn"
    reason: str = ""  # a side call's, when it says why it was made
    compacted: bool = False  # the provider compacted this request before answering it
    # (a compaction call's: it was the provider's compaction, which reads no summary's cache)
    block_after: bool = False  # a provider's compaction block was committed after this charge
    kind: Literal["charge"] = "charge"


class Ledger:
    """The charges of one session: primed from the stored log once, extended as records commit.

    ``start_seq`` is where the log stood when the session was opened; ``prime`` takes the
    stored records before it (read when they are first needed).
    """

    def __init__(self, start_seq: int = 0) -> None:
        self.start_seq = start_seq
        self.primed = start_seq == 0
        self._early: list[Charge] = []
        self._late: list[Charge] = []
        # Running figures, so the cache policy's questions cost the same at every request.
        self._noted: datetime | None = None
        self._gaps = GapCounts()
        self._read = 0
        self._written = 0
        self.stored_response_id: str | None = None  # the newest before opening, once looked up
        self.ttl_seconds = SHORTEST_TTL  # the cache lifetime the last request asked for

    def prime(self, records: Iterable[Record]) -> None:
        """Take the stored records before ``start_seq`` (any order-preserving read of them)."""
        early: list[Charge] = []
        for record in records:
            if record.seq < self.start_seq:
                _fold(early, record)
        self._early, self.primed = early, True

    def take(self, record: Record) -> None:
        """Fold in one record just committed."""
        entry = record.entry
        # Only a turn's response counts here: a side call (title, summary) sends another prefix,
        # and it may stand after the turn's charge, so the folded usage is the entry's own.
        if _fold(self._late, record) and isinstance(entry, AssistantEntry):
            usage = checked_usage(entry.usage)[0]
            self._read += usage.cached_input_tokens
            self._written += usage.cache_write_tokens

    def charges(self) -> list[Charge]:
        """Every charge known, oldest first (the stored ones only once primed)."""
        return [*self._early, *self._late]

    def last(self) -> Charge | None:
        """The newest turn's charge taken since the session opened, if any."""
        return next((c for c in reversed(self._late) if c.purpose == "turn"), None)

    def last_answered(self) -> Charge | None:
        """The newest turn's charge since the session opened that got a response."""
        return next(
            (c for c in reversed(self._late) if c.usage is not None and c.purpose == "turn"), None
        )

    def note(self, moment: datetime) -> None:
        """Note that a request is sent at ``moment`` (the runtime's clock)."""
        if self._noted is not None:
            self._gaps = self._gaps.add((moment - self._noted).total_seconds())
        self._noted = moment

    def last_noted(self) -> datetime | None:
        """When the newest request noted was sent (the runtime's clock), if any."""
        return self._noted

    def gaps(self) -> GapCounts:
        """The gaps between the requests noted, counted as the cache policy needs them."""
        return self._gaps

    def write_ratio(self) -> float:
        """Tokens written to the cache per token read from it, over the responses since opening."""
        return self._written / self._read if self._read else 0.1


def charges_of(records: Iterable[Record]) -> list[Charge]:
    """The charges of a whole stored log (``records`` in seq order)."""
    charges: list[Charge] = []
    for record in records:
        _fold(charges, record)
    return charges


def _fold(charges: list[Charge], record: Record) -> bool:
    """Fold ``record`` into ``charges``; whether it was the response of the last one."""
    entry = record.entry
    if isinstance(entry, Dispatch):
        # Built as ``Charge`` builds it, its fields stored at once: a whole log's fold makes
        # two per request (one at the dispatch, one at its response).
        made = builder(Charge)
        charges.append(made(record.seq, entry.model, entry.timestamp, entry.cache))
    elif isinstance(entry, SideCall):
        # A log written before usage was checked on arrival may hold any figure: checked again.
        usage, note = checked_usage(entry.usage)
        estimated = entry.usage_estimated or bool(note) or usage.input_tokens <= 0
        charges.append(
            Charge(
                record.seq,
                entry.model,
                entry.timestamp,
                "unknown",
                usage=usage,
                estimated=estimated,
                purpose=entry.purpose,
                reason=entry.reason,
                # Committed after the provider's block (its epoch first): the provider's call.
                compacted=entry.purpose == "compaction" and _block_before(charges),
            )
        )
    elif isinstance(entry, AssistantEntry):
        # The response answers the newest turn's dispatch; a side call may stand between.
        at = next((i for i in range(len(charges) - 1, -1, -1) if charges[i].purpose == "turn"), -1)
        if at < 0 or charges[at].usage is not None:
            return False
        asked = charges[at]
        usage, note = checked_usage(entry.usage)
        # Built directly: ``dataclasses.replace`` costs several times more, once per response
        # of a whole log when a report or ``cost`` folds it.
        charges[at] = builder(Charge)(
            asked.seq,
            asked.model,
            asked.timestamp,
            asked.local_cache,
            usage,
            entry.usage_estimated or bool(note) or usage.input_tokens <= 0,
            entry.provider_cache,
            entry.response_id,
            entry.sent_at,
            asked.purpose,
            compacted=asked.compacted,
        )
        return True
    elif isinstance(entry, Summary) and entry.block is not None and charges:
        # Committed between a request and its answer: the server compacted that request. Else
        # the provider's compaction call made it, billed before the block (written in the
        # background) or after it (its ``SideCall`` then reads the mark off the charge before).
        last = charges[-1]
        in_flight = last.purpose == "turn" and last.usage is None
        if in_flight or last.purpose == "compaction":
            charges[-1] = replace(last, compacted=True)
        else:
            charges[-1] = replace(last, block_after=True)
    return False


def _block_before(charges: list[Charge]) -> bool:
    """Whether a provider's compaction block was folded right before this side call."""
    return bool(charges) and charges[-1].block_after and charges[-1].purpose != "compaction"


def charge_usd(usage: Usage, price: ModelPrice) -> tuple[float, float]:
    """``(billed, uncached)`` USD of one response: as billed, and without any caching."""
    usage = checked_usage(usage)[0]  # figures of a log written before they were checked
    long_writes = min(usage.cache_write_long_tokens, usage.cache_write_tokens)
    short_writes = usage.cache_write_tokens - long_writes
    fresh = max(0, usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens)
    billed = (
        fresh * price.input
        + usage.cached_input_tokens * price.cached_input
        + short_writes * price.write
        + long_writes * price.write_long
        + usage.output_tokens * price.output
    )
    uncached = usage.input_tokens * price.input + usage.output_tokens * price.output
    return billed / 1e6, uncached / 1e6


def _gap(before: str, after: str) -> float | None:
    try:
        return (datetime.fromisoformat(after) - datetime.fromisoformat(before)).total_seconds()
    except (ValueError, TypeError):
        return None


def unexplained(charges: list[Charge]) -> list[Charge]:
    """The charges whose cache shortfall nothing explains (see the module docstring)."""
    found: list[Charge] = []
    before: Charge | None = None
    touched = ""  # the newest keep-warm call since ``before``: the cache renewed then
    for charge in charges:
        if charge.purpose == "keep_warm":
            touched = charge.timestamp
        if charge.purpose != "turn":
            continue
        if before is not None and _unexplained(before, charge, touched):
            found.append(charge)
        before, touched = charge, ""
    return found


def _unexplained(before: Charge, charge: Charge, touched: str) -> bool:
    if charge.usage is None or before.usage is None or charge.estimated or before.estimated:
        return False
    if charge.usage.cached_input_tokens + SHORTFALL_SLACK >= before.usage.input_tokens:
        return False  # no shortfall
    if charge.local_cache != "hit" or charge.provider_cache not in _PROVIDER_HITS:
        return False  # the prefix changed, and a diagnosis says so
    if touched and charge.sent_at:  # a keep-warm call's timestamp is by the runtime's clock
        gap = _gap(touched, charge.sent_at)
    elif before.sent_at and charge.sent_at:
        gap = _gap(before.sent_at, charge.sent_at)
    else:
        gap = _gap(before.timestamp, charge.timestamp)
    return gap is not None and gap <= SHORTEST_TTL  # a longer one: the cache may have expired


def summarize(charges: list[Charge], prices: Mapping[str, ModelPrice] | None = None) -> CostSummary:
    """The cost summary of ``charges`` with ``prices`` (``Config.prices``) over the shipped ones."""
    # Per model, in order of first use: its price, then the running sums of its row (requests,
    # the four token figures, billed and uncached USD), made into a ModelCost once at the end
    # rather than copied at every charge (a report sums a whole log's).
    sums: dict[str, tuple[ModelPrice | None, list[int], list[float]]] = {}
    estimated = 0
    idle: list[IdleCall] = []
    empty = Usage()
    for charge in charges:
        usage = charge.usage or empty
        estimated += charge.usage is None or charge.estimated
        row = sums.get(charge.model)
        if row is None:
            row = sums[charge.model] = (price_for(charge.model, prices), [0] * 5, [0.0, 0.0])
        price, counts, usd = row
        billed, uncached = charge_usd(usage, price) if price is not None else (None, None)
        if charge.reason:
            idle.append(IdleCall(charge.seq, charge.purpose, charge.reason, billed))
        counts[0] += 1
        counts[1] += usage.input_tokens
        counts[2] += usage.cached_input_tokens
        counts[3] += usage.cache_write_tokens
        counts[4] += usage.output_tokens
        if billed is not None and uncached is not None:
            usd[0] += billed
            usd[1] += uncached
    rows = {
        model: ModelCost(
            model,
            requests=counts[0],
            input_tokens=counts[1],
            cached_input_tokens=counts[2],
            cache_write_tokens=counts[3],
            output_tokens=counts[4],
            total_usd=usd[0] if price is not None else None,
            uncached_usd=usd[1] if price is not None else None,
        )
        for model, (price, counts, usd) in sums.items()
    }
    no_price = tuple(name for name, row in rows.items() if row.total_usd is None)
    total = None if no_price else sum(r.total_usd or 0.0 for r in rows.values())
    plain = None if no_price else sum(r.uncached_usd or 0.0 for r in rows.values())
    return CostSummary(
        total_usd=total,
        uncached_usd=plain,
        saved_usd=None if total is None or plain is None else plain - total,
        by_model=rows,
        estimated=estimated,
        unexplained_misses=len(unexplained(charges)),
        requests=len(charges),
        no_price=no_price,
        misses=cache_misses(charges, prices, slack=SHORTFALL_SLACK, ttl=SHORTEST_TTL),
        idle_calls=tuple(idle),
    )
