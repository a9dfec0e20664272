"""The thin synchronous facade: run a coroutine of the async core from plain code.

Coroutines run on one private event loop in a daemon thread, so the facade also works where a
loop is already running (notebooks) and sessions keep one loop across calls. There is no second
implementation of anything: every ``*_sync`` method just submits its async twin here.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="agentsession-sync", daemon=True
            )
            thread.start()
            _loop = loop
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on the facade's loop and return its result."""
    future = asyncio.run_coroutine_threadsafe(coro, _background_loop())
    return future.result()
