"""The safe provider-turn boundary: what runs right before every provider call.

In order: (1) the new user input is promoted and tool results are already settled in the log;
(2) every component was sampled once by the caller (the same samples serve a compaction at this
boundary); (3) samples are compared with the epoch's checkpoint by hash; (4) all changes combine
into one ``MidConversationSystemMessage`` placed after the new input and results; (5) the
request is built (projection, window, tools) and preflighted — a rejection raises before anything
is admitted; (6) the caller commits the returned entries at once, then calls the provider.

``admit`` decides in one pass over one projection: it projects the log (with the new input and
the update message in place), chooses the window once, and from that decides whether a new epoch
starts — when there is none yet, when one was asked for (model switch), when the window has to
drop messages, or when the tools changed on a profile that cannot announce tool changes in place
(the request's first bytes change anyway). On a profile with native tool changes, tools that join
or leave ride on the update message (``tools_added``/``tools_removed``) and the request keeps
declaring every tool of the epoch, so its tool list stays byte-stable. A new epoch's baseline is
rendered from the same samples, so nothing the model was told is lost when old mid-conversation
messages leave the view, and no redundant update message is emitted. The request is then built
once. ``admit`` is pure: it neither samples nor writes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field, replace
from itertools import repeat

from ._frozen import frozen
from ._memo import PrefixMemo
from .config import Config
from .context.component import ContextComponent, LoadResult
from .context.engine import (
    ComponentState,
    changes_since,
    effective_state,
    fresh_baseline,
    message_for,
)
from .log import (
    ContextEpoch,
    Dispatch,
    EpochReason,
    LogEntry,
    MidConversationSystemMessage,
    Record,
    SystemPromptCheckpoint,
)
from .projection import Projection, ViewMessage, elsewhere, projection_of
from .request import AssistantMessage, Request, SystemMessage, ToolSpec, UserMessage, digest
from .window import Window, select_window, whole_window, with_elision_note

__all__ = [
    "Admission",
    "BoundaryInput",
    "EpochTools",
    "admit",
    "build_request",
    "epoch_tools",
    "request_tools",
    "window_of",
]


@frozen
class BoundaryInput:
    """Everything the boundary reads: the log since the epoch start and one sample per source.

    ``promoted`` are the entries this boundary promotes into the log ahead of the update message
    (the new user input and what belongs to it), in order. ``tools`` are the tools on offer now,
    in order; ``tool_specs`` every declaration the session still knows (tools that left
    included), so an epoch's declarations can be rebuilt; ``native_tool_changes`` is the
    profile's capability. ``removal_texts`` holds the removal text of components that left.
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
    tool_specs: Mapping[str, ToolSpec] = field(default_factory=dict)
    native_tool_changes: bool = False
    removal_texts: Mapping[str, str] = field(default_factory=dict)
    cold: bool = False  # the provider's cache has expired since the last request


@frozen
class Admission:
    """What to commit before the provider call, and the request to send after the commit.

    ``offered`` names the tools the model may call after this admission (a declared tool that
    left in place is not among them).
    """

    request: Request
    entries: tuple[LogEntry, ...]
    epoch: ContextEpoch
    changed: tuple[str, ...]
    new_epoch: bool
    tokens: int = 0
    offered: tuple[str, ...] = ()


@frozen
class EpochTools:
    """The tools of an epoch: ``declared`` in the request (in order), ``offered`` to the model."""

    declared: tuple[str, ...]
    offered: tuple[str, ...]


def epoch_tools(
    epoch: ContextEpoch, mids: Sequence[MidConversationSystemMessage], current: Sequence[str]
) -> EpochTools:
    """The tools ``epoch`` declared and offers after its update messages so far.

    An epoch written before tools were recorded declared the application's tools: ``current``.
    """
    declared = list(epoch.tools if epoch.tools is not None else current)
    offered = list(declared)
    for mid in mids:
        if mid.epoch != epoch.epoch:
            continue
        for name in mid.tools_removed:
            if name in offered:
                offered.remove(name)
        for name in mid.tools_added:
            if name not in declared:
                declared.append(name)
            if name not in offered:
                offered.append(name)
    return EpochTools(tuple(declared), tuple(offered))


