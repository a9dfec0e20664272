"""A session's cost summary: ``CostSummary`` and ``ModelCost``, and the summary in words and JSON.

``summarize`` (in ``ledger``) makes the summary from the charges; here it is only a value, with
the plain lines ``cost``, ``/usage`` and the reports show (``cost_lines``) and its JSON form
(``cost --json``, the server: ``cost_fields``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Literal

from .._frozen import frozen
from .idle import IdleCall
from .misses import CacheMiss

__all__ = ["CostSummary", "ModelCost", "cost_fields", "cost_lines"]


@frozen
class ModelCost:
    """What the requests to one model cost; USD figures are ``None`` when it has no price."""

    model: str
    requests: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    total_usd: float | None = None
    uncached_usd: float | None = None
    kind: Literal["model_cost"] = "model_cost"

    @property
    def saved_usd(self) -> float | None:
        """What caching saved on this model's requests."""
        if self.total_usd is None or self.uncached_usd is None:
            return None
        return self.uncached_usd - self.total_usd


@frozen
class CostSummary:
    """What a session cost, from the provider-reported usage of every response.

    ``total_usd`` as billed; ``uncached_usd`` the same requests without any caching;
    ``saved_usd`` the difference. Each is ``None`` when a model used has no price (``no_price``
    names them; ``by_model`` still has the priced ones). ``estimated`` counts requests whose
    usage is a guess or missing; ``unexplained_misses`` the cache shortfalls nothing explains.
    ``misses`` lists every provider-reported cache miss with its cause and cost
    (``ledger.misses``); ``idle_calls`` every call the idle decision made, with its reason.
    """

    total_usd: float | None
    uncached_usd: float | None
    saved_usd: float | None
    by_model: Mapping[str, ModelCost] = field(default_factory=dict)
    estimated: int = 0
    unexplained_misses: int = 0
    requests: int = 0
    no_price: tuple[str, ...] = ()
    misses: tuple[CacheMiss, ...] = ()
    idle_calls: tuple[IdleCall, ...] = ()
    kind: Literal["cost_summary"] = "cost_summary"

    @property
    def cached_share(self) -> float:
        """The share of input tokens read from the provider's cache (0 without input)."""
        total = sum(m.input_tokens for m in self.by_model.values())
        cached = sum(m.cached_input_tokens for m in self.by_model.values())
        return cached / total if total else 0.0


def _usd(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.4f}"


def cost_lines(summary: CostSummary) -> list[str]:
    """The summary in a few plain lines: the same figures ``cost``, ``/usage`` and reports show."""
    models = summary.by_model.values()
    sent = sum(m.input_tokens for m in models)
    lines = [
        f"requests {summary.requests} (usage estimated for {summary.estimated})"
        f" · input {sent:,} tokens, {summary.cached_share:.1%} read from cache"
        f" · output {sum(m.output_tokens for m in models):,} tokens",
        f"cost {_usd(summary.total_usd)} · without caching {_usd(summary.uncached_usd)}"
        f" · saved {_usd(summary.saved_usd)} · unexplained cache misses"
        f" {summary.unexplained_misses}",
    ]
    if summary.misses:
        lines.append(_misses_line(summary.misses))
    if summary.idle_calls:
        usd = [c.usd for c in summary.idle_calls]
        total = None if None in usd else sum(u or 0.0 for u in usd)
        kinds = ", ".join(sorted({c.purpose for c in summary.idle_calls}))
        lines.append(f"idle calls {len(usd)} ({kinds}) cost {_usd(total)}")
    for row in models:
        lines.append(f"  {row.model}: {row.requests} requests, {_usd(row.total_usd)}")
    if summary.no_price:
        lines.append(
            f"no price for {', '.join(summary.no_price)}: give one in Config(prices=...)"
            ' or a [prices."PROVIDER:MODEL"] table of config.toml'
        )
    return lines


def _misses_line(misses: tuple[CacheMiss, ...]) -> str:
    """``cache misses N cost $X: cause n $x, …`` (``no price`` where a miss has none)."""
    by_cause: dict[str, list[CacheMiss]] = {}
    for miss in misses:
        by_cause.setdefault(miss.cause, []).append(miss)

    def usd(items: list[CacheMiss]) -> float | None:
        return None if any(m.usd is None for m in items) else sum(m.usd or 0.0 for m in items)

    parts = [f"{cause} {len(items)} {_usd(usd(items))}" for cause, items in by_cause.items()]
    return f"cache misses {len(misses)} cost {_usd(usd(list(misses)))}: {', '.join(parts)}"


def cost_fields(summary: CostSummary) -> dict[str, object]:
    """The summary as plain JSON values (``cost --json``)."""
    return {
        "total_usd": summary.total_usd,
        "uncached_usd": summary.uncached_usd,
        "saved_usd": summary.saved_usd,
        "requests": summary.requests,
        "estimated": summary.estimated,
        "unexplained_misses": summary.unexplained_misses,
        "cached_share": summary.cached_share,
        "no_price": list(summary.no_price),
        "misses": [
            {"seq": m.seq, "cause": m.cause, "usd": m.usd, "tokens": m.tokens, "model": m.model}
            for m in summary.misses
        ],
        "idle_calls": [
            {"seq": c.seq, "purpose": c.purpose, "reason": c.reason, "usd": c.usd}
            for c in summary.idle_calls
        ],
        "by_model": {
            name: {
                "requests": row.requests,
                "input_tokens": row.input_tokens,
                "cached_input_tokens": row.cached_input_tokens,
                "cache_write_tokens": row.cache_write_tokens,
                "output_tokens": row.output_tokens,
                "total_usd": row.total_usd,
                "uncached_usd": row.uncached_usd,
                "saved_usd": row.saved_usd,
            }
            for name, row in summary.by_model.items()
        },
    }
