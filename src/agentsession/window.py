"""The transcript window: which history messages the next request carries.

At most ``cap`` counted messages go out. What counts: every user message, every assistant
message (one, however many tool calls it makes) and every tool result (one each), so a call and
its result are two. Mid-conversation system messages are System Context: they never count, stay
in place inside the kept range and are left out with the range around them (the caller folds
their state into a new epoch baseline).

The window starts at a turn: a user message, or index 0 when the history opens with something
else (the messages before the first user message, e.g. a compaction summary, form a turn of their
own). It never moves backward and moves forward ``step`` turns at a time, never past the newest
turn, so the request prefix changes rarely. When the newest turn alone exceeds the cap, its user
message stays and the newest complete call/result groups that fit follow it; the number of
elided messages is reported for a note on that user message. The elision edge moves in chunks
(``chunk`` counted messages at a time, at group boundaries): between two moves, new groups are
only appended, so a long turn keeps its request prefix for several steps. Nothing here splits a
group, so no call loses its result and no result its call. Pure and deterministic: the same
input, the same window.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from itertools import accumulate, compress, pairwise, repeat

from ._frozen import frozen
from .errors import UsageError
from .request import AssistantMessage, Message, SystemMessage, TextPart, UserMessage

__all__ = [
    "Window",
    "elision_note",
    "message_count",
    "select_window",
    "whole_window",
    "with_elision_note",
]


@frozen
class Window:
    """The kept part of a history, as indices into the ``messages`` given to `select_window`.

    ``start`` is where the window starts: the first index of its turn (a user message, or 0 for a
    history that opens without one); pass it back as ``start`` next time. ``indices`` are the
    kept messages in order. ``count`` is how many of them count toward the cap. ``elided`` is how
    many counted messages of the newest turn were left out between its user message and the kept
    groups (0 unless the newest turn alone exceeded the cap). ``omitted_system`` are the
    mid-conversation system messages at or after ``start`` that were left out with an elided
    range. ``advanced`` is true when ``start`` differs from the start that was given.
    """

    start: int
    indices: tuple[int, ...]
    count: int
    elided: int = 0
    omitted_system: tuple[int, ...] = ()
    advanced: bool = False

    @property
    def note_index(self) -> int | None:
        """The kept user message that gets the elision note, or None when nothing was elided.

        Also None when the elided turn has no user message (a history that opens without one);
        the omission then goes unannounced.
        """
        if self.elided and self.indices and self.indices[0] == self.start:
            return self.start
        return None


def _counts(message: Message) -> int:
    return 0 if isinstance(message, SystemMessage) else 1


def message_count(messages: Sequence[Message]) -> int:
    """How many of ``messages`` count toward the window cap (all but system messages)."""
    return sum(_counts(m) for m in messages)


def elision_note(elided: int) -> str:
    """The note appended to a kept user message: ``[N earlier messages of this turn omitted]``."""
    noun = "message" if elided == 1 else "messages"
    return f"[{elided} earlier {noun} of this turn omitted]"


def with_elision_note(message: UserMessage, elided: int) -> UserMessage:
    """``message`` with the elision note appended (the same message when ``elided`` is 0).

    A string stays a string (the note follows a blank line); block content gets a text block at
    the end, after existing text and images. The stored message is never changed: this builds
    the model-view copy.
    """
    if elided <= 0:
        return message
    note = elision_note(elided)
    if isinstance(message.content, str):
        text = f"{message.content}\n\n{note}" if message.content else note
        return UserMessage(content=text)
    return UserMessage(content=(*message.content, TextPart(note)))


def _turn_starts(
    messages: Sequence[Message], not_turns: AbstractSet[int] = frozenset()
) -> list[int]:
    # Index 0 is a turn start even when it is not a user message: the history since the epoch
    # start may open with a summary or an assistant message, and the window must reach it.
    # Loops in C (compress over isinstance's answers): the window is chosen twice a turn.
    starts = list(compress(range(len(messages)), map(isinstance, messages, repeat(UserMessage))))
    if not_turns:
        starts = [i for i in starts if i not in not_turns]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return starts


def _groups(messages: Sequence[Message], begin: int, end: int) -> list[tuple[int, int]]:
    """Split ``messages[begin:end]`` into ``[lo, hi)`` groups that are never split further.

    A group is an assistant message with everything up to the next assistant message: its tool
    results and any system messages between them. Whatever precedes the first assistant message
    forms a leading group of its own.
    """
    bounds = [i for i in range(begin, end) if isinstance(messages[i], AssistantMessage)]
    if not bounds or bounds[0] != begin:
        bounds.insert(0, begin)
    bounds.append(end)
    return [(lo, hi) for lo, hi in pairwise(bounds) if lo < hi]


def select_window(
    messages: Sequence[Message],
    cap: int,
    *,
    step: int = 1,
    start: int = 0,
    chunk: int = 1,
    keep: int | None = None,
    cold: bool = False,
    not_turns: AbstractSet[int] = frozenset(),
) -> Window:
    """Choose the window over ``messages`` (the model-view history since the epoch start).

    ``not_turns`` are indices of user messages that start no turn (replayed version-2
    snapshots, which stay with the user message they follow).

    ``cap`` is the most counted messages to keep; ``step`` how many turns the start moves at once
    when ``messages[start:]`` exceeds the cap; ``start`` the current window start; ``chunk`` how
    many counted messages the elision edge of an over-long newest turn moves at once (1: as few
    as needed). A start inside
    a turn moves forward to the next turn start (or back to the newest one when there is none
    after it); a start out of range (the history was replaced) counts as 0.

    When even the newest turn exceeds the cap, its user message is kept with the newest complete
    groups whose counted messages fit in ``cap - 1``. If not even the newest group fits, it is
    kept anyway: dropping it would hide the results the model is about to act on, and splitting
    it would orphan a call or a result. That is the only case in which ``count`` exceeds ``cap``.

    ``keep`` (the cost policy, ``Config.window_step=None``): once the cap is exceeded, the start
    moves turn by turn until at most ``keep`` counted messages remain, so the prefix moves once
    per ``cap - keep`` messages; with ``cold`` (the provider's cache has expired anyway) it moves
    there early, at no extra cost, once the window is three quarters of the way from ``keep`` to
    ``cap``: then the move replaces one the cap would soon force.
    A history that opens without a user message and consists of one turn keeps the newest groups
    that fit ``cap`` (at least one), without a user message to carry the note.
    """
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise UsageError(f"window cap must be a positive integer, got {cap!r}")
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise UsageError(f"window step must be a positive integer, got {step!r}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise UsageError(f"window start must be a non-negative integer, got {start!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise UsageError(f"elision chunk must be a positive integer, got {chunk!r}")
    n = len(messages)
    if n == 0:
        return Window(start=0, indices=(), count=0, advanced=start != 0)
    if start == 0:
        # Nearly every request: the history since the epoch start fits, and the window is all
        # of it (the turn starts and suffix counts below would find just that).
        counted = n - sum(map(isinstance, messages, repeat(SystemMessage)))
        whole = whole_window(n, counted, cap, keep=keep, cold=cold)
        if whole is not None:
            return whole
    return _select(messages, cap, step, start, chunk, keep, cold, not_turns)


def whole_window(n: int, counted: int, cap: int, *, keep: int | None, cold: bool) -> Window | None:
    """The window `select_window` chooses from start 0 when the whole history stays, else None.

    ``n`` messages of which ``counted`` count toward the cap; ``cap``, ``keep`` and ``cold`` as
    `select_window` takes them. The whole history stays when it fits the cap, or ``keep``
    where the cold cache lets the window drop to it at no cost.
    """
    if n and counted <= (_cold_limit(keep, cap) if keep is not None and cold else cap):
        found = _WHOLE.get((n, counted))
        if found is None:
            if len(_WHOLE) >= 1_024:
                _WHOLE.clear()
            found = _WHOLE[(n, counted)] = Window(start=0, indices=tuple(range(n)), count=counted)
        return found
    return None


def _cold_limit(keep: int, cap: int) -> int:
    """Past how many counted messages a cold cache moves the window (down to ``keep``).

    Three quarters of the way from ``keep`` to ``cap``: there the move replaces one the cap
    would soon force, and saves its cache write; earlier it would mostly shorten what the model
    reads (benchmarks/README.md, ``window_policy.py``).
    """
    keep = min(keep, cap)
    return keep + (cap - keep) * 3 // 4


_WHOLE: dict[tuple[int, int], Window] = {}
"""Whole windows by (messages, counted): frozen, so one object serves every request of a size."""


def _select(
    messages: Sequence[Message],
    cap: int,
    step: int,
    start: int,
    chunk: int,
    keep: int | None,
    cold: bool,
    not_turns: AbstractSet[int] = frozenset(),
) -> Window:
    """`select_window` after its checks: turn starts, suffix counts, the move, elision."""
    n = len(messages)
    starts = _turn_starts(messages, not_turns)
    base = start if start < n else 0
    # The first turn start at or after ``base``; past the newest turn, the newest turn.
    pos = min(bisect_left(starts, base), len(starts) - 1)

    # counted[i] = counted messages in messages[i:], so each candidate start costs O(1).
    system = map(isinstance, reversed(messages), repeat(SystemMessage))
    counted = list(accumulate(map(operator.not_, system), initial=0))
    counted.reverse()
    limit = cap
    held = counted[starts[pos]]
    if keep is not None and (held > cap or (cold and held > _cold_limit(keep, cap))):
        limit = min(keep, cap)
    while counted[starts[pos]] > limit and pos < len(starts) - 1:
        pos = min(pos + step, len(starts) - 1)
    first = starts[pos]

    if counted[first] <= cap:
        return Window(
            start=first,
            indices=tuple(range(first, n)),
            count=counted[first],
            advanced=first != start,
        )
    return _elide(messages, first, cap, advanced=first != start, chunk=chunk)


def _elide(
    messages: Sequence[Message], first: int, cap: int, *, advanced: bool, chunk: int
) -> Window:
    """Keep the newest turn's user message and the newest complete groups that fit.

    At least ``needed`` counted messages must go; the edge drops the oldest groups until a
    multiple of ``chunk`` is reached, so it stays put while later groups are appended. The
    newest group is kept whatever it weighs (see ``select_window``).
    """
    n = len(messages)
    anchored = isinstance(messages[first], UserMessage)
    body = first + 1 if anchored else first
    room = cap - 1 if anchored else cap
    groups = _groups(messages, body, n)
    weights = [message_count(messages[lo:hi]) for lo, hi in groups]
    needed = sum(weights) - room
    target = -(-needed // chunk) * chunk
    dropped_groups, elided = 0, 0
    while dropped_groups < len(groups) - 1 and elided < target:
        elided += weights[dropped_groups]
        dropped_groups += 1
    kept_from = groups[dropped_groups][0]
    used = sum(weights[dropped_groups:])

    head = (first,) if anchored else ()
    indices = head + tuple(range(kept_from, n))
    dropped = range(body, kept_from)
    return Window(
        start=first,
        indices=indices,
        count=len(head) + used,
        elided=message_count([messages[i] for i in dropped]),
        omitted_system=tuple(i for i in dropped if isinstance(messages[i], SystemMessage)),
        advanced=advanced,
    )
