"""Titles: a short name for a session, made from its user transcript alone.

Runtime metadata (System Context, mid-conversation messages, dispatch records) never reaches the
title: its input is the user and assistant text of the transcript. A model names the session
when one is configured for it and its profile says it can (``writes_titles``); otherwise, or when
that call fails, the title is the first words of the first user message. A title is a
convenience: nothing here may fail a finished turn. This is one extra model call per session
(the first finished turn); ``use_model=False`` (``Config(titles=False)``) avoids it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from ..providers.base import Model, complete
from ..request import Message, Request, UserMessage, text_of

__all__ = ["TITLE_INSTRUCTIONS", "Titler", "clean_title", "heuristic_title"]

TITLE_INSTRUCTIONS = (
    "Name the conversation below in at most six words. Reply with the title only: no quotes, "
    "no punctuation at the end."
)
_INPUT_CHARS = 4_000


def clean_title(text: str) -> str:
    """``text`` without control characters or lone surrogates: a title is one plain line."""
    kept = "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") else ch for ch in text
    )
    return " ".join(kept.split())


def heuristic_title(text: str) -> str:
    """The first words of ``text``, shortened to a title."""
    words = clean_title(text).split()
    title = " ".join(words[:8])
    return title[:60] + ("…" if len(title) > 60 or len(words) > 8 else "")


class Titler:
    """Names sessions with a model, else from the first words.

    ``title_model`` is always used when given (the application chose it); otherwise
    ``session_model`` names sessions when its profile says it can write titles.
    """

    def __init__(self, title_model: Model | None, session_model: Model | None = None) -> None:
        if title_model is None and session_model is not None:
            title_model = session_model if session_model.profile.writes_titles else None
        self._model = title_model

    async def title(self, transcript: Sequence[Message], *, use_model: bool = True) -> str | None:
        """A title for ``transcript``, or ``None`` when it holds no user message yet."""
        first = next((m for m in transcript if isinstance(m, UserMessage)), None)
        if first is None:
            return None
        fallback = heuristic_title(text_of(first.content))
        if self._model is None or not use_model:
            return fallback
        lines = []
        for message in transcript:
            if message.role in ("user", "assistant") and text_of(message.content).strip():
                lines.append(f"{message.role}: {text_of(message.content).strip()}")
        body = "\n".join(lines)[:_INPUT_CHARS]
        request = Request(system=(("title", TITLE_INSTRUCTIONS),), messages=(UserMessage(body),))
        try:
            done = await complete(self._model, request)
        except Exception:  # a title is a convenience: its model failing must not fail the turn
            return fallback
        title = clean_title(done.message.content).strip("\"'").strip()
        return title[:80] if title else fallback
