"""The report's time axis: how long each step of a turn took, and what each turn used and cost.

A turn's waterfall is made of ``TimingSpan`` bars, from timestamps the log stores anyway:

- a request runs from its dispatch record (committed right before the call) to its response
  or its failure; the time to first token is the response's ``first_token_at`` (recorded from
  version 4 of the stored response on; older responses have none);
- a tool call runs from its result's ``started_at`` to its ``timestamp`` (recorded from
  version 2 of the stored result on; before, and for a result no tool ran for, only the moment
  it settled is known);
- a side call (a title, a summary, a keep-warm call) is a mark at its ``timestamp``: the log
  keeps when it finished, not how long it took.

A side call belongs to the turn that made it, found by time: the turn of the last user entry
stamped at or before it. The title of a session is asked for after its first turn ends and
committed with the session's next write — the next turn's admission — so its place in the log
alone would put it in the turn after. Tokens and cost per turn are the cost ledger's charges
(``ledger.charges_of``) summed by that turn, so the turns add up to the session's cost.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

from .._frozen import frozen
from ..codec import builder
from ..ledger import Charge, charge_usd
from ..ledger.prices import ModelPrice, price_for
from ..log import (
    AssistantEntry,
    Dispatch,
    Interrupted,
    ProviderFailed,
    Record,
    SideCall,
    ToolResultEntry,
    UserEntry,
)

__all__ = [
    "TimingSpan",
    "TurnUsage",
    "attributed_turns",
    "moment_of",
    "seconds_between",
    "seconds_since",
    "spans_by_turn",
    "usage_by_turn",
]


@frozen
class TimingSpan:
    """One bar of a turn's waterfall.

    ``kind``: a provider ``"request"``, a ``"tool"`` run or a ``"side_call"``; ``seq`` the log
    entry it is drawn from (the dispatch record, the tool result, the side call); ``label`` the
    model, the tool's name or the side call's purpose; ``start`` its ISO timestamp; ``seconds``
    how long it took (``None``: not recorded); ``first_token`` seconds from ``start`` to the
    first event of the answer (requests; ``None``: not recorded); ``failed`` why a request got
    no answer (``""``: it got one).
    """

    kind: Literal["request", "tool", "side_call"]
    seq: int
    label: str
    start: str
    seconds: float | None = None
    first_token: float | None = None
    failed: str = ""


@frozen
class TurnUsage:
    """What a turn's requests and side calls used, as the providers reported, and cost.

    ``usd`` is ``None`` when a model it called has no known price.
    """

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    usd: float | None = 0.0
    side_calls: int = 0


def moment_of(stamp: str) -> datetime | None:
    """ISO timestamp ``stamp`` as a ``datetime``; ``None`` for an empty or unreadable one."""
    try:
        return datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return None


def seconds_between(before: str, after: str) -> float | None:
    """Seconds from ISO timestamp ``before`` to ``after``; ``None`` when either is unknown."""
    return seconds_since(moment_of(before), after)


def attributed_turns(records: Sequence[Record], turns_of: Mapping[int, int]) -> dict[int, int]:
    """``turns_of`` with each side call moved back to the turn that made it (by its time).

    A side call is never moved forward, nor before the first turn.
    """
    stamps: list[datetime] = []  # of the user entries, in turn order
    calls: list[tuple[int, datetime]] = []
    for record in records:
        entry = record.entry
        if isinstance(entry, UserEntry | SideCall):
            moment = moment_of(entry.timestamp)
            if moment is None:
                continue
            if isinstance(entry, UserEntry):
                stamps.append(moment)
            else:
                calls.append((record.seq, moment))
    if not calls:
        return dict(turns_of)
    out = dict(turns_of)
    for seq, moment in calls:
        try:
            found = bisect_right(stamps, moment)
        except TypeError:  # one stamp with a zone, one without: not comparable
            continue
        out[seq] = max(1, min(out.get(seq, found), found)) if found else out.get(seq, 0)
    return out


def spans_by_turn(
    records: Sequence[Record], turns_of: Mapping[int, int]
) -> dict[int, list[TimingSpan]]:
    """Each turn's waterfall, in log order (``turns_of`` as ``attributed_turns`` gives it)."""
    out: dict[int, list[TimingSpan]] = {}
    asked: tuple[int, Dispatch] | None = None  # the dispatch still waiting for its answer
    bar = builder(TimingSpan)  # thousands in a long session
    for record in records:
        entry = record.entry
        kind = entry.kind
        if kind == "dispatch":
            assert isinstance(entry, Dispatch)
            asked = (record.seq, entry)
        elif kind in _ENDS and asked is not None:
            assert isinstance(entry, AssistantEntry | ProviderFailed | Interrupted)
            seq, dispatch = asked
            asked = None
            start = moment_of(dispatch.timestamp)
            first = entry.first_token_at if isinstance(entry, AssistantEntry) else ""
            span = bar(
                "request",
                seq,
                dispatch.model,
                dispatch.timestamp,
                seconds_since(start, entry.timestamp),
                seconds_since(start, first) if first else None,
                _why(entry),
            )
            out.setdefault(turns_of.get(seq, 0), []).append(span)
        elif kind == "tool_result":
            assert isinstance(entry, ToolResultEntry)
            began = entry.started_at
            took = seconds_since(moment_of(began), entry.timestamp) if began else None
            span = bar("tool", record.seq, entry.name, began or entry.timestamp, took)
            out.setdefault(turns_of.get(record.seq, 0), []).append(span)
        elif kind == "side_call":
            assert isinstance(entry, SideCall)
            span = bar("side_call", record.seq, entry.purpose, entry.timestamp)
            out.setdefault(turns_of.get(record.seq, 0), []).append(span)
    return out


