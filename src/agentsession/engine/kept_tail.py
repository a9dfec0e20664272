"""The tail of a session's log since its last dispatch, as its writer last knew it.

A retry reads that tail to close the step a dead process left, and again after closing it; the
open read it first. Each read was two round trips to the store (the last dispatch, then the log
from it). The writer keeps the tail it read and extends it with every record it takes, and
answers from it while it ends at the writer's ``next_seq``: the log as that writer knows it,
the same log its next append is checked against (expected seq).

A tail read without the lease (at the open) may be stale by the time the lease is taken: it is
kept across taking the lease only when the store read the log's end with the lease and found it
unchanged (``lease_taken``); otherwise the next read asks the store.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..log import Dispatch, Record

__all__ = ["KeptTail"]


class KeptTail:
    """The records from the last dispatch on (``None``: nothing dispatched) up to a seq."""

    def __init__(self) -> None:
        self._kept: tuple[list[Record] | None, int] | None = None

    def at(self, next_seq: int) -> tuple[bool, list[Record] | None]:
        """Whether a tail ending at ``next_seq`` is kept, and a copy of it."""
        if self._kept is None or self._kept[1] != next_seq:
            return False, None
        records = self._kept[0]
        return True, None if records is None else list(records)

    def keep(self, records: list[Record] | None, end: int, next_seq: int) -> None:
        """Keep a tail read from the store when it ends at ``next_seq``.

        ``end``: the seq after its last record (for ``None``, any seq up to ``next_seq``). A
        log another writer has grown past ``next_seq`` is not kept.
        """
        if records is None or end == next_seq:
            self._kept = (None if records is None else list(records), next_seq)
        else:
            self._kept = None

    def extend(self, records: Sequence[Record]) -> None:
        """Extend it with records the writer took (contiguous), else forget it."""
        if self._kept is None or not records:
            return
        kept, end = self._kept
        if records[0].seq != end:
            self._kept = None
            return
        tail = None if kept is None else list(kept)
        for record in records:
            if isinstance(record.entry, Dispatch):
                tail = [record]
            elif tail is not None:
                tail.append(record)
        self._kept = (tail, records[-1].seq + 1)

    def lease_taken(self, end: int | None, next_seq: int) -> None:
        """The lease was taken anew; ``end``: the log's next seq the store read right after.

        The tail still holds only if nothing was written since it was read: the log still ends
        at ``next_seq``. ``None`` (the store cannot tell) forgets it.
        """
        if end is None or end != next_seq:
            self._kept = None
