"""A store's optional fast paths, declared in one place and reached through one object.

The ``Store`` protocol is all a store must offer. A store whose data is local enough (SQLite,
memory) or that already holds an answer (PostgreSQL after a reopen) may offer more, as
attributes of one ``FastPaths`` value in its ``fast_paths`` attribute; ``fast_paths(store)``
gives that value (every path ``None`` for a store that offers none), and the session's engine
asks it alone. The paths are not methods of the store classes, so they are not part of their
public surface and may change between versions.

- ``read_now`` / ``count_now``: ``read`` and a count of kinds, synchronously (sessions on such a
  store read their transcript in pages when asked for it; others read it when opened);
- ``last_now``: ``last``, synchronously (a reopen reads what its next request needs in one
  worker-thread call);
- ``read_view``: the newest epoch, its view's records and the last dispatch in one call;
- ``append_soon``: ``append``'s write handed over now, its outcome a future that settles even
  when nobody awaits it (the writer then needs no task and no shield per write);
- ``count_held``: a count the store holds in memory already, or ``None`` (never blocks);
- ``list_page``: one page of ``list_sessions`` in the same order, after a row's key
  ``(updated_at, created_at, id)``, reading that page's rows alone (a server lists thousands of
  sessions a page at a time);
- ``reopening``: an async context manager around a reopen's reads of one session: the store
  may read what they need in one round trip when the block starts and answer the block's reads
  of that session from it (PostgreSQL once its pool is in use);
- ``statement``: one SQL statement of the caller's own (``%s`` placeholders) on the store's
  own connections, its rows (none for a statement that returns none): the server keeps small
  tables of its own in the same database and needs no connection of its own per statement.
- ``take_lease``: ``acquire_lease``, with the log's next seq read after it in the same round
  trip: a session that took the lease knows whether its log was written since it was opened
  (and what it read at the open still holds) without reading again.

Stores written against earlier versions declare ``fast_paths = frozenset({"read_now", …})``
and offer the methods of those names on themselves; that declaration keeps working.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from .._frozen import frozen

if TYPE_CHECKING:
    from ..log import LogEntry, Record
    from .base import SessionInfo, Store, ViewRows

__all__ = [
    "AppendSoon",
    "CountHeld",
    "CountNow",
    "FastPath",
    "FastPaths",
    "LastNow",
    "ListPage",
    "ReadNow",
    "ReadView",
    "Reopening",
    "Statement",
    "TakeLease",
    "fast_paths",
    "reopening",
]

#: ``read(session_id, start, end, kinds)``, synchronously, blocking the caller.
ReadNow: TypeAlias = "Callable[[str, int, int | None, Sequence[str] | None], list[Record]]"
#: How many entries of ``kinds`` lie before seq ``end``, without decoding any.
CountNow: TypeAlias = "Callable[[str, Sequence[str], int], int]"
#: ``last(session_id, kinds)``, synchronously, blocking the caller.
LastNow: TypeAlias = "Callable[[str, Sequence[str]], Record | None]"
#: ``(session_id, end, kinds, start_of, dispatch)``: the newest epoch, ``kinds`` from
#: ``start_of(epoch)`` to ``end``, and (when ``dispatch``) the last dispatch record.
ReadView: TypeAlias = (
    "Callable[[str, int, Sequence[str], Callable[[Record], int], bool], Awaitable[ViewRows]]"
)
#: ``append``'s write handed over now: it runs to its end whether or not the future is awaited
#: or cancelled, and before any call made after it; an entry that cannot be stored raises here.
AppendSoon: TypeAlias = "Callable[[str, int, Sequence[LogEntry]], asyncio.Future[list[Record]]]"
#: ``count_now``'s answer when the store holds it already (never blocks); ``None`` otherwise.
CountHeld: TypeAlias = "Callable[[str, Sequence[str], int], int | None]"

#: ``(limit, after)``: up to ``limit`` sessions in ``list_sessions``' order after the row whose
#: ``(updated_at, created_at, id)`` is ``after`` (``None``: from the first).
ListPage: TypeAlias = "Callable[[int, tuple[str, str, str] | None], Awaitable[list[SessionInfo]]]"

#: ``reopening(session_id)``: a block whose reads of the session the store may answer at once.
Reopening: TypeAlias = "Callable[[str], AbstractAsyncContextManager[None]]"
#: ``(query, params)``: one statement of the caller's own, in autocommit; its rows.
Statement: TypeAlias = "Callable[[str, Sequence[Any]], Awaitable[list[tuple[Any, ...]]]]"
#: ``(session_id, owner, ttl)``: ``acquire_lease``'s answer, and the log's next seq read after
#: the lease was taken (``None``: no such session row).
TakeLease: TypeAlias = "Callable[[str, str, float], Awaitable[tuple[bool, int | None]]]"

FastPath = Literal[
    "read_now",
    "count_now",
    "last_now",
    "read_view",
    "append_soon",
    "count_held",
    "list_page",
    "statement",
    "reopening",
    "take_lease",
]
"""The name of an optional fast path (a field of ``FastPaths``)."""


@frozen(slots=True)
class FastPaths:
    """The optional fast paths one store offers (``None``: not offered). See the module."""

    read_now: ReadNow | None = None
    count_now: CountNow | None = None
    last_now: LastNow | None = None
    read_view: ReadView | None = None
    append_soon: AppendSoon | None = None
    count_held: CountHeld | None = None
    list_page: ListPage | None = None
    statement: Statement | None = None
    reopening: Reopening | None = None
    take_lease: TakeLease | None = None

    def reads(self) -> tuple[ReadNow, CountNow] | None:
        """``read_now`` and ``count_now`` when both are offered."""
        if self.read_now is None or self.count_now is None:
            return None
        return self.read_now, self.count_now

    def finds(self) -> tuple[ReadNow, LastNow] | None:
        """``read_now`` and ``last_now`` when both are offered."""
        if self.read_now is None or self.last_now is None:
            return None
        return self.read_now, self.last_now


_NONE = FastPaths()


def fast_paths(store: Store) -> FastPaths:
    """The fast paths ``store`` offers in its ``fast_paths`` attribute (none by default).

    A store declared by names (``frozenset({"read_now"})``: the older form) offers the methods
    of those names on itself; ``"read_now"`` names ``count_now`` too. ``append_soon`` is not
    used when a subclass overrides ``append`` below the class that defines ``append_soon`` (to
    watch or change writes): its own ``append`` is then what every write goes through; nor
    ``take_lease`` when a subclass overrides ``acquire_lease``.
    """
    declared: object = getattr(store, "fast_paths", None)
    if isinstance(declared, FastPaths):
        if declared.take_lease is not None and not _through(
            type(store), "acquire_lease", "_take_lease_seeing"
        ):
            return replace(declared, take_lease=None)  # leases are watched or changed below
        return declared
    if not isinstance(declared, frozenset | set | tuple):
        return _NONE
    names = set(declared) | ({"count_now"} if "read_now" in declared else set())
    found = FastPaths(**{n: getattr(store, n, None) for n in FastPaths.__slots__ if n in names})
    if found.append_soon is not None and not _through(type(store), "append", "append_soon"):
        found = replace(found, append_soon=None)
    return found


def reopening(store: Store, session_id: str) -> AbstractAsyncContextManager[None]:
    """The store's ``reopening`` block for ``session_id``, or a block that does nothing."""
    path = fast_paths(store).reopening
    return path(session_id) if path is not None else contextlib.nullcontext()


def _through(cls: type, method: str, path: str) -> bool:
    """Whether ``cls``'s ``method`` is defined no lower than the fast ``path`` standing in for it.

    A subclass that overrides ``method`` (to watch or change it) and not ``path`` would be
    bypassed by the path: it is then not used.
    """
    mro = cls.__mro__
    plain = next((i for i, c in enumerate(mro) if method in c.__dict__), len(mro))
    fast = next((i for i, c in enumerate(mro) if path in c.__dict__), len(mro))
    return fast <= plain
