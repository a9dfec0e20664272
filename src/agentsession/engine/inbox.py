"""One session's inbox: the inputs accepted by ``steer()``/``queue()`` and not yet delivered.

The state is a function of the log: an ``InputQueued`` adds an input, an ``InputDelivered`` or
``InputCancelled`` removes it. The inbox follows every record its session's writer takes (and the
state entries read when the session is opened), so it never disagrees with the store, also after
a write whose answer was lost. An input an admission is about to deliver is *reserved*: it can no
longer be cancelled, and it is free again if that admission is not committed (a rejection, a
failed write); the committed ``InputDelivered`` removes it. So each accepted input is delivered
once, or cancelled, never both.

Delivery order: steers in the order they were accepted, at the first step boundary after each;
queued inputs one per turn in the order they were accepted. A turn the inbox starts opens with the
oldest pending input (and, if that is a steer, every pending steer).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .._frozen import frozen
from ..log import (
    InputCancelled,
    InputDelivered,
    InputMode,
    InputQueued,
    LogEntry,
    Record,
    UserEntry,
    now,
)

__all__ = ["Inbox", "PendingInput"]


@frozen
class PendingInput:
    """An input ``steer()`` or ``queue()`` accepted that is not delivered yet.

    ``id`` names it for ``cancel_input()``; ``accepted_at`` is when it became durable (ISO 8601).
    ``state`` is ``"pending"``, or ``"delivering"`` while the admission that delivers it is being
    committed (too late to cancel).
    """

    id: str
    mode: InputMode
    text: str
    accepted_at: str
    state: str = "pending"


class Inbox:
    """The pending inputs of one session, in the order they were accepted."""

    def __init__(self, entries: Iterable[LogEntry] = ()) -> None:
        self._pending: dict[str, InputQueued] = {}
        self._reserved: set[str] = set()
        self.take_entries(entries)

    def took(self, records: Sequence[Record]) -> None:
        """Follow records the session's writer committed (or found committed)."""
        self.take_entries(r.entry for r in records)

    def take_entries(self, entries: Iterable[LogEntry]) -> None:
        """Follow log entries, oldest first."""
        for entry in entries:
            if isinstance(entry, InputQueued):
                self._pending[entry.input_id] = entry
            elif isinstance(entry, InputDelivered | InputCancelled):
                self._pending.pop(entry.input_id, None)
                self._reserved.discard(entry.input_id)

    def pending(self) -> list[PendingInput]:
        """Every input not delivered nor cancelled, in the order accepted."""
        return [
            PendingInput(
                e.input_id,
                e.mode,
                e.text,
                e.timestamp,
                "delivering" if e.input_id in self._reserved else "pending",
            )
            for e in self._pending.values()
        ]

    def __contains__(self, input_id: object) -> bool:
        return input_id in self._pending

    def cancellable(self, input_id: str) -> bool:
        """Whether ``input_id`` is pending and no admission is delivering it."""
        return input_id in self._pending and input_id not in self._reserved

    def has_deliverable(self) -> bool:
        """Whether some input waits that no admission is delivering."""
        return any(i not in self._reserved for i in self._pending)

    def reserve_steers(self) -> list[LogEntry]:
        """The entries that deliver every free pending steer (reserved until released)."""
        return self._reserve([e for e in self._free() if e.mode == "steer"])

    def preview_steers(self) -> list[LogEntry]:
        """What ``reserve_steers`` would deliver now, reserving nothing (a request preview)."""
        return _delivering([e for e in self._free() if e.mode == "steer"])

    def reserve_next(self) -> list[LogEntry]:
        """What a turn the inbox starts opens with: the oldest free input (a steer: all steers)."""
        free = self._free()
        if not free:
            return []
        if free[0].mode == "queue":
            return self._reserve(free[:1])
        return self.reserve_steers()

    def release(self, entries: Sequence[LogEntry]) -> None:
        """The admission holding ``entries`` ended; uncommitted deliveries are free again."""
        for entry in entries:
            if isinstance(entry, InputDelivered):
                self._reserved.discard(entry.input_id)

    def _free(self) -> list[InputQueued]:
        return [e for i, e in self._pending.items() if i not in self._reserved]

    def _reserve(self, inputs: Sequence[InputQueued]) -> list[LogEntry]:
        self._reserved.update(item.input_id for item in inputs)
        return _delivering(inputs)


def _delivering(inputs: Sequence[InputQueued]) -> list[LogEntry]:
    """The entries that deliver ``inputs``: each one's mark, then the user entry it becomes."""
    stamp = now()
    entries: list[LogEntry] = []
    for item in inputs:
        entries.append(InputDelivered(item.input_id, item.mode, stamp))
        entries.append(UserEntry(item.text, timestamp=stamp))
    return entries
