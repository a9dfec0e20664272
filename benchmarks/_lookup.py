"""The scripted session's parts the report figures and the inspection tests share.

``lookup`` is the one tool such a session calls, and ``lookup_replies`` the scripted model's
replies: a user message the caller picks a key from gets a call of ``lookup`` with that key,
everything else the answer. Tests load this file as the other benchmark scripts they drive
(``tests/benchmark_modules.py``); the dependency only points from the tests to here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import agentsession as ags

__all__ = ["lookup", "lookup_replies"]


@ags.tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"the value of {key} is {len(key)}"


def lookup_replies(key_of: Callable[[str], str | None], answer: str) -> Callable[[Any], Any]:
    """Replies that call ``lookup`` for a user message ``key_of`` finds a key in, else answer."""

    def replies(request: ags.Request) -> Any:
        last = request.messages[-1]
        if isinstance(last, ags.UserMessage):
            key = key_of(str(last.content))
            if key is not None:
                return [ags.ToolCall("lookup", {"key": key})]
        return answer

    return replies
