"""The transcript window: cap, turn starts, complete groups, elision, monotonic advance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.errors import UsageError
from agentsession.request import (
    AssistantMessage,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentsession.window import (
    Window,
    _select,
    elision_note,
    message_count,
    select_window,
    with_elision_note,
)

# --- building histories -------------------------------------------------------------------


def user(text: str = "u") -> UserMessage:
    return UserMessage(text)


def text(reply: str = "a") -> AssistantMessage:
    return AssistantMessage(content=reply)


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=tuple(ToolCall("t", {}, id=i) for i in ids))


def result(call_id: str) -> ToolResultMessage:
    return ToolResultMessage(call_id=call_id, name="t", content="r")


def system(note: str = "s") -> SystemMessage:
    return SystemMessage(note)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Chronological histories: tool runs, parallel calls, system messages anywhere.

    Well formed the way the session builds them: each call's result follows its call before
    the next assistant message. The last turn may be in progress (ending on results).
    """
    counter = iter(range(1_000_000))
    out: list[Message] = []

    def maybe_system() -> None:
        if draw(st.integers(0, 5)) == 0:
            out.append(system())

    if draw(st.booleans()) and draw(st.integers(0, 3)) == 0:
        out.append(text("summary"))  # a history that opens without a user message
        maybe_system()
    for _ in range(draw(st.integers(0, 8))):
        out.append(user())
        maybe_system()
        for _ in range(draw(st.integers(0, 6))):
            width = draw(st.sampled_from([1, 1, 1, 2, 3, 5]))
            ids = [f"c{next(counter)}" for _ in range(width)]
            out.append(calls(*ids))
            for call_id in ids:
                maybe_system()
                out.append(result(call_id))
            maybe_system()
        if draw(st.booleans()):
            out.append(text())
            maybe_system()
    return out


caps = st.integers(1, 30)
steps = st.integers(1, 4)


def counted_suffix(messages: Sequence[Message], i: int) -> int:
    return message_count(messages[i:])


def turn_starts(messages: Sequence[Message]) -> list[int]:
    starts = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    if messages and (not starts or starts[0] != 0):
        starts.insert(0, 0)
    return starts


def assert_well_formed(messages: Sequence[Message], w: Window, cap: int) -> None:
    n = len(messages)
    kept = [messages[i] for i in w.indices]
    # never empty, indices strictly increasing and in range
    assert kept
    assert list(w.indices) == sorted(set(w.indices))
    assert all(0 <= i < n for i in w.indices)
    # the window starts at a turn start and runs to the newest message
    assert w.start in turn_starts(messages)
    assert w.indices[-1] == n - 1
    assert w.count == message_count(kept)
    # no orphan call or result
    kept_calls = {c.id for m in kept if isinstance(m, AssistantMessage) for c in m.tool_calls}
    kept_results = {m.call_id for m in kept if isinstance(m, ToolResultMessage)}
    all_results = {m.call_id for m in messages if isinstance(m, ToolResultMessage)}
    assert kept_results <= kept_calls
    assert kept_calls & all_results == kept_results
    if w.indices == tuple(range(w.start, n)) and w.count <= cap:
        # the plain case: everything from the start on, within the cap
        assert (w.elided, w.omitted_system, w.note_index) == (0, (), None)
        return
    # elision happens only in the newest turn
    assert w.start == turn_starts(messages)[-1]
    anchored = isinstance(messages[w.start], UserMessage)
    if anchored:
        assert w.indices[0] == w.start
        assert w.note_index == (w.start if w.elided else None)
        tail = w.indices[1:]
        body = w.start + 1
    else:
        assert w.note_index is None
        tail = w.indices
        body = w.start
    # the kept tail is contiguous up to the newest message and starts at a group boundary
    assert tail == tuple(range(tail[0], n))
    assert isinstance(messages[tail[0]], AssistantMessage) or tail[0] == body
    dropped = range(body, tail[0])
    assert w.elided == message_count([messages[i] for i in dropped])
    assert w.omitted_system == tuple(i for i in dropped if isinstance(messages[i], SystemMessage))
    if w.count > cap:
        # only the documented minimum: the anchor plus exactly the newest group
        assistants = [i for i in tail if isinstance(messages[i], AssistantMessage)]
        assert len(assistants) == 1
        assert assistants[0] == tail[0]


# --- properties ---------------------------------------------------------------------------


