"""The safe provider-turn boundary: what runs right before every provider call.

In order: (1) the new user input is promoted and tool results are already settled in the log;
(2) every component was sampled once by the caller (the same samples serve a compaction at this
boundary); (3) samples are compared with the epoch's checkpoint by hash; (4) all changes combine
into one ``MidConversationSystemMessage`` placed after the new input and results; (5) the
request is built (projection, window, tools) and preflighted — a rejection raises before anything
is admitted; (6) the caller commits the returned entries in one transaction and only then calls
the provider.

``admit`` decides in one pass over one projection: it projects the log (with the new input and
the update message in place), chooses the window once, and from that decides whether a new epoch
starts — when there is none yet, when one was asked for (model switch), or when the window has to
drop messages. A new epoch's baseline is rendered from the same samples, so nothing the model was
told is lost when old mid-conversation messages leave the view, and no redundant update message
is emitted. The request is then built once. ``admit`` is pure: it neither samples nor writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from .config import Config
from .context.component import ContextComponent, LoadResult
from .context.engine import ComponentState, diff, effective_state, fresh_baseline, message_for
from .log import (
    ContextEpoch,
    Dispatch,
    EpochReason,
    LogEntry,
    MidConversationSystemMessage,
    Record,
    SystemPromptCheckpoint,
)
from .projection import ViewMessage, project
from .request import AssistantMessage, Request, SystemMessage, ToolSpec, UserMessage, digest
from .window import Window, select_window, with_elision_note

__all__ = ["Admission", "BoundaryInput", "admit", "build_request"]


@dataclass(frozen=True)
class BoundaryInput:
    """Everything the boundary reads: the log since the epoch start and one sample per source.

    ``promoted`` are the entries this boundary promotes into the log ahead of the update message
    (the new user input and what belongs to it), in order.
    """

    records: Sequence[Record]
    epoch: ContextEpoch | None
    next_seq: int
    promoted: Sequence[LogEntry]
    components: Sequence[ContextComponent]
    samples: Mapping[str, LoadResult]
    tools: Sequence[ToolSpec]
    config: Config
    model: str
    step: int
    message_count: int
    epoch_reason: EpochReason | None
    timestamp: str
    epoch_dispatched: bool = True
    provider: str = ""


@dataclass(frozen=True)
class Admission:
    """What to commit before the provider call, and the request to send after the commit."""

    request: Request
    entries: tuple[LogEntry, ...]
    epoch: ContextEpoch
    changed: tuple[str, ...]
    new_epoch: bool
    tokens: int = 0


def build_request(
    view: Sequence[ViewMessage],
    window: Window,
    baseline: tuple[tuple[str, str], ...],
    tools: Sequence[ToolSpec],
    provider: str = "",
    *,
    drop_system: bool = False,
) -> Request:
    """The request of the ``window`` over ``view``, with ``baseline`` as its system part.

    ``drop_system`` leaves out mid-conversation messages: a new epoch folds them into its
    baseline. Opaque provider data (e.g. reasoning signatures) is kept only on messages produced
    by ``provider``: another provider cannot read it.
    """
    kept = [view[i] for i in window.indices]
    if drop_system:
        kept = [v for v in kept if not isinstance(v.message, SystemMessage)]
    messages = [v.message for v in kept]
    if window.note_index is not None and messages and isinstance(messages[0], UserMessage):
        messages[0] = with_elision_note(messages[0], window.elided)
    for i, message in enumerate(messages):
        foreign = isinstance(message, AssistantMessage) and message.provider != provider
        if foreign and isinstance(message, AssistantMessage) and message.provider_data:
            messages[i] = replace(message, provider_data={})
    return Request(
        system=baseline,
        messages=tuple(messages),
        tools=tuple(tools),
        sources=tuple(v.seqs for v in kept),
    )


def window_of(view: Sequence[ViewMessage], config: Config) -> Window:
    """The transcript window over ``view`` under ``config``."""
    return select_window(
        [v.message for v in view], config.max_transcript_messages, step=config.window_step
    )


def admit(data: BoundaryInput, preflight: Callable[[Request], int]) -> Admission:
    """Run steps 3–5 of the boundary and return what to commit; raises when preflight rejects."""
    records = list(data.records)
    pending: list[LogEntry] = []
    seq = data.next_seq
    for entry in data.promoted:
        records.append(Record(seq, entry))
        pending.append(entry)
        seq += 1

    state = effective_state(data.epoch, _mids(records)) if data.epoch is not None else {}
    reason: EpochReason | None = "start" if data.epoch is None else data.epoch_reason
    mid: MidConversationSystemMessage | None = None
    if reason is None and data.epoch is not None:
        changes = diff(state, data.components, data.samples)
        if changes:
            removals = {c.key: c.removal_text() for c in data.components}
            mid = message_for(changes, removals, data.epoch.epoch, data.timestamp)
            records.append(Record(seq, mid))

    view = project(records, data.epoch)
    window = window_of(view, data.config)
    if reason is None and (window.start > 0 or window.elided):
        # The prefix changes anyway: fold the current state into a fresh baseline, so nothing
        # leaves the model's view with the old mid-conversation messages.
        reason, mid = "window", None

    epoch = data.epoch
    if reason is not None:
        epoch = _new_epoch(data, reason, state, view, window)
        pending.append(epoch)
        seq += 1
    assert epoch is not None
    if mid is not None:
        pending.append(mid)

    request = build_request(
        view, window, epoch.baseline, data.tools, data.provider, drop_system=reason is not None
    )
    tokens = preflight(request)
    changed = _changed(data, epoch, mid, new_epoch=reason is not None)
    if changed:
        pending.append(SystemPromptCheckpoint(data.message_count, data.timestamp, changed))
    pending.append(Dispatch(data.model, data.step, digest(request), timestamp=data.timestamp))
    return Admission(
        request=request,
        entries=tuple(pending),
        epoch=epoch,
        changed=tuple(changed),
        new_epoch=reason is not None,
        tokens=tokens,
    )


def _mids(records: Sequence[Record]) -> list[MidConversationSystemMessage]:
    return [r.entry for r in records if isinstance(r.entry, MidConversationSystemMessage)]


def _new_epoch(
    data: BoundaryInput,
    reason: EpochReason,
    state: Mapping[str, ComponentState],
    view: Sequence[ViewMessage],
    window: Window,
) -> ContextEpoch:
    """The epoch that starts at this boundary; its history starts where the window starts."""
    prior = data.epoch
    baseline, checkpoint, removed = fresh_baseline(state, data.components, data.samples)
    # A window that keeps the front keeps the history start, so a compaction summary keeps
    # opening it (model switch, elision inside the newest turn); one that moved starts at its
    # first turn and leaves the summary behind.
    history_start = prior.history_start if prior is not None else 0
    summary_seq = prior.summary_seq if prior is not None else None
    if window.start > 0:
        history_start, summary_seq = view[window.start].seqs[0], None
    return ContextEpoch(
        epoch=prior.epoch + 1 if prior is not None else 0,
        baseline=baseline,
        checkpoint=checkpoint,
        history_start=history_start,
        reason=reason,
        model=data.model,
        removed=removed,
        summary_seq=summary_seq,
        timestamp=data.timestamp,
    )


def _changed(
    data: BoundaryInput,
    epoch: ContextEpoch,
    mid: MidConversationSystemMessage | None,
    *,
    new_epoch: bool,
) -> dict[str, str | None]:
    """What the ``SystemPromptCheckpoint`` of this dispatch records.

    The first request of an epoch records every baseline section and the removals; a later one
    only what its update message changed.
    """
    changed: dict[str, str | None] = {}
    if new_epoch or not data.epoch_dispatched:
        changed.update(dict(epoch.baseline))
        changed.update(dict.fromkeys(epoch.removed))
    if mid is not None:
        changed.update({c.key: c.update for c in mid.changes})
    return changed
