"""The draft turns what an importer met into a log every wire format accepts."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.log import (
    AssistantEntry,
    ContextEpoch,
    Record,
    Summary,
    ToolResultEntry,
    UserEntry,
)
from agentsession.portability.draft import Draft
from agentsession.projection import project
from agentsession.providers.validate import validate
from agentsession.request import ImagePart, Request, TextPart, ToolCall

WIRE_FORMATS = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")


def test_text_between_a_call_and_its_result_waits_for_the_result() -> None:
    draft = Draft("x", result_limit=None)
    draft.user("q")
    draft.assistant("", [ToolCall("a", {}, id="1"), ToolCall("b", {}, id="2")])
    draft.result("1", "", "r1")
    draft.user("interjection")
    draft.result("2", "", "r2")
    kinds = [(type(e).__name__, getattr(e, "content", "")) for e in draft.entries()]
    assert kinds == [
        ("UserEntry", "q"),
        ("AssistantEntry", ""),
        ("ToolResultEntry", "r1"),
        ("ToolResultEntry", "r2"),
        ("UserEntry", "interjection"),
    ]


def test_orphan_results_and_repeated_ids_become_notes_and_fresh_ids() -> None:
    draft = Draft("x", result_limit=10)
    draft.result("ghost", "t", "no call made this")
    draft.assistant("a", [ToolCall("t", {}, id="same")])
    draft.result("same", "", "first result long enough to be cut")
    draft.assistant("b", [ToolCall("t", {}, id="same")])
    draft.result("same", "", "second")
    entries = draft.entries()
    report = draft.report("id")
    assert (report.tool_calls, report.tool_results) == (2, 2)
    calls = [c.id for e in entries if isinstance(e, AssistantEntry) for c in e.tool_calls]
    assert calls[0] == "same" and calls[1] != "same"
    results = [e for e in entries if isinstance(e, ToolResultEntry)]
    assert [r.call_id for r in results] == calls
    assert len(str(results[0].content)) <= 10  # bounded like tool output
    # the orphan result is kept as visible text, and it opens the log as a user turn
    first = entries[0]
    assert isinstance(first, UserEntry)
    assert "a result for a call it does not show" in str(first.content)
    assert "no call made this" in str(first.content)
    assert report.notes == 1


def test_summary_opens_an_epoch_that_hands_over_to_the_next_model() -> None:
    draft = Draft("x", result_limit=None)
    draft.user("old")
    draft.assistant("old answer")
    draft.summary("what happened")
    draft.user("new")
    entries = draft.entries()
    summary, epoch = entries[2], entries[3]
    assert isinstance(summary, Summary) and isinstance(epoch, ContextEpoch)
    assert epoch.summary_seq == 2 and epoch.history_start == 4
    assert epoch.reason == "compaction" and epoch.model == "imported:x"


def test_images_are_kept_as_parts() -> None:
    draft = Draft("x", result_limit=None)
    draft.user((TextPart("look"), ImagePart("image/png", data="aGk=")))
    assert draft.report("id").images == 1
    entry = draft.entries()[0]
    assert isinstance(entry, UserEntry) and isinstance(entry.content, tuple)


_EVENT = st.one_of(
    st.tuples(st.just("user"), st.text(max_size=5)),
    st.tuples(st.just("assistant"), st.lists(st.sampled_from("abc"), max_size=3)),
    st.tuples(st.just("result"), st.sampled_from("abcz")),
    st.tuples(st.just("note"), st.text(max_size=5)),
    st.tuples(st.just("summary"), st.text(min_size=1, max_size=5)),
)


def _request(entries: list[Any]) -> Request:
    records = [Record(seq, entry) for seq, entry in enumerate(entries)]
    epochs = [e for e in entries if isinstance(e, ContextEpoch)]
    view = project(records, epochs[-1] if epochs else None)
    messages = [v.message for v in view]
    return Request(system=(("core.agent", "s"),), messages=(*messages, ags.UserMessage("next")))


@given(st.lists(_EVENT, max_size=12))
def test_any_sequence_of_source_events_lowers_in_every_format(events: list[Any]) -> None:
    draft = Draft("x", result_limit=None)
    for kind, value in events:
        if kind == "user":
            draft.user(value)
        elif kind == "assistant":
            draft.assistant("t", [ToolCall("tool", {}, id=i) for i in value])
        elif kind == "result":
            draft.result(value, "", "r")
        elif kind == "note":
            draft.note(value)
        else:
            draft.summary(value)
    request = _request(draft.entries())
    for wire in WIRE_FORMATS:
        validate(ags.lower(request, wire), wire)
