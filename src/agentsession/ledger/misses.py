"""Cache misses in dollars: each provider-reported shortfall with its cause and what it cost.

A *miss* is a turn's request that read from the provider's cache more than ``slack`` tokens
less than it could have: the prefix the request before it sent, or the longer one a keep-warm
call between them left (a lift: the last reply too), as far as this request still sends it.
A compaction call that is the summary request extending the live request (the same model;
not the provider's compaction, nor the plain-text render) is judged the same way, its gap
measured to its own timestamp (the runtime's clock). Its cause, first match wins:

- ``compaction``: a compaction summary was made since the request before (a new epoch), or
  the provider compacted the request before inside it (its threshold mode);
- ``expired``: the gap since the cache was last touched (the request before, or a keep-warm
  call after it) exceeds the shortest cache lifetime (by the runtime's clock where it was
  recorded), or cannot be measured;
- ``context change``: the local diagnosis says the tools, the system part or the model changed,
  or the provider's own diagnosis names a miss although the local one saw none;
- ``window move``: only the messages changed — the window moved its start;
- ``unexplained``: none of these (the requests ``unexplained`` counts, and those the local
  diagnosis could not judge).

Its ``usd`` is what the missed tokens cost beyond a cache read: they are taken to be the
request's cache writes first (long-lived ones first), the rest plain input, less the price of
reading them. Summed over a session, that is the bill's excess over a run that read every
prefix it could. Usage that is estimated (not reported by the provider) makes no miss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal, Protocol, TypeAlias

from .._frozen import frozen
from ..config import ModelPrice
from ..request import Usage
from .prices import price_for

__all__ = ["CacheMiss", "MissCause", "cache_misses", "miss_usd"]

MissCause: TypeAlias = Literal[
    "context change", "window move", "expired", "compaction", "unexplained"
]

_PROVIDER_HITS = frozenset({"", "hit", "pending"})
_CHANGED = frozenset({"system_changed", "tools_changed", "model_changed"})


@frozen
class CacheMiss:
    """One provider-reported cache miss: the request's ``seq``, why, and what it cost.

    ``tokens`` were sent uncached although the cache could have held them; ``usd`` is ``None``
    when the model has no price.
    """

    seq: int
    cause: MissCause
    usd: float | None
    tokens: int
    model: str = ""
    kind: Literal["cache_miss"] = "cache_miss"


class _Charge(Protocol):
    """The parts of a ledger ``Charge`` a miss is read from."""

    @property
    def seq(self) -> int: ...
    @property
    def model(self) -> str: ...
    @property
    def timestamp(self) -> str: ...
    @property
    def local_cache(self) -> str: ...
    @property
    def usage(self) -> Usage | None: ...
    @property
    def estimated(self) -> bool: ...
    @property
    def provider_cache(self) -> str: ...
    @property
    def sent_at(self) -> str: ...
    @property
    def purpose(self) -> str: ...
    @property
    def compacted(self) -> bool: ...


def miss_usd(usage: Usage, missed: int, price: ModelPrice) -> float:
    """What ``missed`` tokens of a response with ``usage`` cost beyond reading them cached."""
    written = min(missed, usage.cache_write_tokens)
    long_written = min(written, usage.cache_write_long_tokens)
    fresh = missed - written
    paid = (
        long_written * price.write_long
        + (written - long_written) * price.write
        + fresh * price.input
    )
    return (paid - missed * price.cached_input) / 1e6


def _gap(before: _Charge, after: _Charge) -> float | None:
    clocked = bool(before.sent_at and after.sent_at)
    first, second = (
        (before.sent_at, after.sent_at) if clocked else (before.timestamp, after.timestamp)
    )
    try:
        return (datetime.fromisoformat(second) - datetime.fromisoformat(first)).total_seconds()
    except (ValueError, TypeError):
        return None


def _touch_gap(before: _Charge, refreshes: Sequence[_Charge], charge: _Charge) -> float | None:
    """Seconds since the cache was last touched: the newest keep-warm call, else ``before``.

    A keep-warm call's ``timestamp`` is by the runtime's clock, like a turn's ``sent_at``.
    """
    if refreshes and charge.sent_at:
        try:
            last = datetime.fromisoformat(refreshes[-1].timestamp)
            return (datetime.fromisoformat(charge.sent_at) - last).total_seconds()
        except (ValueError, TypeError):
            pass
    return _gap(before, charge)


def _reads_live(before: _Charge, call: _Charge) -> bool:
    """Whether a compaction call is the summary request that extends the live request.

    Only that one reads the conversation's cache: the provider's compaction (marked by its
    block) and a summariser of another model read nothing of it by design, and the plain-text
    render sends less than the turn before sent, where the extension sends more.
    """
    usage, prior = call.usage, before.usage
    if usage is None or prior is None or call.compacted or call.model != before.model:
        return False
    return usage.input_tokens > prior.input_tokens


def _side_gap(before: _Charge, refreshes: Sequence[_Charge], call: _Charge) -> float | None:
    """Seconds from the cache's last touch to a side call (its timestamp: the runtime's clock)."""
    last = refreshes[-1].timestamp if refreshes else (before.sent_at or before.timestamp)
    try:
        return (
            datetime.fromisoformat(call.timestamp) - datetime.fromisoformat(last)
        ).total_seconds()
    except (ValueError, TypeError):
        return None


def _left_warm(refresh: Usage) -> int:
    """The prefix a keep-warm call leaves in the cache for the next turn to read.

    The tokens after a request's last breakpoint are neither read nor written. A call whose
    last breakpoint ends the live prefix, before its question (a lift), leaves an entry of all
    it read and wrote; one whose breakpoint ends the question leaves the question inside its
    entry, which the next turn does not send, so only the entry it read (and renewed) serves.
    A call that generated nothing (OpenAI's prewarm) sent the live prefix alone: its entry,
    the last reply included, is the next turn's prefix.
    """
    written = refresh.cache_write_tokens
    fresh = refresh.input_tokens - refresh.cached_input_tokens - written
    live = fresh > 0 or refresh.output_tokens == 0
    return refresh.cached_input_tokens + (written if live else 0)


def _cause(charge: _Charge, compacted: bool, ttl: float, gap: float | None) -> MissCause:
    if compacted:
        return "compaction"
    if gap is None or gap > ttl:
        return "expired"
    if charge.local_cache in _CHANGED or charge.provider_cache not in _PROVIDER_HITS:
        return "context change"
    if charge.local_cache == "messages_changed":
        return "window move"
    return "unexplained"  # the local diagnosis saw a hit, or could not diagnose


def cache_misses(
    charges: Sequence[_Charge],
    prices: Mapping[str, ModelPrice] | None = None,
    *,
    slack: int,
    ttl: float,
) -> tuple[CacheMiss, ...]:
    """The misses among ``charges`` (in seq order), each with its cause and cost."""
    found: list[CacheMiss] = []
    before: _Charge | None = None
    refreshes: list[_Charge] = []  # the keep-warm calls since ``before``
    summarised = False  # a summary call since ``before``
    for charge in charges:
        if charge.purpose == "keep_warm":
            refreshes.append(charge)
        elif charge.purpose == "compaction":
            if before is not None and _reads_live(before, charge):
                gap = _side_gap(before, refreshes, charge)
                miss = _miss(before, charge, refreshes, summarised, prices, slack, ttl, gap)
                found.extend([miss] if miss is not None else [])
            summarised = True
        elif charge.purpose == "turn":
            if before is not None:
                gap = _touch_gap(before, refreshes, charge)
                miss = _miss(before, charge, refreshes, summarised, prices, slack, ttl, gap)
                found.extend([miss] if miss is not None else [])
            before, refreshes, summarised = charge, [], False
    return tuple(found)


def _miss(
    before: _Charge,
    charge: _Charge,
    refreshes: Sequence[_Charge],
    summarised: bool,
    prices: Mapping[str, ModelPrice] | None,
    slack: int,
    ttl: float,
    gap: float | None,
) -> CacheMiss | None:
    """The miss of ``charge`` after the turn ``before`` and the calls between, if it missed.

    ``gap``: the seconds since the cache was last touched (``None``: unknown).
    """
    usage, prior = charge.usage, before.usage
    if usage is None or prior is None or charge.estimated or before.estimated:
        return None
    # a refresh's usage that is a guess says nothing of what it left, only when it was sent
    left = [_left_warm(r.usage) for r in refreshes if r.usage is not None and not r.estimated]
    readable = max([prior.input_tokens, *left])
    missed = min(readable, usage.input_tokens) - usage.cached_input_tokens
    if missed <= slack:
        return None
    price = price_for(charge.model, prices)
    usd = miss_usd(usage, missed, price) if price is not None else None
    # A summary call between the two, or the provider compacting the request before.
    compacted = summarised or before.compacted
    cause = _cause(charge, compacted, ttl, gap)
    return CacheMiss(charge.seq, cause, usd, missed, charge.model)
