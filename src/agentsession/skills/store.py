"""The durable per-session key/value store of one skill.

A skill's tools keep what must outlive an unload here (DESIGN §7: "its durable store stays").
Values are JSON, copied in and out, so nothing changes behind the store's back. Every ``set`` and
``delete`` is recorded as a ``StoreWrite``; the session takes the pending writes after a tool
call and commits them with that call's result, and rebuilds a store from the writes it finds in
the log (``MemorySkillStore.from_writes``). ``SkillStore`` is the interface a store backed by
anything else must offer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from .._frozen import frozen
from ..errors import UsageError

__all__ = ["JSONValue", "MemorySkillStore", "SkillStore", "StoreWrite"]

JSONValue: TypeAlias = str | int | float | bool | list["JSONValue"] | dict[str, "JSONValue"] | None


@frozen
class StoreWrite:
    """One recorded change: ``key`` set to ``value``, or removed when ``deleted``.

    ``value`` is the JSON text of the stored value (``"null"`` for a deletion), so the record is
    immutable and stores verbatim.
    """

    key: str
    value: str
    deleted: bool = False
    kind: Literal["skill_store_write"] = "skill_store_write"


@runtime_checkable
class SkillStore(Protocol):
    """A durable key/value store for one skill in one session (a read-only mapping plus writes)."""

    def __getitem__(self, key: str) -> JSONValue:
        """The value of ``key`` (a copy); ``KeyError`` when absent."""
        ...

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` holds a value."""
        ...

    def __iter__(self) -> Iterator[str]:
        """The keys, in the order they were first set."""
        ...

    def __len__(self) -> int:
        """The number of keys."""
        ...

    def get(self, key: str, default: JSONValue = None) -> JSONValue:
        """The value of ``key`` (a copy), or ``default``.

        Args:
            key: The key.
            default: What to return when ``key`` holds nothing.
        """
        ...

    def set(self, key: str, value: JSONValue) -> None:
        """Store a JSON value under ``key`` (``UsageError`` for anything JSON cannot hold).

        Args:
            key: A non-empty string.
            value: Any value JSON can hold (a copy is stored).

        Raises:
            UsageError: The key is empty or the value is not JSON.
        """
        ...

    def delete(self, key: str) -> None:
        """Remove ``key``; nothing happens (and nothing is recorded) when it is absent.

        Args:
            key: The key.
        """
        ...


def _encode(key: object, value: object) -> str:
    if not isinstance(key, str) or not key:
        raise UsageError(f"skill store keys are non-empty strings, got {key!r}")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"skill store value for {key!r} is not JSON: {exc}") from exc
    return text


class MemorySkillStore(Mapping[str, JSONValue]):
    """A ``SkillStore`` held in memory that records its writes until they are taken."""

    def __init__(self, data: Mapping[str, JSONValue] | None = None) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, str] = {}
        self._pending: list[StoreWrite] = []
        for key, value in (data or {}).items():
            self._data[key] = _encode(key, value)

    @classmethod
    def from_writes(cls, writes: Iterable[StoreWrite]) -> MemorySkillStore:
        """The store that a sequence of past writes leaves behind (nothing pending)."""
        store = cls()
        for write in writes:
            store._apply(write)
        return store

    def _apply(self, write: StoreWrite) -> None:
        if write.deleted:
            self._data.pop(write.key, None)
        else:
            self._data[write.key] = write.value

    def __getitem__(self, key: str) -> JSONValue:
        with self._lock:
            text = self._data[key]
        value: JSONValue = json.loads(text)
        return value

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            keys = list(self._data)
        return iter(keys)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: str, default: JSONValue = None) -> JSONValue:  # type: ignore[override]
        """The value of ``key`` (a copy), or ``default``."""
        try:
            return self[key]
        except KeyError:
            return default

    def __repr__(self) -> str:
        return f"MemorySkillStore({dict(self)!r})"

    def set(self, key: str, value: JSONValue) -> None:
        """Store a JSON value under ``key`` (``UsageError`` for anything JSON cannot hold)."""
        write = StoreWrite(key, _encode(key, value))
        with self._lock:
            self._apply(write)
            self._pending.append(write)

    def delete(self, key: str) -> None:
        """Remove ``key``; nothing happens (and nothing is recorded) when it is absent."""
        with self._lock:
            if key not in self._data:
                return
            write = StoreWrite(key, "null", deleted=True)
            self._apply(write)
            self._pending.append(write)

    def pending(self) -> tuple[StoreWrite, ...]:
        """The writes recorded since the last ``take_writes()``, oldest first."""
        with self._lock:
            return tuple(self._pending)

    def take_writes(self) -> tuple[StoreWrite, ...]:
        """Hand over the recorded writes (for the session to commit) and forget them."""
        with self._lock:
            taken = tuple(self._pending)
            self._pending.clear()
        return taken
