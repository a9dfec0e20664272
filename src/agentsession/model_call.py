"""One provider call of a step: stream the response, retrying transient failures in place.

The request was admitted and committed before this runs, so every attempt sends exactly the
same request. Transient failures (``TransientProviderError``: rate limit, 5xx, timeout) are
retried up to ``retries`` times with exponential backoff; anything else ends the call and leaves
as raised, so the caller can record what the model really raised before translating it with
``as_package_error``: the package's own errors keep their type, anything else becomes a
``ProviderError`` naming its source, with the original as its cause.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from .errors import AgentSessionError, ProviderError, TransientProviderError
from .events import ProviderRetry, TextDelta
from .providers.base import Model, ModelDone, ModelTextDelta, ModelToolCall
from .request import Request

__all__ = ["as_package_error", "call_model"]


def as_package_error(exc: BaseException, source: str) -> AgentSessionError:
    """``exc`` itself when it is one of the package's errors, else a ``ProviderError``."""
    if isinstance(exc, AgentSessionError):
        return exc
    error = ProviderError(f"{source} failed: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


async def call_model(
    model: Model, request: Request, *, retries: int, base_delay: float
) -> AsyncIterator[TextDelta | ProviderRetry | ModelDone]:
    """Stream ``model``'s response to ``request``; the last event is ``ModelDone``."""
    attempt = 0
    while True:
        done = False
        try:
            async for event in model.stream(request):
                if isinstance(event, ModelTextDelta):
                    yield TextDelta(event.text)
                elif isinstance(event, ModelDone):
                    done = True
                    yield event
                elif not isinstance(event, ModelToolCall):  # pragma: no cover - protocol
                    raise ProviderError(f"model {model.name} sent an unknown event {event!r}")
        except TransientProviderError as exc:
            if attempt >= retries:
                raise
            attempt += 1
            yield ProviderRetry(attempt, str(exc))
            await asyncio.sleep(base_delay * 2 ** (attempt - 1))
            continue
        if not done:
            raise ProviderError(f"model {model.name} ended its response without a final message")
        return