def request_tools(
    epoch: ContextEpoch,
    mids: Sequence[MidConversationSystemMessage],
    tools: Sequence[ToolSpec],
    specs: Mapping[str, ToolSpec],
    *,
    native: bool,
) -> tuple[ToolSpec, ...] | None:
    """The declarations a request of ``epoch`` carries; ``None`` when they cannot be rebuilt.

    Without native tool changes that is the tools on offer; with them, every tool the epoch
    declared, in order, so that the list stays the same for the whole epoch.
    """
    if not native or epoch.tools is None:
        return tuple(tools)
    known = {**specs, **{t.name: t for t in tools}}
    names = epoch_tools(epoch, mids, [t.name for t in tools]).declared
    if any(name not in known for name in names):
        return None
    return tuple(known[name] for name in names)


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
    kept = list(map(view.__getitem__, window.indices))
    if drop_system:
        kept = [v for v in kept if not isinstance(v.message, SystemMessage)]
    messages = list(map(_MESSAGE, kept))
    if window.note_index is not None and messages and isinstance(messages[0], UserMessage):
        messages[0] = with_elision_note(messages[0], window.elided)
    # Only assistant messages carry provider data: whether any does is answered in C.
    if any(map(getattr, messages, repeat("provider_data"), repeat(None))):
        for i, message in enumerate(messages):
            # Another provider's opaque data (a reasoning signature) cannot be read here.
            opaque = isinstance(message, AssistantMessage) and bool(message.provider_data)
            if opaque and message.provider != provider:  # a compaction block: its text
                messages[i] = elsewhere(message, summary=kept[i].summary)
    sources = tuple(map(_SEQS, kept))
    return Request(baseline, tuple(messages), _as_before(tuple(tools)), sources)


_TOOLS: list[tuple[ToolSpec, ...]] = [()]
"""The tool tuple of the last request built (one slot: sessions that share it go on hitting)."""


def _as_before(tools: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]:
    """``tools``, or the last request's tuple when it holds the very same declarations."""
    # The same tuple: its text, digest and token count are kept for the object, not joined again.
    before = _TOOLS[0]
    if len(before) == len(tools) and all(map(operator.is_, before, tools)):
        return before
    _TOOLS[0] = tools
    return tools


_MESSAGE = operator.attrgetter("message")
_SEQS = operator.attrgetter("seqs")


def window_of(view: Sequence[ViewMessage], config: Config, *, cold: bool = False) -> Window:
    """The transcript window over ``view`` under ``config`` (``cold``: the cache has expired)."""
    return select_window(
        list(map(_MESSAGE, view)),
        config.max_transcript_messages,
        step=config.window_step or 1,
        chunk=config.effective_elision_chunk,
        keep=config.window_keep_messages,
        cold=cold,
        not_turns=frozenset(i for i, v in enumerate(view) if v.replayed),  # stay with their turn
    )


def _window(projection: Projection, config: Config, cold: bool) -> Window:
    """``window_of(projection.view, …)``; a whole view that fits is found from its counts."""
    n, keep = len(projection.messages), config.window_keep_messages
    cap = config.max_transcript_messages
    whole = whole_window(n, n - projection.systems, cap, keep=keep, cold=cold)
    return whole if whole is not None else window_of(projection.view, config, cold=cold)


def _request(
    projection: Projection,
    window: Window,
    baseline: tuple[tuple[str, str], ...],
    tools: Sequence[ToolSpec],
    provider: str,
    drop_system: bool,
) -> Request:
    """``build_request(projection.view, …)``; a plain whole window sends the projection's lists."""
    whole = len(window.indices) == len(projection.messages) and window.note_index is None
    if not whole or projection.opaque or (drop_system and projection.systems):
        view = projection.view
        return build_request(view, window, baseline, tools, provider, drop_system=drop_system)
    messages, sources = tuple(projection.messages), tuple(projection.sources)
    return Request(baseline, messages, _as_before(tuple(tools)), sources)


def admit(data: BoundaryInput, preflight: Callable[[Request], int]) -> Admission:
    """Run steps 3–5 of the boundary and return what to commit; raises when preflight rejects."""
    records = list(data.records)
    pending: list[LogEntry] = []
    seq = data.next_seq
    for entry in data.promoted:
        records.append(Record(seq, entry))
        pending.append(entry)
        seq += 1

    mids = [*_view_mids(data.records), *_mids(records[len(data.records) :])]
    state = effective_state(data.epoch, mids) if data.epoch is not None else {}
    reason: EpochReason | None = "start" if data.epoch is None else data.epoch_reason
    mid: MidConversationSystemMessage | None = None
    if reason is None and data.epoch is not None:
        added, removed = _tool_changes(data, mids)
        in_place = data.native_tool_changes or not (added or removed)
        if not in_place or _unreproducible(data, mids, added):
            reason = "tools"
        else:
            mid = _update(data, mids, added, removed)
        if mid is not None:
            records.append(Record(seq, mid))
            mids = [*mids, mid]

    projection = projection_of(records, data.epoch)
    view = projection.view
    window = _window(projection, data.config, data.cold)
    if reason is None and (window.start > 0 or window.omitted_system):
        # Something the model was told would leave its view (whole turns, or update messages
        # inside an elided stretch of a long turn): fold the current state into a fresh
        # baseline. Elision alone keeps the epoch: its edge moves in chunks (see window).
        reason, mid = "window", None

    epoch = data.epoch
    if reason is not None:
        epoch = _new_epoch(data, reason, state, view, window)
        pending.append(epoch)
        seq += 1
        tools: tuple[ToolSpec, ...] = tuple(data.tools)
    else:
        assert epoch is not None
        if mid is not None:
            pending.append(mid)
        rebuilt = request_tools(
            epoch, mids, data.tools, data.tool_specs, native=data.native_tool_changes
        )
        assert rebuilt is not None  # _unreproducible said so
        tools = rebuilt
    assert epoch is not None

    request = _request(projection, window, epoch.baseline, tools, data.provider, reason is not None)
    tokens = preflight(request)
    changed = _changed(data, epoch, mid, reason, state)
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
        offered=tuple(t.name for t in data.tools),
    )


