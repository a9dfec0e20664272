"""Checkpoint comparison and rendering: pure functions over samples and the effective state.

The effective state of an epoch is its baseline folded with the changes of every
mid-conversation system message admitted since. At a safe boundary each component is sampled
once; ``diff`` compares the samples with the state by hash and yields the changes in component
order (removals of components that left the registry last, by key). ``fresh_baseline`` renders a
new epoch's baseline from the same samples, using the last admitted state of a component that is
unavailable right now. ``render_update`` combines all changes into one message text.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence

from .._frozen import frozen
from .._memo import IdentityMemo
from ..log import ComponentChange, ContextEpoch, MidConversationSystemMessage
from .component import (
    Absent,
    ContextComponent,
    LoadResult,
    Rendered,
    Unavailable,
    content_hash,
    removal_text,
)

__all__ = [
    "ComponentState",
    "changes_since",
    "diff",
    "effective_state",
    "fresh_baseline",
    "render_update",
]

UPDATE_HEADER = (
    "System context update. The following is now in effect and supersedes what was said "
    "earlier about the same topics:"
)


@frozen
class ComponentState:
    """What the model was last told about one component in this epoch."""

    baseline: str
    hash: str


_STATES: IdentityMemo[tuple[tuple[MidConversationSystemMessage, ...], dict[str, ComponentState]]]
_STATES = IdentityMemo(size=256)
"""Per epoch: the update messages last folded into its state (the very objects) and the state."""


def effective_state(
    epoch: ContextEpoch, messages: Iterable[MidConversationSystemMessage]
) -> dict[str, ComponentState]:
    """The epoch's baseline with every later admitted change applied, in order.

    Asked at every boundary with the epoch's same update messages: the state folded last for
    the epoch is kept (both are frozen) and handed out as a new dict.
    """
    mids = tuple(messages)
    hit = _STATES.get(epoch)
    if hit is not None and len(hit[0]) == len(mids) and all(map(operator.is_, hit[0], mids)):
        return dict(hit[1])
    state = _folded(epoch, mids)
    _STATES.put(epoch, (mids, dict(state)))
    return state


def _folded(
    epoch: ContextEpoch, messages: Sequence[MidConversationSystemMessage]
) -> dict[str, ComponentState]:
    hashes = dict(epoch.checkpoint)
    state = {
        key: ComponentState(text, hashes[key] if key in hashes else content_hash(text))
        for key, text in epoch.baseline
    }
    for message in messages:
        if message.epoch != epoch.epoch:
            continue
        for change in message.changes:
            if change.update is None or change.hash is None:
                state.pop(change.key, None)
            else:
                state[change.key] = ComponentState(change.baseline or change.update, change.hash)
    return state


def diff(
    state: Mapping[str, ComponentState],
    components: Sequence[ContextComponent],
    samples: Mapping[str, LoadResult],
) -> list[ComponentChange]:
    """The changes to admit: new or changed values, removals; unavailable ones emit nothing."""
    changes: list[ComponentChange] = []
    registered = set()
    for comp in components:
        registered.add(comp.key)
        sample = samples[comp.key]
        match sample:
            case Rendered():
                digest = content_hash(sample.update_text)
                prior = state.get(comp.key)
                if prior is None or prior.hash != digest:
                    changes.append(
                        ComponentChange(comp.key, sample.update_text, sample.baseline, digest)
                    )
            case Absent():
                if comp.key in state:
                    changes.append(ComponentChange(comp.key, None, None, None))
            case Unavailable():
                pass
    for key in sorted(set(state) - registered):
        changes.append(ComponentChange(key, None, None, None))
    return changes


_QUIET: IdentityMemo[
    tuple[tuple[MidConversationSystemMessage, ...], tuple[str, ...], tuple[LoadResult, ...]]
]
_QUIET = IdentityMemo(size=256)
"""Per epoch: update messages, component keys and samples (the very objects) that changed
nothing the last time they were compared."""


def changes_since(
    epoch: ContextEpoch,
    messages: Sequence[MidConversationSystemMessage],
    components: Sequence[ContextComponent],
    samples: Mapping[str, LoadResult],
) -> list[ComponentChange]:
    """``diff(effective_state(epoch, messages), components, samples)``.

    At nearly every boundary nothing changed since the last: the same samples of the same
    components meet the same state. That answer (no change) is kept per epoch, and found again
    by comparing the objects instead of hashing every sample.
    """
    mids = tuple(messages)
    keys = tuple(c.key for c in components)
    sampled = tuple(map(samples.__getitem__, keys))
    hit = _QUIET.get(epoch)
    if (
        hit is not None
        and hit[1] == keys
        and len(hit[0]) == len(mids)
        and all(map(operator.is_, hit[0], mids))
        and all(map(operator.is_, hit[2], sampled))
    ):
        return []
    changes = diff(effective_state(epoch, mids), components, samples)
    if not changes:
        _QUIET.put(epoch, (mids, keys, sampled))
    return changes


def fresh_baseline(
    state: Mapping[str, ComponentState],
    components: Sequence[ContextComponent],
    samples: Mapping[str, LoadResult],
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[str, ...]]:
    """A new epoch's ``(baseline, checkpoint, removed)`` from the samples and prior state."""
    baseline: list[tuple[str, str]] = []
    checkpoint: list[tuple[str, str]] = []
    for comp in components:
        sample = samples[comp.key]
        match sample:
            case Rendered():
                baseline.append((comp.key, sample.baseline))
                checkpoint.append((comp.key, content_hash(sample.update_text)))
            case Unavailable():
                prior = state.get(comp.key)
                if prior is not None:
                    baseline.append((comp.key, prior.baseline))
                    checkpoint.append((comp.key, prior.hash))
            case Absent():
                pass
    kept = {key for key, _ in baseline}
    removed = tuple(sorted(set(state) - kept))
    return tuple(baseline), tuple(checkpoint), removed


def render_update(changes: Sequence[ComponentChange], removal_texts: Mapping[str, str]) -> str:
    """One combined message text for all changes admitted at a boundary."""
    sections = [UPDATE_HEADER]
    for change in changes:
        body = (
            change.update
            if change.update is not None
            else removal_texts.get(change.key, removal_text(change.key))
        )
        sections.append(f"[{change.key}]\n{body}")
    return "\n\n".join(sections)


def message_for(
    changes: Sequence[ComponentChange],
    removal_texts: Mapping[str, str],
    epoch: int,
    timestamp: str,
) -> MidConversationSystemMessage:
    """The durable mid-conversation message for ``changes``."""
    return MidConversationSystemMessage(
        text=render_update(changes, removal_texts),
        changes=tuple(changes),
        epoch=epoch,
        timestamp=timestamp,
    )
