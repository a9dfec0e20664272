"""The safe provider-turn boundary: what runs right before every provider call.

In order: (1) the new user input is promoted and tool results are already settled in the log;
(2) every component is sampled once; (3) samples are compared with the epoch's checkpoint by hash;
(4) all changes combine into one ``MidConversationSystemMessage`` placed after the new input and
results; (5) the request is built (projection, window, tools) and preflighted — a rejection raises
before anything is admitted; (6) the caller commits the returned entries in one transaction and
only then calls the provider.

A new epoch starts when there is none yet, when one was requested (compaction, model switch), or
when the window has to drop messages: its baseline is rendered from the same samples, so nothing
the model was told is lost when old mid-conversation messages leave the view, and no redundant
update message is emitted. ``admit`` is pure apart from sampling; it never writes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .codec import encode
from .config import Config
from .context.component import ContextComponent, LoadResult
from .context.engine import diff, effective_state, fresh_baseline, message_for
from .log import (
    ContextEpoch,
    Dispatch,
    EpochReason,
    LogEntry,
    MidConversationSystemMessage,
    Record,
    SystemPromptCheckpoint,
    UserEntry,
)
from .projection import ViewMessage, project
from .request import AssistantMessage, Request, ToolSpec, UserMessage
from .window import select_window, with_elision_note

__all__ = ["Admission", "BoundaryInput", "admit", "build_request", "request_digest"]


@dataclass(frozen=True)
class BoundaryInput:
    """Everything the boundary reads: the log since the epoch start and the live sources."""

    records: Sequence[Record]
    epoch: ContextEpoch | None
    next_seq: int
    new_user: UserEntry | None
    components: Sequence[ContextComponent]
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


def request_digest(request: Request) -> str:
    """A stable digest of what a request sends (sources excluded): proves a replay unchanged."""
    payload = {
        "system": encode(request.system),
        "messages": encode(request.messages),
        "tools": encode(request.tools),
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def build_request(
    view: Sequence[ViewMessage],
    epoch: ContextEpoch,
    tools: Sequence[ToolSpec],
    config: Config,
    provider: str = "",
) -> tuple[Request, int, int]:
    """The windowed request of ``view``; also the window's start index and elided count.

    Opaque provider data (e.g. reasoning signatures) is kept only on messages produced by
    ``provider``: another provider cannot read it.
    """
    window = select_window(
        [v.message for v in view], config.max_transcript_messages, step=config.window_step
    )
    kept = [view[i] for i in window.indices]
    messages = [v.message for v in kept]
    if window.note_index is not None and isinstance(messages[0], UserMessage):
        messages[0] = with_elision_note(messages[0], window.elided)
    for i, message in enumerate(messages):
        foreign = isinstance(message, AssistantMessage) and message.provider != provider
        if foreign and isinstance(message, AssistantMessage) and message.provider_data:
            messages[i] = replace(message, provider_data={})
    request = Request(
        system=epoch.baseline,
        messages=tuple(messages),
        tools=tuple(tools),
        sources=tuple(v.seqs for v in kept),
    )
    return request, window.start, window.elided


async def sample_all(components: Sequence[ContextComponent]) -> dict[str, LoadResult]:
    """Sample every component exactly once, in order."""
    return {comp.key: await comp.sample() for comp in components}


async def admit(
    data: BoundaryInput,
    preflight: Callable[[Request], int],
) -> Admission:
    """Run steps 2–5 of the boundary and return what to commit; raises when preflight rejects."""
    records = list(data.records)
    pending: list[LogEntry] = []
    seq = data.next_seq
    if data.new_user is not None:
        records.append(Record(seq, data.new_user))
        pending.append(data.new_user)
        seq += 1

    samples = await sample_all(data.components)
    mids = [r.entry for r in records if isinstance(r.entry, MidConversationSystemMessage)]
    state = effective_state(data.epoch, mids) if data.epoch is not None else {}

    reason: EpochReason | None = data.epoch_reason
    history_start = 0
    mid: MidConversationSystemMessage | None = None
    epoch = data.epoch
    if epoch is None:
        reason = "start"
    elif reason is None:
        changes = diff(state, data.components, samples)
        if changes:
            removals = {c.key: c.removal_text() for c in data.components}
            mid = message_for(changes, removals, epoch.epoch, data.timestamp)
        trial = [*records, Record(seq, mid)] if mid is not None else records
        view = project(trial, epoch)
        _, start, elided = build_request(view, epoch, data.tools, data.config, data.provider)
        if start > 0 or elided:
            # The prefix changes anyway: fold the current state into a fresh baseline so
            # nothing leaves the model's view with the old mid-conversation messages.
            reason, mid, history_start = "window", None, view[start].seqs[0]
    else:
        history_start = epoch.history_start
    if reason is not None:
        baseline, checkpoint, removed = fresh_baseline(state, data.components, samples)
        epoch = ContextEpoch(
            epoch=(data.epoch.epoch + 1) if data.epoch is not None else 0,
            baseline=baseline,
            checkpoint=checkpoint,
            history_start=history_start,
            reason=reason,
            model=data.model,
            removed=removed,
            # A model switch keeps the history, so a compaction summary keeps opening it.
            summary_seq=(
                data.epoch.summary_seq
                if reason == "model_switch" and data.epoch is not None
                else None
            ),
            timestamp=data.timestamp,
        )
        _, start, _ = build_request(
            project(records, epoch), epoch, data.tools, data.config, data.provider
        )
        if start > 0:
            first = project(records, epoch)[start].seqs[0]
            epoch = replace(epoch, history_start=first, summary_seq=None)
        pending.append(epoch)
        seq += 1
    assert epoch is not None
    if mid is not None:
        pending.append(mid)
        records.append(Record(seq, mid))
        seq += 1

    view = project(records, epoch)
    request, _, _ = build_request(view, epoch, data.tools, data.config, data.provider)
    tokens = preflight(request)

    if reason is not None or not data.epoch_dispatched:
        # The first request of an epoch records every baseline section (and removals).
        changed: dict[str, str | None] = dict(epoch.baseline)
        changed.update(dict.fromkeys(epoch.removed))
        if mid is not None:
            changed.update({c.key: c.update for c in mid.changes})
    elif mid is not None:
        changed = {c.key: c.update for c in mid.changes}
    else:
        changed = {}
    if changed:
        pending.append(SystemPromptCheckpoint(data.message_count, data.timestamp, changed))
    pending.append(Dispatch(data.model, data.step, request_digest(request), "", data.timestamp))
    return Admission(
        request=request,
        entries=tuple(pending),
        epoch=epoch,
        changed=tuple(changed),
        new_epoch=reason is not None,
        tokens=tokens,
    )
