"""Memos of values computed from frozen objects, keyed by the object's identity.

The same frozen values (a window message, a tool declaration) go into request after request;
their JSON, digest and token count never change, so each is computed once. A key is the object
itself: the memo holds a reference to it, so its ``id`` cannot be reused while the entry lives,
and a hit is checked with ``is``. Objects need not be hashable (messages hold dicts). The memo is
bounded: when full, the oldest half is dropped — except while it is ``held`` by a pass that will
ask again for what it put (a report after its inspection). Thread-safe.

``PrefixMemo`` keeps the state of a fold over a tuple (a running hash, a token sum), so the next,
longer tuple of the same objects folds only what it adds. ``conforms`` keeps, per class, whether
its objects satisfy a runtime-checkable protocol.
"""

from __future__ import annotations

import contextlib
import operator
import threading
from collections.abc import Iterator
from itertools import islice
from typing import Generic, TypeVar

__all__ = ["IdentityMemo", "PrefixMemo", "conforms"]

V = TypeVar("V")
S = TypeVar("S")


class IdentityMemo(Generic[V]):
    """At most ``size`` values, each for one object, found by that object's identity."""

    def __init__(self, size: int = 8_192) -> None:
        self._size = max(2, size)
        self._items: dict[int, tuple[object, V]] = {}
        self._lock = threading.Lock()
        self._holds = 0

    def get(self, obj: object) -> V | None:
        """The value kept for ``obj`` (this very object), or ``None``."""
        hit = self._items.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return None

    def put(self, obj: object, value: V) -> V:
        """Keep ``value`` for ``obj``; returns ``value``."""
        with self._lock:
            if len(self._items) >= self._size and not self._holds:
                for key in list(islice(self._items, self._size // 2)):
                    del self._items[key]
            self._items[id(obj)] = (obj, value)
        return value

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Nothing is dropped while the block runs; after it, the newest half of the size is kept.

        For work that puts more than the bound holds and then asks for all of it again (a long
        session's report asks for every message text its inspection made): without the hold the
        second pass would find only the newest half and make the rest again. Holds nest.
        """
        with self._lock:
            self._holds += 1
        try:
            yield
        finally:
            with self._lock:
                self._holds -= 1
                over = len(self._items) - self._size // 2
                if not self._holds and len(self._items) > self._size:
                    for key in list(islice(self._items, over)):
                        del self._items[key]

    def __len__(self) -> int:
        return len(self._items)


class PrefixMemo(Generic[S]):
    """States of a fold over tuples, resumed from the last tuple kept that the next one extends.

    Consecutive requests of a session carry the same message objects and a few new ones at the
    end. The state after the last tuple folded is kept per first element (by identity: a session
    window's first message); a later tuple that starts with exactly those objects resumes from
    it and folds only its new elements. Resuming checks every kept element with ``is`` (in C:
    far cheaper than folding it again). A kept state must never be changed: copy it to go on.
    At most ``size`` tuples are kept; when full, the oldest half is dropped. Thread-safe.
    """

    def __init__(self, size: int = 256) -> None:
        self._size = max(2, size)
        self._items: dict[int, tuple[tuple[object, ...], S]] = {}
        self._lock = threading.Lock()

    def resume(self, items: tuple[object, ...]) -> tuple[int, S] | None:
        """How many leading ``items`` a kept state covers, and that state (``None``: none)."""
        if not items:
            return None
        hit = self._items.get(id(items[0]))
        if hit is None:
            return None
        kept, state = hit
        if len(kept) > len(items) or not all(map(operator.is_, kept, items)):
            return None
        return len(kept), state

    def keep(self, items: tuple[object, ...], state: S) -> None:
        """Keep ``state``, the fold over all of ``items`` (which must not be empty)."""
        with self._lock:
            if len(self._items) >= self._size:
                for key in list(islice(self._items, self._size // 2)):
                    del self._items[key]
            self._items[id(items[0])] = (items, state)


_CONFORMS: dict[tuple[type, type], bool] = {}


def conforms(obj: object, protocol: type) -> bool:
    """``isinstance(obj, protocol)`` for a runtime-checkable protocol of methods, once per class.

    Such a check looks every member of the protocol up at each call (10–20 µs on Python 3.11,
    several times per turn); the members are methods, so the object's class decides, and its
    answer is kept. Narrow with ``typing.cast`` after a ``True``.
    """
    key = (type(obj), protocol)
    found = _CONFORMS.get(key)
    if found is None:
        found = _CONFORMS[key] = isinstance(obj, protocol)
    return found
