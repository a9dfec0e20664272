"""Every dispatched request of a log as the inspection shows it: ``RequestInfo``.

Each request rebuilt (``rebuild``) is measured in order (``_measure``: a prefix shared with the
request before is counted once and is what a provider's prompt cache can serve), paired with the
response that answered it or the reason it got none, and priced from the reported usage.
``inspection.views`` gathers these into an ``Inspection``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._frozen import frozen
from ..budget import TokenCounter
from ..codec import builder
from ..config import Config
from ..ledger import charge_usd
from ..ledger.prices import ModelPrice, price_for
from ..log import (
    AssistantEntry,
    CacheDiagnosis,
    Interrupted,
    ProviderFailed,
    Record,
    ToolLoaded,
    ToolUnloaded,
)
from ..log.usage_check import checked_usage
from ..request import Request
from ._measure import cacheable, measure_in_order
from .rebuild import Rebuilt
from .timing import TimingSpan

__all__ = ["RequestInfo"]


@frozen
class RequestInfo:
    """One dispatched request, rebuilt, with its size split for the prompt cache.

    ``tokens`` is the measured prompt; ``cacheable`` the part of it that repeats the previous
    request's prefix (tools, then system, then messages), ``new`` the rest. ``reported_input`` and
    ``reported_cached`` are the provider's figures from the response (``None``: no response).
    ``cache`` is the local diagnosis stored on the dispatch record; ``exact`` says whether the
    rebuild reproduced the dispatch record's digest (``mismatch`` says why not).

    Deferred tools (``search_tools`` or a provider's own tool search): ``tools_found`` the
    tools the searches answered since the request before found (again or anew),
    ``tools_evicted`` those they unloaded to make room, ``tools_loaded`` every loaded deferred
    tool this request offers, in load order.
    """

    number: int
    seq: int
    step: int
    turn: int
    model: str
    epoch: int | None
    timestamp: str
    cache: CacheDiagnosis
    tokens: int
    cacheable: int
    reported_input: int | None
    reported_cached: int | None
    exact: bool
    mismatch: str
    request: Request
    cost_usd: float | None = None  # as billed, from the reported usage; None: no price
    provider_cache: str = ""  # the provider's own cache diagnosis ("": none given)
    failed: str = ""  # why the request got no response (a provider failure, an interruption)
    tools_found: tuple[str, ...] = ()
    tools_loaded: tuple[str, ...] = ()
    tools_evicted: tuple[str, ...] = ()
    latency: float | None = None  # seconds from dispatch to the response or failure
    first_token: float | None = None  # seconds from dispatch to the answer's first event

    @property
    def new(self) -> int:
        """Tokens of the request not in the previous request's prefix."""
        return self.tokens - self.cacheable


def _requests(
    records: Sequence[Record],
    rebuilt: Sequence[Rebuilt],
    turns_of: Mapping[int, int],
    counter: TokenCounter,
    config: Config,
    timed: Mapping[int, TimingSpan] | None = None,
) -> tuple[RequestInfo, ...]:
    answers, failures = _answers(records)
    deferred = _deferred(records)
    out: list[RequestInfo] = []
    previous: Rebuilt | None = None
    measured = measure_in_order([item.request for item in rebuilt], counter)
    prices: dict[str, ModelPrice | None] = {}  # per model: a session uses few
    row = builder(RequestInfo)  # one per request: thousands in a long session
    for item, tokens in zip(rebuilt, measured, strict=True):
        shared = 0
        if previous is not None and previous.dispatch.model == item.dispatch.model:
            shared = cacheable(previous.request, item.request, tokens)
        answer = answers.get(item.seq)
        usage = checked_usage(answer.usage)[0] if answer is not None else None
        model = item.dispatch.model
        if model not in prices:
            prices[model] = price_for(model, config.prices)
        price = prices[model]
        billed = charge_usd(usage, price)[0] if usage is not None and price else None
        span = timed.get(item.seq) if timed else None
        out.append(
            row(
                number=item.number,
                seq=item.seq,
                step=item.dispatch.step,
                turn=turns_of.get(item.seq, 0),
                model=item.dispatch.model,
                epoch=item.epoch.epoch if item.epoch is not None else None,
                timestamp=item.dispatch.timestamp,
                cache=item.dispatch.cache,
                tokens=sum(tokens),
                cacheable=shared,
                reported_input=usage.input_tokens if usage is not None else None,
                reported_cached=usage.cached_input_tokens if usage is not None else None,
                exact=item.exact,
                mismatch=item.mismatch,
                request=item.request,
                cost_usd=billed,
                provider_cache=answer.provider_cache if answer is not None else "",
                failed=failures.get(item.seq, "") if answer is None else "",
                **deferred.get(item.seq, {}),
                latency=span.seconds if span is not None else None,
                first_token=span.first_token if span is not None else None,
            )
        )
        previous = item
    return tuple(out)


def _answers(records: Sequence[Record]) -> tuple[dict[int, AssistantEntry], dict[int, str]]:
    """By the dispatch's seq: each response, and why each failed dispatch got none."""
    answers: dict[int, AssistantEntry] = {}
    failures: dict[int, str] = {}
    last: int | None = None
    for record in records:
        entry = record.entry
        if entry.kind == "dispatch":
            last = record.seq
        elif last is None:
            continue
        elif isinstance(entry, AssistantEntry):
            answers.setdefault(last, entry)
        elif isinstance(entry, ProviderFailed | Interrupted):
            reason = entry.error if isinstance(entry, ProviderFailed) else entry.reason
            failures.setdefault(last, reason or entry.kind)
    return answers, failures


def _deferred(records: Sequence[Record]) -> dict[int, dict[str, tuple[str, ...]]]:
    """By the dispatch's seq: the deferred tools found, loaded and evicted for that request."""
    out: dict[int, dict[str, tuple[str, ...]]] = {}
    loaded: list[str] = []
    found: list[str] = []
    evicted: list[str] = []
    for record in records:
        entry = record.entry
        if isinstance(entry, ToolLoaded):
            found.append(entry.name)
            if entry.name not in loaded:
                loaded.append(entry.name)
        elif isinstance(entry, ToolUnloaded):
            evicted.append(entry.name)
            if entry.name in loaded:
                loaded.remove(entry.name)
        elif entry.kind == "dispatch" and (loaded or found or evicted):
            out[record.seq] = {
                "tools_found": tuple(dict.fromkeys(found)),
                "tools_loaded": tuple(loaded),
                "tools_evicted": tuple(evicted),
            }
            found, evicted = [], []
    return out