@settings(max_examples=300)
@given(histories(), caps, steps, st.integers(0, 120))
def test_window_invariants(messages: list[Message], cap: int, step: int, start: int) -> None:
    if not messages:
        w = select_window(messages, cap, step=step, start=start)
        assert w.indices == () and w.count == 0
        return
    w = select_window(messages, cap, step=step, start=start)
    assert_well_formed(messages, w, cap)
    # deterministic
    assert select_window(messages, cap, step=step, start=start) == w
    assert w.advanced == (w.start != start)
    # never backward from an in-range start
    if start < len(messages):
        assert w.start >= start or w.start == turn_starts(messages)[-1]
        if start in turn_starts(messages):
            assert w.start >= start


@settings(max_examples=300)
@given(histories(), caps, steps)
def test_advance_moves_by_whole_steps_and_no_further(
    messages: list[Message], cap: int, step: int
) -> None:
    starts = turn_starts(messages)
    for k, s in enumerate(starts):
        w = select_window(messages, cap, step=step, start=s)
        j = starts.index(w.start)
        if counted_suffix(messages, s) <= cap:
            assert w.start == s  # a start that fits stays
            continue
        newest = len(starts) - 1
        if k == newest:
            assert j == k  # already at the newest turn: elision, not a move
            continue
        # moved by a multiple of step, or stopped at the newest turn
        assert (j - k) % step == 0 or j == newest
        assert j > k
        # and the previous candidate on the way did not fit
        previous = j - step if (j - k) % step == 0 else k + ((newest - k) // step) * step
        assert counted_suffix(messages, starts[previous]) > cap
        assert counted_suffix(messages, w.start) <= cap or j == newest


@settings(max_examples=150)
@given(histories(), caps, steps)
def test_start_is_monotonic_for_a_growing_history(
    messages: list[Message], cap: int, step: int
) -> None:
    fed_back = 0
    fresh_prev = 0
    for end in range(1, len(messages) + 1):
        prefix = messages[:end]
        w = select_window(prefix, cap, step=step, start=fed_back)
        assert w.start >= fed_back
        assert_well_formed(prefix, w, cap)
        fed_back = w.start
        fresh = select_window(prefix, cap, step=step).start
        assert fresh >= fresh_prev
        fresh_prev = fresh


@settings(max_examples=200)
@given(histories(), caps)
def test_step_one_keeps_the_most_history_that_fits(messages: list[Message], cap: int) -> None:
    if not messages:
        return
    w = select_window(messages, cap)
    starts = turn_starts(messages)
    fitting = [s for s in starts if counted_suffix(messages, s) <= cap]
    if fitting:
        assert w.start == fitting[0]
        assert w.elided == 0
    else:
        assert w.start == starts[-1]


@settings(max_examples=300)
@given(
    histories(),
    caps,
    steps,
    st.one_of(st.none(), st.integers(1, 20)),
    st.booleans(),
    st.integers(1, 4),
)
def test_the_short_cut_for_a_history_that_fits_gives_the_full_selection(
    messages: list[Message], cap: int, step: int, keep: int | None, cold: bool, chunk: int
) -> None:
    # ``select_window`` answers a window from the first message without turn starts or suffix
    # counts when the history fits; the full selection must give the very same window.
    if not messages:
        return
    fast = select_window(messages, cap, step=step, chunk=chunk, keep=keep, cold=cold)
    full = _select(messages, cap, step, 0, chunk, keep, cold)
    assert fast == full


# --- examples -----------------------------------------------------------------------------


def test_call_and_result_count_as_two_and_system_messages_do_not_count() -> None:
    messages: list[Message] = [user(), system(), calls("a"), result("a"), system(), text()]
    assert message_count(messages) == 4
    w = select_window(messages, 4)
    assert w == Window(start=0, indices=(0, 1, 2, 3, 4, 5), count=4)


def test_parallel_calls_count_one_assistant_message_plus_each_result() -> None:
    messages: list[Message] = [user(), calls("a", "b", "c"), result("a"), result("b"), result("c")]
    assert message_count(messages) == 5


def test_oldest_turn_leaves_first_and_window_starts_at_a_user_message() -> None:
    messages: list[Message] = [
        user("1"),
        calls("a"),
        result("a"),
        text(),
        user("2"),
        text(),
        user("3"),
        calls("b"),
        result("b"),
    ]
    w = select_window(messages, 5)
    assert w.start == 4
    assert w.indices == (4, 5, 6, 7, 8)
    assert w.advanced
    assert w.count == 5


def test_step_moves_several_turns_at_once_but_not_past_the_newest() -> None:
    messages: list[Message] = []
    for _ in range(6):
        messages += [user(), text()]
    # 12 counted; cap 11 forces an advance
    assert select_window(messages, 11).start == 2
    assert select_window(messages, 11, step=3).start == 6
    assert select_window(messages, 11, step=100).start == 10
    # the window then stays put while the history still fits from there
    grown = [*messages, user(), text()]
    assert select_window(grown, 11, step=3, start=6).start == 6
    assert select_window(grown, 11, step=3, start=6).advanced is False


def test_newest_turn_too_long_keeps_user_message_and_newest_groups() -> None:
    messages: list[Message] = [
        user("old"),
        text(),
        user("task"),
        calls("a"),
        result("a"),
        system("changed"),
        calls("b", "c"),
        result("b"),
        result("c"),
        calls("d"),
        result("d"),
    ]
    w = select_window(messages, 6)
    assert w.start == 2
    # user + [calls b,c + 2 results] + [calls d + result] = 1 + 3 + 2
    assert w.indices == (2, 6, 7, 8, 9, 10)
    assert w.count == 6
    assert w.elided == 2
    assert w.omitted_system == (5,)
    assert w.note_index == 2
    assert elision_note(w.elided) == "[2 earlier messages of this turn omitted]"


def test_a_group_is_never_split_even_when_it_alone_exceeds_the_cap() -> None:
    ids = [f"c{i}" for i in range(5)]
    messages: list[Message] = [user(), calls("x"), result("x"), calls(*ids)]
    messages += [result(i) for i in ids]
    w = select_window(messages, 3)
    assert w.indices == (0, 3, 4, 5, 6, 7, 8)
    assert w.count == 7  # the documented minimum: user message + newest group
    assert w.elided == 2


def test_trailing_assistant_text_is_a_group_of_its_own() -> None:
    messages: list[Message] = [user(), calls("a"), result("a"), calls("b"), result("b"), text()]
    w = select_window(messages, 4)
    assert w.indices == (0, 3, 4, 5)
    assert w.elided == 2


def test_history_opening_without_a_user_message() -> None:
    messages: list[Message] = [text("summary"), user(), text()]
    assert select_window(messages, 3).indices == (0, 1, 2)
    w = select_window(messages, 2)
    assert (w.start, w.indices) == (1, (1, 2))
    # a single anchorless turn that is too long keeps its newest groups, without a note
    only: list[Message] = [text("summary"), calls("a"), result("a"), calls("b"), result("b")]
    w = select_window(only, 2)
    assert (w.start, w.indices, w.elided, w.note_index) == (0, (3, 4), 3, None)


def test_start_inside_a_turn_or_out_of_range() -> None:
    messages: list[Message] = [user(), text(), user(), text(), user(), text()]
    assert select_window(messages, 10, start=1).start == 2
    assert select_window(messages, 10, start=5).start == 4
    w = select_window(messages, 10, start=99)
    assert (w.start, w.advanced) == (0, True)


def test_only_system_messages_and_empty_history() -> None:
    assert select_window([], 5) == Window(start=0, indices=(), count=0)
    w = select_window([system()], 1)
    assert (w.indices, w.count) == ((0,), 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"cap": 0}, "cap"),
        ({"cap": True}, "cap"),
        ({"cap": 5, "step": 0}, "step"),
        ({"cap": 5, "start": -1}, "start"),
    ],
)
def test_bad_arguments_are_usage_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        select_window([user()], **kwargs)


def test_elision_note_helpers() -> None:
    assert elision_note(1) == "[1 earlier message of this turn omitted]"
    assert elision_note(7) == "[7 earlier messages of this turn omitted]"
    plain = user("do it")
    assert with_elision_note(plain, 0) is plain
    assert with_elision_note(plain, 3).content == (
        "do it\n\n[3 earlier messages of this turn omitted]"
    )
    image = ImagePart(media_type="image/png", data="AAAA")
    blocks = UserMessage((TextPart("look"), image))
    noted = with_elision_note(blocks, 2)
    assert noted.content == (
        TextPart("look"),
        image,
        TextPart("[2 earlier messages of this turn omitted]"),
    )
    assert blocks.content == (TextPart("look"), image)  # the original is untouched
