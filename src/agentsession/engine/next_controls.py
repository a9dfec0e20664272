"""The cache controls of a session's next provider call, and the body it would go out as.

The turn asks for them right before each call (after noting the send time on the ledger); a
preview asks the same question without noting anything, so ``session.preview_body()`` shows
the body the SDK would send next — cache key, lifetime, diagnostics and breakpoints included
(``providers.wire``) — byte for byte what the turn passes to it.
"""

from __future__ import annotations

from typing import Any

from ..codec import encode
from ..config import Config
from ..ledger import Ledger
from ..log import AssistantEntry
from ..providers.base import Model
from ..providers.cache_controls import CacheControls
from ..providers.cache_policy import choose_ttl
from ..providers.profiles import FORMATS
from ..providers.wire import sent_body
from ..request import Request
from ..store.base import Store
from .model_call import session_cache_key

__all__ = ["cache_controls", "preview_body"]


async def cache_controls(
    config: Config, ledger: Ledger, store: Store, session_id: str, compact_at: int | None = None
) -> CacheControls:
    """The controls of the next call from the ledger's state (nothing noted here).

    ``compact_at``: the provider's threshold-compaction trigger (``summary_call.threshold_at``).
    """
    answered = ledger.last_answered()
    previous = answered.response_id if answered is not None else ledger.stored_response_id
    if answered is None and previous is None:
        found = await store.last(session_id, ["assistant"])
        entry = found.entry if found is not None else None
        previous = entry.response_id if isinstance(entry, AssistantEntry) else ""
        ledger.stored_response_id = previous
    return CacheControls(
        key=session_cache_key(session_id),
        ttl=choose_ttl(
            config.cache_ttl,
            ledger.gaps(),
            ledger.write_ratio(),
            lift=config.idle_policy == "auto",
        ),
        diagnose=config.provider_cache_diagnostics,
        compare_with=previous or None,
        compact_at=compact_at,
    )


def preview_body(request: Request, model: Model, controls: CacheControls) -> dict[str, Any]:
    """``request`` as ``model``'s SDK would send it; the neutral form for a model without one."""
    profile = model.profile
    if profile.wire_format not in FORMATS:
        return {k: v for k, v in encode(request).items() if k != "sources"}
    return sent_body(
        request,
        profile.wire_format,
        profile=profile,
        model=getattr(model, "model", None),
        controls=controls,
        streaming=bool(getattr(model, "streaming", True)),
    )
