"""The summary call of a compaction: which request form, and the provider call itself.

When the session's own model summarises (or a summariser of the same provider and model name,
which reads the same cache), the request extends the live one — rebuilt exactly as last
admitted — so the provider reads its input from the prompt cache, and it is sent with the
session's cache key and lifetime like the conversation's calls. A summariser of another model
cannot read that cache and gets the plain-text render; so does a live request that no longer
fits the budget beside the instruction, or that cannot be rebuilt (a tool it declared is gone).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime

from .._frozen import frozen
from ..budget import total_tokens
from ..compaction import (
    CompactionPlan,
    cached_summary_request,
    provider_compaction_request,
    provider_is_cheaper,
    render_history,
    summary_request,
    threshold_trigger,
)
from ..errors import UsageError
from ..hygiene import replace_surrogates
from ..ledger.prices import price_for
from ..log import ProviderCompaction, SideCall, now
from ..providers.base import (
    CompactionDone,
    CompactsConversation,
    Model,
    ModelDone,
    complete,
    provider_failure,
)
from ..providers.cache_controls import CacheControls
from ..providers.cache_policy import choose_ttl
from ..request import Request
from .deps import SessionDeps
from .model_call import call_model, session_cache_key
from .writer import LogWriter

__all__ = [
    "Prepared",
    "Written",
    "cached_call",
    "provider_compact",
    "shares_cache",
    "summarise",
    "threshold_at",
    "write_summary",
]

Rebuild = Callable[[Model], Awaitable[Request]]


def shares_cache(summarizer: Model, model: Model) -> bool:
    """Whether ``summarizer`` reads the provider cache ``model``'s requests write."""
    if summarizer is model:
        return True
    same_name = summarizer.name == model.name
    return same_name and summarizer.profile.provider == model.profile.provider


@frozen
class Written:
    """A compaction's summary as written, before it is committed, and its billed call.

    ``block``: the provider's compaction block (``plan.cut_seq`` then past the whole
    history); ``text`` is empty when the summariser wrote nothing.
    """

    plan: CompactionPlan
    text: str
    block: ProviderCompaction | None
    call: SideCall


@frozen
class Prepared:
    """A summary written in the background, waiting for the next prompt's boundary."""

    written: Written
    seq: int  # the log's next seq once its call was billed: adopted only while unchanged
    model: str

    def current(self, next_seq: int, model: str) -> bool:
        """Whether the summary still fits the log: nothing logged since, the same model."""
        return next_seq == self.seq and model == self.model


async def write_summary(
    deps: SessionDeps,
    writer: LogWriter,
    plan: CompactionPlan,
    model: Model,
    rebuild: Rebuild,
    *,
    warm: bool,
    reason: str,
) -> Written:
    """The summary of ``plan`` — the provider's compaction where chosen, else the summariser's.

    Its call is billed like any other (a ``SideCall``, named as the caller's dispatches are:
    one row of the costs); the failure leaves translated, with nothing written.
    """
    # By the runtime's clock, like a keep-warm call's: the ledger judges the summary's cache
    # read by the gap since the cache was last touched.
    sent = _stamp(deps.clock() if deps.clock is not None else None)
    served = await provider_compact(deps, writer, plan, model, rebuild, warm=warm)
    if served is not None:
        # The provider's block stands for the whole history: the new epoch keeps no turn.
        whole = replace(plan, cut_seq=writer.next_seq)
        call = SideCall("compaction", model.name, served.usage, timestamp=sent, reason=reason)
        # Kept as sent (the block replays byte for byte); the text is what other formats see.
        text = replace_surrogates(served.text)[0].strip()
        return Written(whole, text, ProviderCompaction(served.format, served.block), call)
    summarizer = deps.summarizer or model
    done = await summarise(deps, writer, plan, model, rebuild)
    call = SideCall(
        "compaction",
        summarizer.name,
        done.usage,
        usage_estimated=not summarizer.profile.reports_usage or bool(done.usage_note),
        timestamp=sent,
        usage_note=done.usage_note,
        reason=reason,
    )
    # A summary is a reply committed too: valid Unicode, or every later request would fail.
    return Written(plan, replace_surrogates(done.message.content)[0].strip(), None, call)


