"""The user transcript as a lazy, paged sequence: nothing is read until a message is asked for.

A session opened on a long log must not read its whole history to take the next prompt, yet
``session.messages`` stays a sequence: ``len()``, indexing, slicing and iteration all work. The
stored messages (the log up to the seq where the session was opened) are read in pages on
demand: from the end backward (the newest messages, what a screen shows first) or from the start
forward (iteration, the first user message), each page twice the last, so reading everything
takes a logarithmic number of reads. Messages committed since are kept in memory, and so are
the provisional ones an unfinished step shows until its closing entries are committed.

A store that cannot read synchronously (a network database) gives the transcript whole at open
(``Transcript.loaded``). Pages are read under a lock, so a page can be loaded from a worker
thread (``session.transcript()``) while the event loop reads what is already there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from .errors import UsageError
from .log import Record
from .projection import to_message
from .request import Message, UserMessage

__all__ = ["PageReader", "Transcript", "TranscriptView"]

PageReader = Callable[[int, int], Sequence[Record]]
"""``reader(start, end)``: the transcript records with ``start <= seq < end``, in order."""

_FIRST_PAGE = 256
_LARGEST_PAGE = 65_536


class Transcript(Sequence[Message]):
    """The messages of one session's user transcript; see the module docstring."""

    def __init__(
        self,
        *,
        stored: int = 0,
        end_seq: int = 0,
        reader: PageReader | None = None,
        users: Callable[[], int] | None = None,
        loaded: Sequence[Message] = (),
        counted: int | None = None,
    ) -> None:
        """``stored`` messages lie before ``end_seq``; ``reader`` pages them in.

        ``users`` counts the user messages among them (without reading them), unless
        ``counted`` already says how many there are. Without a reader, ``loaded`` are all the
        stored messages.
        """
        self._reader = reader
        self._count_users = users
        if reader is None:
            stored, end_seq = len(loaded), 0
        self._stored = stored
        self._head: list[Message] = list(loaded)
        self._head_end = end_seq if reader is None else 0  # the seq after the head's last
        self._tail: list[Message] = []
        self._tail_start = end_seq  # the seq of the tail's first message
        self._pages = [_FIRST_PAGE, _FIRST_PAGE]  # next page size: head, tail
        self._new: list[Message] = []
        self._provisional: list[Message] = []
        self._users: int | None = counted if reader is not None else _users_in(self._head)
        self._lock = threading.RLock()

    @classmethod
    def of(cls, messages: Sequence[Message]) -> Transcript:
        """A transcript holding ``messages`` (a new session's: none)."""
        return cls(loaded=messages)

    # -- growing -------------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        """A message that was just committed; the provisional ones are gone with it."""
        self._new.append(message)
        self._provisional = []
        if self._users is not None and isinstance(message, UserMessage):
            self._users += 1

    def show_provisional(self, messages: Sequence[Message]) -> None:
        """Show ``messages`` after the transcript until the next commit."""
        self._provisional = list(messages)

    def committed(self) -> None:
        """Something was committed: provisional messages vanish."""
        self._provisional = []

    def user_turns(self) -> int:
        """How many user messages are durable (the next user turn's ordinal); read no message."""
        if self._users is None:
            assert self._count_users is not None
            with self._lock:
                self._users = self._count_users() + _users_in(self._new)
        return self._users

    def known_user_turns(self) -> int | None:
        """``user_turns()`` when it is known without reading the store, else ``None``."""
        return self._users

    # -- reading -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._stored + len(self._new) + len(self._provisional)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self.view()[index]

    def page(self, limit: int, before: int | None = None) -> list[Message]:
        """Up to ``limit`` messages before index ``before`` (default: the end), read now."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise UsageError(f"limit must be a non-negative integer, got {limit!r}")
        view = self.view()
        end = len(view) if before is None else max(0, min(before, len(view)))
        return view[max(0, end - limit) : end]

    def view(self) -> TranscriptView:
        """The transcript as it is now: a snapshot that later commits do not change."""
        return TranscriptView(self, self._stored + len(self._new), tuple(self._provisional))

    def _message(self, i: int, length: int, provisional: Sequence[Message]) -> Message:
        """Message ``i`` of a snapshot ``length`` messages long (then ``provisional``)."""
        if i >= length:
            return provisional[i - length]
        if i >= self._stored:
            return self._new[i - self._stored]
        with self._lock:
            while True:
                if i < len(self._head):
                    return self._head[i]
                if self._head_end >= self._tail_start:  # everything stored is loaded
                    if 0 <= i - self._stored < len(self._new):
                        return self._new[i - self._stored]
                    raise IndexError("transcript index out of range")
                from_end = self._stored - i
                if 0 < from_end <= len(self._tail):
                    return self._tail[-from_end]
                forward = i - len(self._head) < from_end - len(self._tail)
                self._load(forward)

    def _load(self, forward: bool) -> None:
        """Read the next page at the head (``forward``) or the tail; merge them when they meet."""
        assert self._reader is not None
        side = 0 if forward else 1
        size = self._pages[side]
        self._pages[side] = min(size * 2, _LARGEST_PAGE)
        if forward:
            start, end = self._head_end, min(self._head_end + size, self._tail_start)
        else:
            start, end = max(self._head_end, self._tail_start - size), self._tail_start
        page = [m for m in map(to_message, self._reader(start, end)) if m is not None]
        if forward:
            self._head.extend(page)
            self._head_end = end
        else:
            self._tail[:0] = page
            self._tail_start = start
        if self._head_end >= self._tail_start:
            self._head.extend(self._tail)
            self._tail = []
            self._tail_start = self._head_end
            self._stored = len(self._head)  # what the log really held (a damaged count mended)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.view())

    def __eq__(self, other: object) -> bool:
        return self.view() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Transcript of {len(self)} messages>"


class TranscriptView(Sequence[Message]):
    """A read-only snapshot of a transcript: its length is fixed when it is taken."""

    def __init__(
        self, source: Transcript, length: int, provisional: Sequence[Message] = ()
    ) -> None:
        self._source = source
        self._length = length
        self._provisional = tuple(provisional)

    def __len__(self) -> int:
        return self._length + len(self._provisional)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        total = len(self)
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(total))]
        if not isinstance(index, int):
            raise TypeError(f"transcript indices must be integers or slices, not {index!r}")
        i = index + total if index < 0 else index
        if not 0 <= i < total:
            raise IndexError("transcript index out of range")
        return self._source._message(i, self._length, self._provisional)

    def __iter__(self) -> Iterator[Message]:
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<transcript of {len(self)} messages>"


def _users_in(messages: Sequence[Any]) -> int:
    return sum(isinstance(m, UserMessage) for m in messages)