def _tool_changes(
    data: BoundaryInput, mids: Sequence[MidConversationSystemMessage]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Tools that join and leave at this boundary, against what the epoch offers so far."""
    assert data.epoch is not None
    current = [t.name for t in data.tools]
    offered = epoch_tools(data.epoch, mids, current).offered
    added = tuple(name for name in current if name not in offered)
    removed = tuple(name for name in offered if name not in current)
    return added, removed


def _unreproducible(
    data: BoundaryInput, mids: Sequence[MidConversationSystemMessage], added: Sequence[str]
) -> bool:
    """Whether a declaration of this epoch is no longer known (its request cannot be rebuilt)."""
    assert data.epoch is not None
    if not data.native_tool_changes or data.epoch.tools is None:
        return False
    known = set(data.tool_specs) | {t.name for t in data.tools}
    declared = epoch_tools(data.epoch, mids, [t.name for t in data.tools]).declared
    return any(name not in known for name in (*declared, *added))


def _update(
    data: BoundaryInput,
    mids: Sequence[MidConversationSystemMessage],
    added: tuple[str, ...],
    removed: tuple[str, ...],
) -> MidConversationSystemMessage | None:
    """The one update message of this boundary, or ``None`` when nothing changed."""
    assert data.epoch is not None
    changes = changes_since(data.epoch, mids, data.components, data.samples)
    if not changes and not added and not removed:
        return None
    removals = {**data.removal_texts, **{c.key: c.removal_text() for c in data.components}}
    message = message_for(changes, removals, data.epoch.epoch, data.timestamp)
    if not changes:
        message = replace(message, text="")
    return replace(message, tools_added=added, tools_removed=removed)


def _mids(records: Sequence[Record]) -> list[MidConversationSystemMessage]:
    return [r.entry for r in records if isinstance(r.entry, MidConversationSystemMessage)]


_MIDS: PrefixMemo[tuple[MidConversationSystemMessage, ...]] = PrefixMemo()  # per view: its mids


def _view_mids(records: Sequence[Record]) -> tuple[MidConversationSystemMessage, ...]:
    """``_mids(records)``: the view's records are the same objects step after step, plus some."""
    items = tuple(records)
    found = _MIDS.resume(items)
    done, kept = (0, ()) if found is None else found
    mids = (*kept, *_mids(items[done:]))
    if len(items) > done:
        _MIDS.keep(items, mids)
    return mids


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
    # A window that keeps the front keeps the history start, so a compaction summary keeps opening
    # it (model switch, elision in the newest turn); one that moved starts at its first turn.
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
        tools=tuple(t.name for t in data.tools),
        provider=data.provider,
    )


def _changed(
    data: BoundaryInput,
    epoch: ContextEpoch,
    mid: MidConversationSystemMessage | None,
    reason: EpochReason | None,
    state: Mapping[str, ComponentState],
) -> dict[str, str | None]:
    """What the ``SystemPromptCheckpoint`` of this dispatch records.

    Each value is a section's rendered text as a baseline carries it (``None``: removed), so
    folding every checkpoint of a session gives the effective state the model last had. The
    first request of every epoch records every baseline section and the removals (DESIGN §4),
    except an epoch the window starts: it keeps talking to the same model about the same
    conversation, so it records only the sections whose text differs from the effective state
    the model had — the epoch's baseline *and* its update messages — so a window that moves at
    every turn does not record the whole system part every turn. A later request of an epoch
    records what its update message changed.
    """
    changed: dict[str, str | None] = {}
    prior = data.epoch
    if reason == "window" and prior is not None and data.epoch_dispatched:
        before = {key: told.baseline for key, told in state.items()}
        after = dict(epoch.baseline)
        changed.update({k: v for k, v in after.items() if before.get(k) != v})
        changed.update({k: None for k in before if k not in after})
    elif reason is not None or not data.epoch_dispatched:
        after = dict(epoch.baseline)
        changed.update(after)
        gone = [*epoch.removed]
        if reason is not None and prior is not None and not data.epoch_dispatched:
            gone.extend(prior.removed)  # never dispatched: the model last had the state before
        changed.update({key: None for key in gone if key not in after})
    if mid is not None:
        for change in mid.changes:
            text = change.baseline if change.baseline is not None else change.update
            changed[change.key] = text if change.update is not None else None
    return changed
