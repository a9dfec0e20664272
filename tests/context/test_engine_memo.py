"""The effective state and the boundary's changes, kept per epoch, equal those computed afresh.

Every boundary asks for the epoch's effective state and compares the samples with it; both are
kept per epoch and found again by comparing objects. Over sequences of boundaries that switch
epochs, add, drop and reorder update messages, components and samples (equal values that are
other objects included), each answer must be the one computed with nothing kept.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.context import ABSENT, UNAVAILABLE, ContextComponent, LoadResult, Rendered
from agentsession.context.component import content_hash
from agentsession.context.engine import changes_since, diff, effective_state
from agentsession.log import ComponentChange, ContextEpoch, MidConversationSystemMessage

KEYS = ("plugin.p.a", "plugin.p.b", "plugin.p.c")
EPOCHS = [
    ContextEpoch(0, ((KEYS[0], "A"), (KEYS[1], "B")), ((KEYS[0], content_hash("A")),), 0),
    ContextEpoch(1, ((KEYS[1], "B"),), (), 0),
]


def _change(key: str, text: str | None) -> ComponentChange:
    return ComponentChange(key, text, text, content_hash(text) if text is not None else None)


MIDS = [
    MidConversationSystemMessage("u", (_change(KEYS[0], "A2"),), epoch=0),
    MidConversationSystemMessage("u", (_change(KEYS[1], None),), epoch=0),
    MidConversationSystemMessage("u", (_change(KEYS[2], "C"),), epoch=1),
    MidConversationSystemMessage("u", (_change(KEYS[0], "A"), _change(KEYS[2], "C")), epoch=1),
]
COMPONENTS = {key: ContextComponent(key, lambda: "x") for key in KEYS}
SAMPLES: list[LoadResult] = [
    Rendered("A"),
    Rendered("A2"),
    Rendered("B"),
    Rendered("C"),
    UNAVAILABLE,
    ABSENT,
]

boundary = st.tuples(
    st.integers(0, len(EPOCHS) - 1),
    st.lists(st.integers(0, len(MIDS) - 1), max_size=4),
    st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
    st.lists(st.integers(0, len(SAMPLES) - 1), min_size=3, max_size=3),
    st.booleans(),  # samples of equal value that are other objects
)


@settings(max_examples=300, deadline=None)
@given(st.lists(boundary, min_size=1, max_size=10))
def test_kept_states_and_changes_are_the_ones_computed_afresh(
    boundaries: list[tuple[int, list[int], list[str], list[int], bool]],
) -> None:
    for number, picked, keys, chosen, copied in boundaries:
        epoch = EPOCHS[number]
        mids = [MIDS[i] for i in picked]
        components = [COMPONENTS[key] for key in keys]
        samples = {key: SAMPLES[i] for key, i in zip(KEYS, chosen, strict=True)}
        if copied:
            samples = {k: replace(v) if isinstance(v, Rendered) else v for k, v in samples.items()}
        fresh = replace(epoch)  # another object: nothing kept for it
        state = effective_state(epoch, mids)
        assert state == effective_state(fresh, mids)
        state.clear()  # the caller's dict: the kept state must not change with it
        assert effective_state(epoch, mids) == effective_state(replace(epoch), mids)
        expected = diff(effective_state(replace(epoch), mids), components, samples)
        assert changes_since(epoch, mids, components, samples) == expected
        assert changes_since(epoch, mids, components, samples) == expected
