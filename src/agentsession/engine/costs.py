"""A session's money: ``session.cost()`` from the ledger, ``preview_cost()`` for the next request.

``SessionCosts`` is a part of ``Session`` (mixed in) so the session module stays about turns.
The ledger lives on the session's ``LogWriter``; a store that reads synchronously gives the
records from before the session was opened when they are first needed, another store gave them
when the session was opened (``prime_ledger``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..budget import measure
from ..errors import AgentSessionError, ProviderError
from ..events import CostAlert
from ..ledger import (
    LEDGER_KINDS,
    SHORTEST_TTL,
    Charge,
    CostEstimate,
    CostSummary,
    Ledger,
    charges_of,
    summarize,
)
from ..ledger.prices import price_for
from ..log import Dispatch, LogEntry, Record
from ..log.usage_check import MAX_TOKENS
from ..providers.base import CountsTokens
from ..providers.cache_controls import STABLE_KEYS, CacheControls, cache_key_for
from ..providers.cache_policy import cache_lifetime, choose_ttl
from ..request import ContentPart, Request, SystemMessage, UserMessage, digest
from ..store.base import Store
from ..store.fast import fast_paths
from .deps import SessionDeps
from .writer import LogWriter

if TYPE_CHECKING:
    from ..providers.base import Model, ModelProfile
    from ..store.base import SessionInfo
    from .admission import Admitter

__all__ = ["SessionCosts", "prime_ledger"]


async def prime_ledger(store: Store, session_id: str, ledger: Ledger) -> None:
    """Give ``ledger`` its stored records now, for a store that cannot read synchronously."""
    if not ledger.primed and fast_paths(store).reads() is None:
        ledger.prime(await store.read(session_id, 0, ledger.start_seq, kinds=list(LEDGER_KINDS)))


class SessionCosts:
    """``cost()`` and ``preview_cost()`` of a ``Session``."""

    _deps: SessionDeps
    _writer: LogWriter
    _alert_total: float | None = None  # the total at the last cost-alert look
    _info: SessionInfo

    if TYPE_CHECKING:
        _admitter: Admitter

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

    def _cost_alert(self, started: bool = False) -> CostAlert | None:
        """A ``CostAlert`` when the total crossed ``Config.cost_alert_usd`` since the last look.

        ``started``: a turn starts, only note the total (a session opened above the threshold
        crossed it before). Free without a threshold: the total is summed only with one.
        """
        threshold = self._deps.config.cost_alert_usd
        if threshold is None:
            return None
        total = self.cost().total_usd
        if total is None:
            return None  # a model without a price: no total to compare
        before = self._alert_total
        self._alert_total = total
        if started or before is None or not before < threshold <= total:
            return None
        return CostAlert(total, float(threshold))

    def _unrecorded(self) -> Sequence[LogEntry]:
        """Calls made beside the conversation that the log does not hold yet (a title)."""
        return ()

    def _charges(self) -> list[Charge]:
        ledger = self._writer.ledger
        local = fast_paths(self._deps.store).reads()
        if not ledger.primed and local is not None:
            kinds = list(LEDGER_KINDS)
            ledger.prime(local[0](self._info.id, 0, ledger.start_seq, kinds))
        later = charges_of(Record(-1, entry) for entry in self._unrecorded())
        return [*ledger.charges(), *later]

    async def preview_cost(self, text: str | Sequence[ContentPart]) -> CostEstimate:
        """The next request's expected input cost if ``text`` were sent now (nothing admitted).

        The part expected to be read from the cache follows the local diagnosis against the
        previous request, while the time since it is within the cache's lifetime: all it sent
        when the new request extends it; the tools and the whole baseline when only messages
        changed, the tools and the application's instructions when the baseline changed (where
        the profile places breakpoints there); nothing otherwise. The rest is priced as a cache
        write, except a tail after the provider's newest breakpoint, priced as plain input.
        Tokens are the provider's count where it has an endpoint; else the session's token
        counter, scaled by how the provider counted the previous request.

        Args:
            text: The user's message: a string, or content parts (text and images).

        Raises:
            UsageError: The text is not valid Unicode, or the session has no model.
            BudgetExceededError: The request would not fit the context budget.
        """
        request = await self.preview_request(text)
        model = self.model
        counted, why = await self._provider_count(request)
        tokens = _Tokens(self, counted is not None)
        await tokens.calibrate()
        cached, fresh = await self._split(request, model.name, tokens)
        total = counted if counted is not None else await tokens.count(request)
        uncached = max(0, total - cached)
        price = price_for(model.name, self._deps.config.prices)
        if price is None:
            return CostEstimate(None, cached, uncached, model.name, "no price")
        fresh = min(fresh, uncached)
        written = uncached - fresh
        # Written at the lifetime the request will ask for: the turn chooses it the same way.
        write = price.write_long if self._asks_long_ttl() else price.write
        usd = (cached * price.cached_input + written * write + fresh * price.input) / 1e6
        return CostEstimate(usd, cached, uncached, model.name, why)

    def _asks_long_ttl(self) -> bool:
        """Whether the next request asks for the long cache lifetime (Anthropic's 1 h)."""
        if not self.model.profile.cache_ttl:
            return False
        ledger = self._writer.ledger
        config = self._deps.config
        lift = config.idle_policy == "auto"
        ttl = choose_ttl(config.cache_ttl, ledger.gaps(), ledger.write_ratio(), lift=lift)
        return ttl == "1h"

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
        if counted is not None and (type(counted) is not int or not 0 <= counted <= MAX_TOKENS):
            return None, f"counted locally: the provider's count {counted!r:.24} is no count"
        return counted, "" if counted is not None else "counted locally"

    async def _split(self, request: Request, model: str, tokens: _Tokens) -> tuple[int, int]:
        """Tokens of ``request`` (cached, fresh): expected read, and sent past the last breakpoint.

        Fresh tokens come after the provider's newest breakpoint: neither read nor written.
        """
        profile = self.model.profile
        fresh = 0
        tail = _tail_start(request, profile)
        if tail < len(request.messages):
            whole = await tokens.count(request)
            fresh = whole - await tokens.count(_cut(request, tail, profile))
        previous = await self._writer.last_dispatch()
        charges = [c for c in self._charges() if c.purpose == "turn"]
        last = charges[-1] if charges else None
        if previous is None or last is None or last.usage is None or last.estimated:
            return 0, fresh
        ledger = self._writer.ledger
        # The lifetime the last request asked for; after a reopen, the profile's default one.
        ttl = ledger.ttl_seconds
        if ledger.last_noted() is None:
            ttl = cache_lifetime(profile, "5m")
        if (self._since(previous.timestamp) or 0.0) > max(ttl, SHORTEST_TTL):
            return 0, fresh
        from ..log.fingerprint import fingerprinted  # here: keeps `import agentsession` short

        probe = fingerprinted(Dispatch(model, 0, digest(request)), request, previous)
        if probe.cache == "hit":
            cached = min(last.usage.input_tokens, await tokens.count(request))
            # What the previous request sent past its newest breakpoint was never written.
            sent = request.messages[: previous.message_count]
            cut = _tail_start(replace(request, messages=sent), profile)
            if cut < len(sent):
                cached = min(cached, await tokens.count(_cut(request, cut, profile)))
            return _in_steps(cached, profile), fresh
        kept = _kept_sections(request, profile, probe.cache)
        if kept is None:
            return 0, fresh
        cached = await tokens.prefix(request, kept)
        return _in_steps(cached if cached >= MIN_CACHED_PREFIX else 0, profile), fresh

    def _since(self, stored: str) -> float | None:
        """Seconds since the last request: by the runtime's clock when this object sent it."""
        noted, clock = self._writer.ledger.last_noted(), self._deps.clock
        if noted is not None and clock is not None:
            return (clock() - noted).total_seconds()
        try:
            return (datetime.now(UTC) - datetime.fromisoformat(stored)).total_seconds()
        except (TypeError, ValueError):
            return None


MIN_CACHED_PREFIX = 1024
"""Tokens: the shortest prefix the providers cache."""
CACHE_STEP = 128
"""Tokens: OpenAI's automatic cache (before GPT-5.6) reads a prefix in steps of this many."""


def _automatic(profile: ModelProfile) -> bool:
    """Whether the provider caches every prefix it is sent by itself (OpenAI before GPT-5.6)."""
    return profile.provider == "openai" and not profile.cache_breakpoints


def _in_steps(cached: int, profile: ModelProfile) -> int:
    """``cached`` as the provider reads it: exactly, or in OpenAI's automatic steps.

    The automatic cache reads whole steps of 128 tokens from 1,024 on: 1,100 read as 1,024.
    """
    if not _automatic(profile):
        return cached
    return cached // CACHE_STEP * CACHE_STEP if cached >= MIN_CACHED_PREFIX else 0


def _tail_start(request: Request, profile: ModelProfile) -> int:
    """Where the messages after the provider's newest breakpoint start (none: their count).

    Anthropic's newest breakpoint sits on the newest user turn: system messages after it are
    sent but neither read from nor written to the cache.
    """
    if profile.wire_format != "anthropic-messages" or not profile.cache_markers:
        return len(request.messages)
    end = len(request.messages)
    while end > 0 and isinstance(request.messages[end - 1], SystemMessage):
        end -= 1
    return end if end > 0 else len(request.messages)


def _cut(request: Request, end: int, profile: ModelProfile) -> Request:
    """``request`` with its first ``end`` messages: tools announced after them are not yet in."""
    dropped = request.messages[end:]
    added = {n for m in dropped if isinstance(m, SystemMessage) for n in m.tools_added}
    tools = request.tools
    if profile.native_tool_changes and added:
        tools = tuple(t for t in tools if t.name not in added)
    return replace(request, messages=request.messages[:end], tools=tools)


def _kept_sections(request: Request, profile: ModelProfile, cache: str) -> int | None:
    """How many leading baseline sections stay cached after the change ``cache`` names.

    ``None``: nothing stays. A breakpoint must end the part kept: Anthropic marks the end of
    the baseline and (with a lifetime choice) of the application's instructions; OpenAI's
    explicit breakpoints mark the same two places.
    """
    anthropic = profile.wire_format == "anthropic-messages" and profile.cache_markers
    # OpenAI's automatic cache needs no breakpoint: it reads the longest prefix sent before.
    automatic = _automatic(profile)
    if not (anthropic or profile.cache_breakpoints or automatic):
        return None
    if cache == "messages_changed":
        return len(request.system)
    if cache == "system_changed" and (profile.cache_breakpoints or profile.cache_ttl or automatic):
        stable = 0
        for key, _ in request.system:
            if key not in STABLE_KEYS:
                break
            stable += 1
        return stable or None
    return None


class _Tokens:
    """Counts requests as the provider does: its endpoint, else the local counter scaled."""

    def __init__(self, costs: SessionCosts, provider: bool) -> None:
        self._costs, self._provider, self._scale = costs, provider, 1.0

    async def calibrate(self) -> None:
        """Scale local counts by how the provider counted the previous request."""
        if self._provider:
            return
        charges = [c for c in self._costs._charges() if c.purpose == "turn"]
        last = charges[-1] if charges else None
        if last is None or last.usage is None or last.estimated:
            return
        previous = await self._costs._writer.last_dispatch()
        try:
            rebuilt = await self._costs._admitter.rebuild(self._costs.model)
        except AgentSessionError:
            return  # nothing to scale by
        if previous is None:
            return
        # The epoch's request now holds the answer too: cut it to what was sent.
        before = replace(rebuilt, messages=rebuilt.messages[: previous.message_count])
        local = measure(before, self._costs._deps.budget.counter).total
        if local > 0:
            self._scale = last.usage.input_tokens / local

    async def count(self, request: Request) -> int:
        if self._provider:
            counted, _ = await self._costs._provider_count(request)
            if counted is not None:
                return counted
        local = measure(request, self._costs._deps.budget.counter).total
        return round(local * self._scale)

    async def prefix(self, request: Request, sections: int) -> int:
        """Tokens of the tools and the first ``sections`` baseline sections of ``request``."""
        probe = (UserMessage("."),)
        kept = replace(request, system=request.system[:sections], messages=probe)
        bare = Request(messages=probe)
        return max(0, await self.count(kept) - await self.count(bare))
