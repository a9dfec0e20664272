"""Titles: a short name for a session, made from its user transcript alone.

Runtime metadata (System Context, mid-conversation messages, dispatch records) never reaches the
title: its input is the user and assistant text of the transcript. A model names the session
when one is configured for it and its profile says it can (``writes_titles``); otherwise, or when
that call fails, the title is the first words of the first user message. A title is a
convenience: nothing here may fail a finished turn. This is one extra model call per session
(the first finished turn); ``use_model=False`` (``Config(titles=False)``) avoids it. That call
is billed like any other: its usage becomes a ``SideCall`` record, which the session commits with
its next write (the next admission, or closing), so the cost ledger counts it.

``Naming`` keeps that call off the turn's path: the turn's result is delivered first, the model
names the session in the background within ``Config.title_timeout``, and closing the session
cancels the call (the first words stand in). A slow or hanging title endpoint never holds back
a committed answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import unicodedata
from collections.abc import Callable, Sequence

from ..config import Config
from ..errors import StoreError, UsageError
from ..log import SideCall, now
from ..providers.base import Model, complete
from ..request import Message, Request, UserMessage, text_of
from ..store.base import Store

__all__ = [
    "MAX_TITLE_CHARS",
    "TITLE_INSTRUCTIONS",
    "Naming",
    "Titler",
    "checked_title",
    "clean_title",
    "heuristic_title",
]

#: The longest title a user may give (a generated one is far shorter): every listing shows it.
MAX_TITLE_CHARS = 200

TITLE_INSTRUCTIONS = (
    "Name the conversation below in at most six words. Reply with the title only: no quotes, "
    "no punctuation at the end."
)
_INPUT_CHARS = 4_000


#: Characters that reorder the text shown around them while showing nothing themselves: the
#: bidirectional embeddings, overrides and isolates and the direction marks. In a title listed
#: beside others they can make it read as another one ("Trojan source").
_REORDERING = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: Those, and the zero-width characters that let two different titles look the same (the
#: joiners U+200C/U+200D stay: scripts and emoji sequences need them).
_UNSEEN = re.compile("[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def clean_title(text: str) -> str:
    """``text`` as one plain line, without what reorders or hides text.

    Control characters and lone surrogates become spaces; the characters of ``_UNSEEN`` are
    dropped. What a model wrote and what an imported file says are data: cleaned, not refused.
    """
    kept = "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") else ch
        for ch in _UNSEEN.sub("", text)
    )
    return " ".join(kept.split())


def checked_title(title: str) -> str:
    """``title`` cleaned as a user's title; ``UsageError`` when it cannot be one.

    Refused: no text, too long, or a character that reorders how text is shown (the user
    could not see it; ``_REORDERING``).
    """
    found = _REORDERING.search(title)
    if found is not None:
        char = found.group()
        name = unicodedata.name(char, "a direction control")
        raise UsageError(
            f"a title cannot hold U+{ord(char):04X} ({name}): it changes the order in which"
            " the text around it is shown; type the title without it"
        )
    cleaned = clean_title(title)
    if not cleaned:
        raise UsageError("a title needs some text")
    if len(cleaned) > MAX_TITLE_CHARS:
        raise UsageError(
            f"a title is at most {MAX_TITLE_CHARS} characters; this one has {len(cleaned):,}"
        )
    return cleaned


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
        self._chosen = title_model is not None
        if title_model is None and session_model is not None:
            title_model = session_model if session_model.profile.writes_titles else None
        self._model = title_model

    def following(self, model: Model) -> Titler:
        """The titler of a session that talks to ``model`` now.

        An application's title model stays; otherwise ``model`` names the session if it writes
        titles, and a session switched to one that writes none is never named by the model it
        left (no call the user did not choose, nor a bill for one).
        """
        return self if self._chosen else Titler(None, model)

    def uses_model(self, use_model: bool = True) -> bool:
        """Whether ``title()`` would ask a model (else it takes the first words, at once)."""
        return self._model is not None and use_model

    async def title(self, transcript: Sequence[Message], *, use_model: bool = True) -> str | None:
        """A title for ``transcript``, or ``None`` when it holds no user message yet."""
        return (await self.title_call(transcript, use_model=use_model))[0]

    async def title_call(
        self, transcript: Sequence[Message], *, use_model: bool = True
    ) -> tuple[str | None, SideCall | None]:
        """A title for ``transcript`` and the model call it took (``None``: no call answered)."""
        first = next((m for m in transcript if isinstance(m, UserMessage)), None)
        if first is None:
            return None, None
        fallback = heuristic_title(text_of(first.content))
        if self._model is None or not use_model:
            return fallback, None
        lines = []
        for message in transcript:
            if message.role in ("user", "assistant") and text_of(message.content).strip():
                lines.append(f"{message.role}: {text_of(message.content).strip()}")
        body = "\n".join(lines)[:_INPUT_CHARS]
        request = Request(system=(("title", TITLE_INSTRUCTIONS),), messages=(UserMessage(body),))
        try:
            done = await complete(self._model, request)
        except Exception:  # a title is a convenience: its model failing must not fail the turn
            return fallback, None
        call = SideCall(
            "title",
            self._model.name,  # as its dispatches are named: one model, one row of the costs
            done.usage,
            usage_estimated=not self._model.profile.reports_usage or bool(done.usage_note),
            timestamp=now(),
            usage_note=done.usage_note,
        )
        title = clean_title(done.message.content).strip("\"'").strip()
        return (title[:80] if title else fallback), call


def first_words(transcript: Sequence[Message]) -> str | None:
    """The fallback title of ``transcript``: the first words of its first user message."""
    first = next((m for m in transcript if isinstance(m, UserMessage)), None)
    return heuristic_title(text_of(first.content)) if first is not None else None


class Naming:
    """Names one session after a finished turn, off the turn's path.

    ``title_now(None)`` reads the session's title (``None``: untitled); ``title_now(t)`` takes
    a stored one. A title the user gave meanwhile is never overwritten.
    """

    def __init__(
        self,
        titler: Titler,
        store: Store,
        config: Config,
        session_id: str,
        title_now: Callable[[str | None], str | None],
    ) -> None:
        self._titler, self._store, self._id = titler, store, session_id
        self._use_model, self._timeout = config.titles, config.title_timeout
        self._title_now = title_now
        self._task: asyncio.Task[None] | None = None
        self.pending: list[SideCall] = []  # title calls made, not yet in the log

    def follow(self, model: Model) -> None:
        """Name the session as a session talking to ``model`` is named (``Titler.following``)."""
        self._titler = self._titler.following(model)

    async def after_turn(self, transcript: Sequence[Message]) -> None:
        """Name an untitled session: from the first words now, or by a model in the background."""
        if self._title_now(None) is not None or (self._task is not None and not self._task.done()):
            return
        if not self._titler.uses_model(self._use_model):
            await self._keep(first_words(transcript))
            return
        snapshot = list(transcript)  # the turn goes on changing the live view
        self._task = asyncio.get_running_loop().create_task(self._by_model(snapshot))

    async def wait(self) -> None:
        """Wait until a title being made in the background is stored (or given up)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)

    async def close(self) -> None:
        """Cancel a title still being made; the first words are stored instead."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def taken(self, committed: Sequence[object]) -> None:
        """Forget the pending calls among ``committed`` (the session wrote them)."""
        written = {id(entry) for entry in committed}
        self.pending = [call for call in self.pending if id(call) not in written]

    async def _by_model(self, transcript: list[Message]) -> None:
        try:
            made = self._titler.title_call(transcript, use_model=self._use_model)
            title, call = await asyncio.wait_for(made, self._timeout or None)
            if call is not None:
                self.pending.append(call)
        except TimeoutError:
            title = first_words(transcript)
        except asyncio.CancelledError:
            await self._keep(first_words(transcript))
            raise
        await self._keep(title)

    async def _keep(self, title: str | None) -> None:
        # A title is a convenience: a store that refuses it must not fail anything, and the
        # session stays untitled (and tries again after its next turn) unless it was stored.
        if not title or self._title_now(None) is not None:
            return
        with contextlib.suppress(StoreError):
            await self._store.set_title(self._id, title)
            self._title_now(title)