_ENDS = frozenset(("assistant", "provider_failed", "interrupted"))


def seconds_since(start: datetime | None, stamp: str) -> float | None:
    """Seconds from ``start`` to ISO timestamp ``stamp``; ``None`` when either is unknown."""
    end = moment_of(stamp)
    if start is None or end is None or (start.tzinfo is None) != (end.tzinfo is None):
        return None
    return max(0.0, (end - start).total_seconds())


def _why(entry: AssistantEntry | ProviderFailed | Interrupted) -> str:
    if isinstance(entry, ProviderFailed):
        return entry.error or entry.kind
    if isinstance(entry, Interrupted):
        return entry.reason or entry.kind
    return ""


def usage_by_turn(
    charges: Sequence[Charge],
    turns_of: Mapping[int, int],
    prices: Mapping[str, ModelPrice] | None,
) -> dict[int, TurnUsage]:
    """Each turn's reported tokens and cost: its charges (requests and side calls) summed."""
    found: dict[str, ModelPrice | None] = {}
    sums: dict[int, list[int]] = {}  # input, cached, output, side calls
    usd: dict[int, float | None] = {}
    for charge in charges:
        turn = turns_of.get(charge.seq, 0)
        row = sums.get(turn)
        if row is None:
            row = sums[turn] = [0, 0, 0, 0]
            usd[turn] = 0.0
        usage = charge.usage
        if charge.purpose != "turn":
            row[3] += 1
        if usage is None:
            continue
        row[0] += usage.input_tokens
        row[1] += usage.cached_input_tokens
        row[2] += usage.output_tokens
        model = charge.model
        if model not in found:
            found[model] = price_for(model, prices)
        price, so_far = found[model], usd[turn]
        if price is None or so_far is None:
            usd[turn] = None
        else:
            usd[turn] = so_far + charge_usd(usage, price)[0]
    made = builder(TurnUsage)
    return {
        turn: made(tokens_in, cached, tokens_out, usd[turn], side)
        for turn, (tokens_in, cached, tokens_out, side) in sums.items()
    }
