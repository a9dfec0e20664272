"""An epoch's model view carried over from the epoch before it, where projecting gives the same.

A window advance starts an epoch whose history starts later in the same log, so its view is
mostly the last epoch's view from the new start on. ``projection.project`` maps each record on
its own when no record reaches another's message (a selection snapshot, an omission) and no
summary opens the view; then the view messages the last epoch made from the records both views
hold are this epoch's too, and only the records after the last epoch's are projected. The very
objects are kept, so every memo keyed by a message's identity (its text, its tokens, its place
in the report) finds them. Anything else is projected in full. The rebuild's digests prove the
requests built from either.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._frozen import frozen
from ..log import TRANSCRIPT_KINDS, ContextEpoch, MidConversationSystemMessage, Record
from ..projection import VIEW_KINDS, ViewMessage, project
from ..request import SystemMessage

__all__ = ["Projected", "carried"]

_VIEWED = frozenset(VIEW_KINDS)
_ON_ITS_OWN = frozenset({*TRANSCRIPT_KINDS, "mid_conversation_system"})
"""Viewed kinds whose record makes at most its own message (the others reach other records',
or open a view)."""


@frozen
class Projected:
    """The view of epoch ``epoch``, projected from ``records[lo:end]``."""

    lo: int
    end: int
    epoch: ContextEpoch
    view: list[ViewMessage]


def carried(
    records: Sequence[Record], lo: int, end: int, epoch: ContextEpoch, last: Projected | None
) -> list[ViewMessage] | None:
    """``project(records[lo:end], epoch)``, reusing ``last``'s view; ``None``: project it all.

    ``last`` is an earlier epoch's view whose records end inside this epoch's.
    """
    if last is None or epoch.summary_seq is not None or epoch.epoch == last.epoch.epoch:
        return None
    start = epoch.history_start
    if start < last.epoch.history_start or not last.lo <= lo <= last.end <= end:
        return None
    for record in records[last.lo : end]:
        kind = record.entry.kind
        if kind in _VIEWED and kind not in _ON_ITS_OWN:
            return None
    for record in records[lo : last.end]:
        entry = record.entry
        if isinstance(entry, MidConversationSystemMessage) and entry.epoch == epoch.epoch:
            return None  # logged before its epoch began: the last view left it out
    # The last view's messages from this history start on, except its own epoch's
    # mid-conversation messages (the only system messages a record makes on its own).
    kept = [v for v in last.view if v.seqs[0] >= start and not isinstance(v.message, SystemMessage)]
    return kept + project(records[last.end : end], epoch)
