"""The epoch view: the current epoch and the log records its model view reads.

A request is rebuilt from the newest ``ContextEpoch`` and the entries of the kinds the model view
reads (``VIEW_KINDS``) from where that view starts (``view_start``: the epoch's history start or
its summary, whichever is earlier). The ``LogWriter`` reads it once through the store's kind index
— in time proportional to the window, not the log — and keeps it as a ``CachedView`` that each
committed record extends (``CachedView.extended``), so a step reads nothing back. A new epoch whose
view reaches further back than what is kept drops the cache, and the next step reads it afresh.
"""

from __future__ import annotations

from .._frozen import frozen
from ..log import ContextEpoch, Dispatch, EpochReason, Record
from ..projection import VIEW_KINDS
from ..providers.base import Model
from ..store.base import ViewRows
from ..store.fast import LastNow, ReadNow

__all__ = [
    "CachedView",
    "EpochView",
    "dispatch_of",
    "epoch_of",
    "record_view_start",
    "standing_reason",
    "view_rows_now",
    "view_start",
]


@frozen
class EpochView:
    """The current epoch (``None`` before the first request) and the log its model view reads.

    ``records`` run from the first seq the view needs to the end of the log: the entries of the
    kinds the model view reads (``VIEW_KINDS``), and every entry this writer committed since it
    read them; ``dispatched`` says whether a request of this epoch was sent already.
    """

    epoch: ContextEpoch | None
    records: list[Record]
    dispatched: bool


@frozen
class CachedView:
    """The epoch view this writer keeps between steps (``epoch_seq`` -1: no epoch yet).

    ``records`` hold the ``VIEW_KINDS`` entries read from the store and, from ``complete_from``
    on, every entry this writer committed.
    """

    epoch: ContextEpoch | None
    epoch_seq: int
    records: list[Record]
    dispatched: bool
    complete_from: int

    def extended(self, record: Record) -> CachedView | None:
        """The view with ``record`` appended; ``None`` when it must be read afresh."""
        entry = record.entry
        if isinstance(entry, ContextEpoch):
            start = view_start(entry, record.seq)
            kept = [r for r in self.records if r.seq >= start]
            if self.records and start < self.records[0].seq:
                return None  # the new epoch's view reaches further back than what is kept
            return CachedView(entry, record.seq, [*kept, record], False, self.complete_from)
        dispatched = self.dispatched or (isinstance(entry, Dispatch) and self.epoch is not None)
        self.records.append(record)
        if dispatched == self.dispatched:
            return self  # the same view, one record longer: no copy for each record committed
        return CachedView(self.epoch, self.epoch_seq, self.records, dispatched, self.complete_from)


def view_rows_now(
    finds: tuple[ReadNow, LastNow], session_id: str, end: int, dispatch_known: bool
) -> ViewRows:
    """The newest epoch, its view's ``VIEW_KINDS`` records up to ``end``, the last dispatch.

    ``finds``: a store's ``read_now`` and ``last_now`` (``FastPaths.finds``). The dispatch is
    looked up only when there is an epoch and the writer does not know it.
    """
    read_now, last_now = finds
    found = last_now(session_id, ["epoch"])
    start = 0 if found is None else view_start(epoch_of(found), found.seq)
    records = read_now(session_id, start, end, VIEW_KINDS)
    dispatch = None
    if found is not None and not dispatch_known:
        dispatch = last_now(session_id, ["dispatch"])
    return found, records, dispatch


def record_view_start(record: Record) -> int:
    """The first seq the model view of the epoch ``record`` holds reads."""
    return view_start(epoch_of(record), record.seq)


def epoch_of(record: Record) -> ContextEpoch:
    """The epoch a record of kind ``epoch`` holds."""
    assert isinstance(record.entry, ContextEpoch)
    return record.entry


def dispatch_of(record: Record) -> Dispatch:
    """The dispatch a record of kind ``dispatch`` holds."""
    assert isinstance(record.entry, Dispatch)
    return record.entry


def view_start(epoch: ContextEpoch, seq: int) -> int:
    """The first seq the model view of ``epoch`` (stored at ``seq``) reads."""
    start = min(epoch.history_start, seq)
    if epoch.summary_seq is not None:
        start = min(start, epoch.summary_seq)
    return start


def standing_reason(view: EpochView, model: Model) -> EpochReason | None:
    """Why the next request starts a new epoch, as the log alone tells it (``None``: it need not).

    The epoch was rendered for another model than ``model`` (a switch, or a session reopened in a
    process configured with another one), or it is an import's empty epoch no request used yet.
    """
    return _switched(view.epoch, model) or _imported(view)


def _imported(view: EpochView) -> EpochReason | None:
    """``"import"`` until the first request after an import: its epoch holds nothing of the file.

    The new epoch starts from the import epoch's empty state, so the baseline is the importing
    runtime's own rendering and no section of the file's context is carried over.
    """
    epoch = view.epoch
    if epoch is not None and epoch.reason == "import" and not view.dispatched:
        return "import"
    return None


def _switched(epoch: ContextEpoch | None, model: Model) -> EpochReason | None:
    """``"model_switch"`` when the epoch was rendered for another model than the current one.

    This covers a session reopened in a process configured with a different model.
    """
    if epoch is None or not epoch.model:
        return None
    if epoch.model != model.name:
        return "model_switch"
    # The same name at another provider is another model (an epoch of an older log names none).
    if epoch.provider and epoch.provider != model.profile.provider:
        return "model_switch"
    return None
