"""The Markdown export shows a session's text as text: a tag in a message is never live markup in a
Markdown viewer, while code blocks and spans stay as they were.

A CommonMark parser (markdown-it, which the command line's display already brings) reads the
exported document the way a viewer would; a tag comes out live exactly when it parses as HTML.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentsession.log import AssistantEntry, LogEntry, Summary, ToolResultEntry, UserEntry
from agentsession.portability.markdown_text import code_span, markdown_block
from agentsession.portability.readable import render_markdown
from agentsession.request import ToolCall
from agentsession.store.base import SessionInfo

markdown_it = pytest.importorskip("markdown_it")
from markdown_it.token import Token  # noqa: E402

_MD = markdown_it.MarkdownIt("commonmark")
INFO = SessionInfo("s1", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00+00:00", "A title")


def _tokens(tokens: Iterable[Token]) -> Iterable[Token]:
    for token in tokens:
        yield token
        yield from _tokens(token.children or ())


def live_html(document: str) -> list[str]:
    """The pieces of ``document`` a CommonMark viewer renders as raw HTML."""
    kinds = ("html_block", "html_inline")
    return [t.content for t in _tokens(_MD.parse(document)) if t.type in kinds]


def code(document: str) -> list[str]:
    return [t.content for t in _tokens(_MD.parse(document)) if t.type in ("fence", "code_inline")]


HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "done.</details><script>alert(1)</script>",
    "<!-- hidden -->",
    "a `b\nc` <img src=x onerror=alert(1)>`",
    "- a\n  ```\n<img src=x onerror=alert(1)>\n  ```",
    "1. a\n   ```\n     ```\n   <img src=x onerror=alert(1)>",
    "- ```\n  x\n  ```\n  <img src=x onerror=alert(1)>",
    " ```\n```\n<img src=x onerror=alert(1)>",
    "\\\\<b>bold</b>",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_tag_in_any_message_is_shown_as_text(text: str) -> None:
    call = ToolCall("read<b>", {"path": "<x>"}, id="c1")
    entries: list[LogEntry] = [
        UserEntry(text),
        AssistantEntry(text, (call,)),
        ToolResultEntry("c1", "read<b>", text),
        Summary(text, 3),
    ]
    info = SessionInfo("s1", INFO.created_at, INFO.updated_at, text)
    document = render_markdown(info, entries)
    assert live_html(document) == []


def test_the_text_reads_as_it_was_and_code_stays_code() -> None:
    text = (
        "Use `<div>` here, & keep &amp; as typed: <img src=x>\n\n"
        "```html\n<p>a</p>\n```\n\nand **bold** stays bold."
    )
    document = render_markdown(INFO, [AssistantEntry(text)])
    rendered = _MD.render(document)
    assert live_html(document) == []
    assert "<img" not in rendered and "&lt;img src=x&gt;" in rendered
    assert "&amp;amp; as typed" in rendered  # the characters the model wrote, not an entity
    assert "<strong>bold</strong>" in rendered
    assert code(document) == ["s1", "<div>", "<p>a</p>\n"]


def test_an_unclosed_fence_does_not_swallow_the_next_message() -> None:
    entries: list[LogEntry] = [
        AssistantEntry("look:\n```python\nprint(1)"),
        UserEntry("```\n<img src=x onerror=alert(1)>"),
    ]
    document = render_markdown(INFO, entries)
    assert live_html(document) == []
    headings = [t.content for t in _tokens(_MD.parse(document)) if t.type == "inline"]
    assert any(h.startswith("User") for h in headings)
    assert code(document) == ["s1", "print(1)\n", "<img src=x onerror=alert(1)>\n"]


def test_a_tool_name_cannot_leave_its_code_span() -> None:
    span = code_span("a`` <img src=x>")
    assert live_html(span) == [] and code(span) == ["a`` <img src=x>"]


# Characters that carry Markdown structure: fences, containers, spans, escapes, tags, entities.
_PIECES = st.sampled_from(
    ["<", "<img src=x>", "</details>", ">", "`", "```", "~~~", "-", "1.", " ", "   ", "\t", "\n",
     "\\", "&", "&lt;", "a", "*", "#", "<!--", "-->"]
)  # fmt: skip


@given(st.lists(_PIECES, max_size=40).map("".join), st.lists(_PIECES, max_size=40).map("".join))
def test_no_text_ever_parses_as_html(first: str, second: str) -> None:
    document = render_markdown(INFO, [UserEntry(first), AssistantEntry(second), UserEntry("<i>")])
    assert live_html(document) == []


@given(st.text(st.sampled_from("<>`~- \n\tab&\\")))
def test_a_message_on_its_own_never_parses_as_html(text: str) -> None:
    assert live_html(markdown_block(text)) == []
