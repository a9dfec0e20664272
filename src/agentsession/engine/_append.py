"""The optional ``append_soon`` of a store: a write handed over at once, awaited as a future.

``LogWriter.append`` must learn a write's outcome even when its caller is cancelled, so it runs
the store's ``append`` coroutine as a task of its own and waits for it through a shield. A store
whose appends already run to their end once handed over (its connection's own thread: SQLite)
can hand back the future of that call instead: the writer then awaits that future directly,
without a task and without a shield (a shield costs an event-loop round per write).
When its caller is cancelled, the writer reads the log's end before it next writes or reads, so
the store must run a call made after the write after it (its one thread runs calls in order).
A store offers it by declaring ``"append_soon"`` in its ``fast_paths`` (see ``ReadsNow``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol, cast

from ..log import LogEntry, Record
from ..store.base import Store, fast_paths

__all__ = ["AppendsSoon", "appends_soon"]


class AppendsSoon(Protocol):
    """A store whose ``append`` can be handed over synchronously (``fast_paths``)."""

    def append_soon(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> asyncio.Future[list[Record]]:
        """``append``'s write, handed over now; the future settles with its records or error.

        It runs to its end whether or not the future is awaited or cancelled, and before any
        call made after it (a ``get_session`` or ``read`` sees what it committed); an entry that
        cannot be stored raises here, with nothing handed over.
        """
        ...


def appends_soon(store: Store) -> AppendsSoon | None:
    """``store`` as an ``AppendsSoon`` when it declares ``append_soon``; otherwise ``None``.

    Not when a subclass overrides ``append`` below the class that defines ``append_soon``
    (to watch or change writes): its own ``append`` is then what every write goes through.
    """
    if "append_soon" not in fast_paths(store):
        return None
    mro = type(store).__mro__
    appends = next((i for i, c in enumerate(mro) if "append" in c.__dict__), len(mro))
    soon = next((i for i, c in enumerate(mro) if "append_soon" in c.__dict__), len(mro))
    return cast(AppendsSoon, store) if soon <= appends else None
