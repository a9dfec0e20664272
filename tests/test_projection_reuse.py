"""Projecting the records of an epoch again reuses the last view and gives the same view.

``project`` keeps, per epoch, the view of the records it projected last; the next call reuses
the part its records share with them (the same objects, in order). These properties hold it to
a projection made afresh (new record objects, an equal but new epoch: nothing to reuse), over
logs of every kind, the way admissions call it: growing logs, uncommitted entries at the end,
logs that diverge, and the kinds that change other records' messages.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.boundary import _request, _window, build_request, window_of
from agentsession.config import Config
from agentsession.log import (
    AssistantEntry,
    ContextEpoch,
    LogEntry,
    MidConversationSystemMessage,
    Omitted,
    Record,
    RuntimeContextSnapshot,
    Summary,
    UserEntry,
)
from agentsession.projection import Projection, ViewMessage, project, projection_of
from agentsession.request import SystemMessage, ToolCall, ToolSpec

from .store.strategies import ENTRY_STRATEGIES

# Mostly what a conversation holds, with a little of everything else.
_common = st.one_of(
    st.builds(UserEntry, content=st.sampled_from(["hi", "next", ""])),
    st.builds(
        AssistantEntry,
        content=st.sampled_from(["ok", ""]),
        tool_calls=st.lists(st.builds(ToolCall, name=st.just("t"), id=st.text(max_size=3)))
        .map(tuple)
        .filter(lambda calls: len(calls) < 3),
    ),
    st.builds(
        MidConversationSystemMessage,
        text=st.just("changed"),
        changes=st.just(()),
        epoch=st.integers(0, 2),
    ),
    st.builds(Summary, text=st.just("so far"), covers_until=st.integers(0, 5)),
)
_entry: st.SearchStrategy[LogEntry] = st.one_of(
    _common, _common, _common, *ENTRY_STRATEGIES.values()
)
_epoch = st.builds(
    ContextEpoch,
    epoch=st.integers(0, 2),
    baseline=st.just((("core.date", "today"),)),
    checkpoint=st.just(()),
    history_start=st.integers(0, 12),
    summary_seq=st.none() | st.integers(0, 12),
)


def _records(entries: list[LogEntry], first: int = 0) -> list[Record]:
    return [Record(first + i, entry) for i, entry in enumerate(entries)]


def _afresh(records: list[Record], epoch: ContextEpoch) -> list[ViewMessage]:
    """The view projected record by record, with nothing to reuse.

    New record objects under a new, equal epoch, and an omission of a seq no record has: it
    changes no message, and a log holding one is always projected whole.
    """
    copies = [Record(r.seq, r.entry) for r in records]
    marker = Record(max((r.seq for r in records), default=0) + 1, Omitted(-1, 0))
    return project([*copies, marker], replace(epoch))


@settings(max_examples=300, deadline=None)
@given(
    epoch=_epoch,
    log=st.lists(_entry, max_size=16),
    steps=st.lists(
        st.tuples(st.integers(0, 16), st.lists(_entry, max_size=3), st.booleans()), max_size=6
    ),
)
def test_every_projection_equals_one_made_afresh(
    epoch: ContextEpoch,
    log: list[LogEntry],
    steps: list[tuple[int, list[LogEntry], bool]],
) -> None:
    """Each step keeps some committed records, adds new ones and may add uncommitted ones."""
    committed = _records(log)
    for keep, added, with_pending in steps:
        committed = committed[:keep] + _records(added, first=min(keep, len(committed)))
        records = list(committed)
        if with_pending:
            records += _records(added[:1], first=len(committed))
        assert project(records, epoch) == _afresh(records, epoch)
        assert projection_of(records, epoch) == _walked(_afresh(records, epoch))


def _walked(view: list[ViewMessage]) -> Projection:
    """What a `Projection` holds, found by walking ``view``."""
    messages = [v.message for v in view]
    systems = sum(isinstance(m, SystemMessage) for m in messages)
    opaque = sum(bool(getattr(m, "provider_data", None)) for m in messages)
    return Projection(view, messages, [v.seqs for v in view], systems, opaque)


_TOOLS = (ToolSpec("t", "a tool", {"type": "object"}),)


@settings(max_examples=300, deadline=None)
@given(
    epoch=_epoch,
    log=st.lists(_entry, max_size=24),
    cap=st.integers(1, 12),
    step=st.none() | st.integers(1, 3),
    cold=st.booleans(),
    drop_system=st.booleans(),
    provider=st.sampled_from(["", "openai", "anthropic"]),
)
def test_the_admission_s_window_and_request_are_those_of_the_view(
    epoch: ContextEpoch,
    log: list[LogEntry],
    cap: int,
    step: int | None,
    cold: bool,
    drop_system: bool,
    provider: str,
) -> None:
    """The boundary reads the window and the request from the projection's kept lists and
    counts; they are the window and the request of the view, chosen and built in full."""
    records = _records(log)
    config = Config(max_transcript_messages=cap, window_step=step)
    for end in range(len(records) + 1):
        projection = projection_of(records[:end], epoch)
        window = _window(projection, config, cold)
        assert window == window_of(projection.view, config, cold=cold)
        request = _request(projection, window, epoch.baseline, _TOOLS, provider, drop_system)
        view = projection.view
        full = build_request(
            view, window, epoch.baseline, _TOOLS, provider, drop_system=drop_system
        )
        assert request == full


@settings(max_examples=100, deadline=None)
@given(epoch=_epoch, log=st.lists(_common, min_size=1, max_size=24))
def test_a_growing_log_projects_as_a_whole(epoch: ContextEpoch, log: list[LogEntry]) -> None:
    """Record by record, the way a session's admissions see its log grow."""
    records = _records(log)
    for end in range(1, len(records) + 1):
        assert project(records[:end], epoch) == _afresh(records[:end], epoch)


def test_a_snapshot_after_a_reused_view_is_prepended_to_its_user_message() -> None:
    """A kind that reaches back into an earlier message is never answered from the last view."""
    epoch = ContextEpoch(0, (), (), 0)
    records = _records([UserEntry("question")])
    assert [v.message.content for v in project(records, epoch)] == ["question"]
    grown = [*records, Record(1, RuntimeContextSnapshot(0, "<skill>", placement="user"))]
    assert project(grown, epoch) == _afresh(grown, epoch)
    assert str(project(grown, epoch)[0].message.content).startswith("<skill>")


def test_a_new_epoch_s_request_leaves_the_update_messages_out() -> None:
    """A whole window whose request drops system messages (a new epoch folds them) is built
    in full, not sent from the projection's lists."""
    epoch = ContextEpoch(0, (("core.date", "today"),), (), 0)
    update = MidConversationSystemMessage(text="changed", changes=(), epoch=0)
    projection = projection_of(_records([UserEntry("hi"), update]), epoch)
    assert projection.systems == 1
    window = _window(projection, Config(), False)
    request = _request(projection, window, epoch.baseline, _TOOLS, "", True)
    assert [m.role for m in request.messages] == ["user"]
    view = projection.view
    assert request == build_request(view, window, epoch.baseline, _TOOLS, "", drop_system=True)