def _stamp(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else now()


async def summarise(
    deps: SessionDeps, writer: LogWriter, plan: CompactionPlan, model: Model, rebuild: Rebuild
) -> ModelDone:
    """The summariser's answer for ``plan``: through the cache where it can, else plain text."""
    summarizer = deps.summarizer or model
    request = await _cached_request(deps, plan, model, summarizer, rebuild)
    if request is not None:
        return await cached_call(deps, writer, summarizer, request)
    budget = deps.budget.budget(summarizer.profile.context_window)
    # ``complete`` already translates the summariser's failure (``raise … from``).
    return await complete(summarizer, summary_request(plan.head, deps.budget.counter, budget))


async def _cached_request(
    deps: SessionDeps, plan: CompactionPlan, model: Model, summarizer: Model, rebuild: Rebuild
) -> Request | None:
    """The summary request that reads the conversation's cache, or ``None`` when it cannot."""
    if not shares_cache(summarizer, model):
        return None
    try:
        live = await rebuild(model)
    except UsageError:
        return None
    request = cached_summary_request(live, plan)
    if request is None:
        return None
    profile = model.profile
    limit = deps.budget.limit(
        model_window=profile.context_window, max_output_tokens=profile.max_output_tokens
    )
    if total_tokens(request, deps.budget.counter) > limit:
        return None
    return request


async def provider_compact(
    deps: SessionDeps,
    writer: LogWriter,
    plan: CompactionPlan,
    model: Model,
    rebuild: Rebuild,
    *,
    warm: bool = True,
) -> CompactionDone | None:
    """The provider's own compaction where the configuration chooses it; ``None``: local.

    ``"provider"`` uses it wherever the model offers it; ``"auto"`` where it is also expected
    to cost no more than the local summary by the ledger's prices (``warm``: the conversation's
    cache is live). The request is the live one, whole, sent with the session's cache key and
    lifetime: the block covers the whole history. A failure raises (translated), leaving the
    log untouched.
    """
    mode = deps.config.compaction
    if mode == "local" or not model.profile.provider_compaction:
        return None
    if not isinstance(model, CompactsConversation):
        return None
    try:
        live = await rebuild(model)
    except UsageError:
        return None
    request = provider_compaction_request(live)
    found = model.compaction_input(request) if request is not None else None
    if request is None or found is None:
        return None
    if mode == "auto" and not _provider_cheaper(deps, plan, model, request, found, warm):
        return None
    return await model.compact_with(request, _controls(deps, writer))


def threshold_at(deps: SessionDeps, model: Model) -> int | None:
    """The trigger of the provider's threshold edit on ``model``'s requests (``None``: none).

    Sent where the session compacts automatically by the provider: ``"provider"``, or
    ``"auto"`` with the session's own model summarising (then the provider is its choice).
    """
    config = deps.config
    if not config.auto_compact or config.compaction == "local":
        return None
    if not (model.profile.provider_compaction and isinstance(model, CompactsConversation)):
        return None
    if config.compaction == "auto" and not shares_cache(deps.summarizer or model, model):
        return None
    profile = model.profile
    limit = deps.budget.limit(
        model_window=profile.context_window, max_output_tokens=profile.max_output_tokens
    )
    return threshold_trigger(limit, config.compact_threshold)


def _provider_cheaper(
    deps: SessionDeps,
    plan: CompactionPlan,
    model: Model,
    live: Request,
    found: tuple[Request, bool],
    warm: bool,
) -> bool:
    """Whether the provider's compaction is expected to cost no more than the local summary.

    ``found``: what the provider is sent of ``live`` and whether it reads the conversation's
    cache (OpenAI's compaction takes no tools: with tools it is billed at the full price).
    """
    sent, reads = found
    summarizer = deps.summarizer or model
    same = shares_cache(summarizer, model)
    if same and reads:
        return True  # the same prices, and the provider is sent less: the live prefix alone
    counter, prices = deps.budget.counter, deps.config.prices
    local = cached_summary_request(live, plan) if same else None
    if local is not None:  # the local summary would read the live request from the cache
        local_tokens, local_cached = total_tokens(local, counter), total_tokens(live, counter)
    else:
        local_tokens, local_cached = counter.count(render_history(plan.head)), 0
    return provider_is_cheaper(
        prefix_tokens=total_tokens(sent, counter),
        warm=warm,
        provider_price=price_for(model.name, prices),
        local_tokens=local_tokens,
        local_price=price_for(summarizer.name, prices),
        provider_reads_cache=reads,
        local_cached_tokens=local_cached,
    )


def _controls(deps: SessionDeps, writer: LogWriter) -> CacheControls:
    """The cache key and lifetime the conversation's calls ask for."""
    config, ledger = deps.config, writer.ledger
    return CacheControls(
        key=session_cache_key(writer.session_id),
        ttl=choose_ttl(
            config.cache_ttl,
            ledger.gaps(),
            ledger.write_ratio(),
            lift=config.idle_policy == "auto",
        ),
    )


async def cached_call(
    deps: SessionDeps,
    writer: LogWriter,
    model: Model,
    request: Request,
    *,
    lift: bool = False,
    prewarm: bool = False,
) -> ModelDone:
    """``model``'s answer to ``request`` with the session's cache key and lifetime.

    The same key and lifetime the conversation's calls ask for, so the provider routes the
    call to the cache they wrote; failures leave translated, like ``complete``'s. ``lift``:
    a keep-warm call that lifts the live prefix to the long lifetime (``CacheControls.lift``);
    ``prewarm``: a keep-warm call the provider answers without output (``CacheControls.prewarm``).
    """
    config, controls = deps.config, _controls(deps, writer)
    if lift:
        controls = replace(controls, ttl="1h", lift=True)
    if prewarm:
        controls = replace(controls, prewarm=True)
    done: ModelDone | None = None
    try:
        async for event in call_model(
            model,
            request,
            retries=config.provider_retries,
            base_delay=config.retry_base_delay,
            controls=controls,
        ):
            if isinstance(event, ModelDone):
                done = event
    except Exception as exc:
        failure = provider_failure(exc, model.name)
        if failure is exc:
            raise
        raise failure from exc
    assert done is not None  # ``call_model`` ends with the answer or raises
    return done
