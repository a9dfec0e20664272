"""One provider call of a step: stream the response, retrying transient failures in place.

The request was admitted and committed before this runs, so every attempt sends exactly the
same request. Transient failures (``TransientProviderError``: rate limit, 5xx, timeout, a stream
cut mid-way) are retried up to ``retries`` times with exponential backoff, or after the
provider's ``Retry-After`` when it asks for longer (capped, so a hostile header cannot stall a
session for hours). Text a failed attempt streamed is reported as discarded in the
``ProviderRetry`` event. Anything else ends the call and leaves as raised, so the caller can
record what the model really raised before translating it (``providers.provider_failure``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from typing import cast

from .._memo import conforms
from ..errors import ProviderError, TransientProviderError
from ..events import ProviderRetry, TextDelta
from ..hygiene import SurrogateJoiner
from ..log import now
from ..providers.base import CacheControlled, Model, ModelDone, ModelTextDelta, ModelToolCall
from ..providers.cache_controls import CacheControls, cache_key_for
from ..request import Request

__all__ = ["MAX_RETRY_AFTER", "FirstEvent", "call_model", "retry_delay", "session_cache_key"]

MAX_RETRY_AFTER = 60.0
"""The longest a provider's ``Retry-After`` may make a step wait, in seconds."""


session_cache_key = functools.lru_cache(maxsize=256)(cache_key_for)
"""A session's cache key (a SHA-256 of its id), computed once per session, not at every call."""


def retry_delay(error: TransientProviderError, attempt: int, base_delay: float) -> float:
    """Seconds to wait before attempt ``attempt + 1``: backoff, or the provider's wish (capped)."""
    backoff = float(base_delay) * 2.0 ** (attempt - 1)
    asked = error.retry_after
    if asked is None:
        return backoff
    return max(backoff, min(float(asked), MAX_RETRY_AFTER))


class FirstEvent:
    """When the first event of the attempt that answered arrived (``log.now()``'s format).

    ``""`` until one arrived; a retried attempt starts it again, so the time to first token
    is the answering attempt's.
    """

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at = ""


async def call_model(
    model: Model,
    request: Request,
    *,
    retries: int,
    base_delay: float,
    controls: CacheControls | None = None,
    first: FirstEvent | None = None,
) -> AsyncIterator[TextDelta | ProviderRetry | ModelDone]:
    """Stream ``model``'s response to ``request``; the last event is ``ModelDone``.

    ``controls`` go with the request to a model that takes provider cache controls; ``first``
    is told when the first event of each attempt arrives.
    """
    attempt = 0
    while True:
        done = False
        streamed = 0
        joiner = SurrogateJoiner()  # the deltas shown join as the committed text does
        if controls is not None and conforms(model, CacheControlled):
            events = cast(CacheControlled, model).stream_with(request, controls)
        else:
            events = model.stream(request)
        if first is not None:
            first.at = ""
        try:
            async for event in events:
                if first is not None and not first.at:
                    first.at = now()
                if isinstance(event, ModelTextDelta):
                    streamed += len(event.text)
                    shown = joiner.feed(event.text)
                    if shown:
                        yield TextDelta(shown)
                elif isinstance(event, ModelDone):
                    done = True
                    rest = joiner.finish()
                    if rest:
                        yield TextDelta(rest)
                    yield event
                elif not isinstance(event, ModelToolCall):  # pragma: no cover - protocol
                    raise ProviderError(f"model {model.name} sent an unknown event {event!r}")
        except TransientProviderError as exc:
            if attempt >= retries:
                raise
            attempt += 1
            delay = retry_delay(exc, attempt, base_delay)
            yield ProviderRetry(attempt, str(exc), discarded=streamed, delay=delay)
            await asyncio.sleep(delay)
            continue
        if not done:
            raise ProviderError(f"model {model.name} ended its response without a final message")
        return
