"""A session's money: ``session.cost()`` from the ledger, ``preview_cost()`` for the next request.

``SessionCosts`` is a part of ``Session`` (mixed in) so the session module stays about turns.
The ledger lives on the session's ``LogWriter``; a store that reads synchronously gives the
records from before the session was opened when they are first needed, another store gave them
when the session was opened (``prime_ledger``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from ..budget import measure
from ..errors import ProviderError
from ..inspection.rebuild import fingerprinted
from ..ledger import LEDGER_KINDS, SHORTEST_TTL, Charge, CostSummary, Ledger, summarize
from ..ledger.prices import price_for
from ..log import Dispatch
from ..providers.base import CountsTokens
from ..providers.cache_controls import CacheControls, cache_key_for
from ..request import ContentPart, Request, digest
from ..store.base import Store, reads_now
from .deps import SessionDeps
from .writer import LogWriter

if TYPE_CHECKING:
    from ..providers.base import Model
    from ..store.base import SessionInfo

__all__ = ["CostEstimate", "SessionCosts", "prime_ledger"]


@dataclass(frozen=True)
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


async def prime_ledger(store: Store, session_id: str, ledger: Ledger) -> None:
    """Give ``ledger`` its stored records now, for a store that cannot read synchronously."""
    if not ledger.primed and reads_now(store) is None:
        ledger.prime(await store.read(session_id, 0, ledger.start_seq, kinds=list(LEDGER_KINDS)))


class SessionCosts:
    """``cost()`` and ``preview_cost()`` of a ``Session``."""

    _deps: SessionDeps
    _writer: LogWriter
    _info: SessionInfo

    if TYPE_CHECKING:

        @property
        def model(self) -> Model:
            """The session's model (``Session.model``)."""

        async def preview_request(self, text: str | Sequence[ContentPart]) -> Request:
            """The next request (``Session.preview_request``)."""

    def cost(self) -> CostSummary:
        """What this session cost so far, from the provider-reported usage of every response.

        Figures are USD; ``None`` where a model used has no price (never a guess).
        """
        return summarize(self._charges(), self._deps.config.prices)

    def _charges(self) -> list[Charge]:
        ledger = self._writer.ledger
        local = reads_now(self._deps.store)
        if not ledger.primed and local is not None:
            kinds = list(LEDGER_KINDS)
            ledger.prime(local.read_now(self._info.id, 0, ledger.start_seq, kinds))
        return ledger.charges()

    async def preview_cost(self, text: str | Sequence[ContentPart]) -> CostEstimate:
        """The next request's expected input cost if ``text`` were sent now (nothing admitted).

        The part expected to be read from the cache is what the previous request sent (its
        provider-reported input), when the new request extends it and the time since it is
        within the cache's lifetime; the rest is measured with the session's token counter,
        scaled by how the provider counted the previous request, and priced as a cache write.
        """
        request = await self.preview_request(text)
        model = self.model
        counted, why = await self._provider_count(request)
        cached, uncached = await self._split(request, model.name, counted)
        price = price_for(model.name, self._deps.config.prices)
        if price is None:
            return CostEstimate(None, cached, uncached, model.name, "no price")
        usd = (cached * price.cached_input + uncached * price.write) / 1e6
        return CostEstimate(usd, cached, uncached, model.name, why)

    async def _provider_count(self, request: Request) -> tuple[int | None, str]:
        """The provider's count of ``request`` where it has an endpoint, else why not."""
        model = self.model
        if not isinstance(model, CountsTokens):
            return None, "counted locally"
        controls = CacheControls(key=cache_key_for(self._info.id))
        try:
            counted = await model.count_input_tokens(request, controls)
        except ProviderError as exc:
            return None, f"counted locally: the provider's count failed: {exc}"
        return counted, "" if counted is not None else "counted locally"

    async def _split(self, request: Request, model: str, counted: int | None) -> tuple[int, int]:
        """(cached, uncached) tokens of ``request`` as the provider is expected to count them.

        ``counted`` is the provider's own count of the whole request, when it gave one.
        """
        counter = self._deps.budget.counter
        total = measure(request, counter).total if counted is None else counted
        previous = await self._writer.last_dispatch()
        charges = self._charges()
        last = charges[-1] if charges else None
        if previous is None or last is None or last.usage is None or last.estimated:
            return 0, total
        probe = fingerprinted(Dispatch(model, 0, digest(request)), request, previous)
        if probe.cache != "hit":
            return 0, total
        sent = last.usage.input_tokens
        if counted is None:  # the new part by the local count, scaled to the provider's
            before = replace(request, messages=request.messages[: previous.message_count])
            local = measure(before, counter).total
            scale = sent / local if local else 1.0
            total = sent + max(0, round((total - local) * scale))
        ttl = self._writer.ledger.ttl_seconds
        if (self._since(previous.timestamp) or 0.0) > max(ttl, SHORTEST_TTL):
            return 0, max(total, sent)
        return min(sent, total), max(0, total - sent)

    def _since(self, stored: str) -> float | None:
        """Seconds since the last request: by the runtime's clock when this object sent it."""
        noted, clock = self._writer.ledger.last_noted(), self._deps.clock
        if noted is not None and clock is not None:
            return (clock() - noted).total_seconds()
        try:
            return (datetime.now(UTC) - datetime.fromisoformat(stored)).total_seconds()
        except (TypeError, ValueError):
            return None
