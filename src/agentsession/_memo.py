"""Memos of values computed from frozen objects, keyed by the object's identity.

The same frozen values (a window message, a tool declaration) go into request after request;
their JSON, digest and token count never change, so each is computed once. A key is the object
itself: the memo holds a reference to it, so its ``id`` cannot be reused while the entry lives,
and a hit is checked with ``is``. Objects need not be hashable (messages hold dicts). The memo is
bounded: when full, the oldest half is dropped. Thread-safe.

``conforms`` keeps, per class, whether its objects satisfy a runtime-checkable protocol.
"""

from __future__ import annotations

import threading
from itertools import islice
from typing import Generic, TypeVar

__all__ = ["IdentityMemo", "conforms"]

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """At most ``size`` values, each for one object, found by that object's identity."""

    def __init__(self, size: int = 8_192) -> None:
        self._size = max(2, size)
        self._items: dict[int, tuple[object, V]] = {}
        self._lock = threading.Lock()

    def get(self, obj: object) -> V | None:
        """The value kept for ``obj`` (this very object), or ``None``."""
        hit = self._items.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return None

    def put(self, obj: object, value: V) -> V:
        """Keep ``value`` for ``obj``; returns ``value``."""
        with self._lock:
            if len(self._items) >= self._size:
                for key in list(islice(self._items, self._size // 2)):
                    del self._items[key]
            self._items[id(obj)] = (obj, value)
        return value

    def __len__(self) -> int:
        return len(self._items)


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
