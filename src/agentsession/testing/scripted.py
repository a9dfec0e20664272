"""Helpers for tests that drive sessions with the scripted model: replies in, requests out.

Replies are built with ``calls`` (one tool-call turn) and ``failure`` (a provider failure, as
the scripted model raises an ``Exception`` reply); what the model received is read back with
``user_texts``, ``tool_results`` and ``updates``, and ``assert_prefix_stable`` checks the
property the package exists for: each request extends the one before it unless a new epoch
started, so the provider's prompt cache stays warm.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any, Protocol

from ..errors import ProviderError, TransientProviderError
from ..request import (
    Request,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    text_of,
)

__all__ = ["assert_prefix_stable", "calls", "failure", "tool_results", "updates", "user_texts"]


class RecordsRequests(Protocol):
    """A model that records every request it received, in order (the scripted model does)."""

    @property
    def requests(self) -> Sequence[Request]:
        """The requests received, oldest first."""
        ...


def calls(*names: str | tuple[str, dict[str, Any]]) -> list[ToolCall]:
    """One tool-call turn: each item a tool name (no arguments) or ``(name, arguments)``."""
    made: list[ToolCall] = []
    for item in names:
        name, arguments = (item, {}) if isinstance(item, str) else item
        made.append(ToolCall(name, dict(arguments)))
    return made


def failure(message: str = "scripted failure", *, transient: bool = False) -> ProviderError:
    """A provider failure as a reply: ``transient`` ones are retried inside the step."""
    return TransientProviderError(message) if transient else ProviderError(message)


def user_texts(request: Request) -> list[str]:
    """The text of each user message of ``request``, in order."""
    return [text_of(m.content) for m in request.messages if isinstance(m, UserMessage)]


def updates(request: Request) -> list[str]:
    """The mid-conversation system messages of ``request`` (context changes), in order."""
    return [text_of(m.content) for m in request.messages if isinstance(m, SystemMessage)]


def tool_results(request: Request) -> list[ToolResultMessage]:
    """The tool results ``request`` carries, in order."""
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


def assert_prefix_stable(model: RecordsRequests) -> None:
    """Each request the model received starts with the one before it, unless it is a new epoch.

    A request that keeps its predecessor's tools, system part and messages as a prefix can be
    served from the provider's prompt cache. A new epoch may change them, whatever started it
    (``ContextEpoch.reason``): a new system part (start, compaction, model switch, a manual or
    location epoch), a changed tool list (``"tools"``: within an epoch the tools stay put), or a
    window advance (``"window"``), seen as the first message coming from later in the log than
    before (``Request.sources``). ``AssertionError`` names the first request that breaks the
    prefix without one.
    """
    for number, (before, after) in enumerate(pairwise(model.requests), 1):
        if after.system != before.system or after.tools != before.tools:
            continue  # a new epoch: a fresh baseline or tool list, the cache starts over
        if _window_moved(before, after):
            continue  # a window advance starts a new epoch too
        kept = tuple(after.messages[: len(before.messages)]) == tuple(before.messages)
        assert kept, f"request {number} does not extend request {number - 1}"


def _window_moved(before: Request, after: Request) -> bool:
    """Whether ``after``'s view starts later in the log than ``before``'s did."""
    first_before = min(before.sources[0], default=None) if before.sources else None
    first_after = min(after.sources[0], default=None) if after.sources else None
    return first_before is not None and first_after is not None and first_after > first_before
