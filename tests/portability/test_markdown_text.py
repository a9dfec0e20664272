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


def _everywhere(text: str) -> str:
    """The export of a session holding ``text`` in its title and in every kind of message."""
    call = ToolCall("read<b>", {"path": "<x>"}, id="c1")
    entries: list[LogEntry] = [
        UserEntry(text),
        AssistantEntry(text, (call,)),
        ToolResultEntry("c1", "read<b>", text),
        Summary(text, 3),
    ]
    return render_markdown(SessionInfo("s1", INFO.created_at, INFO.updated_at, text), entries)


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


# markdown-it drops javascript:, vbscript: and data: targets itself; a viewer need not, so the
# links are read by a parser that keeps every target.
_NAIVE = markdown_it.MarkdownIt("commonmark")
_NAIVE.validateLink = lambda url: True


def live_links(document: str) -> list[str]:
    """Every image source and every link target a CommonMark viewer makes of ``document``."""
    found: list[str] = []
    for token in _tokens(_NAIVE.parse(document)):
        if token.type == "image":
            found.append(f"image {token.attrGet('src')}")
        elif token.type == "link_open":
            found.append(f"link {token.attrGet('href')}")
    return found


LINKS = [
    "[click](javascript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "[x](vbscript:msgbox(1))",
    "![pixel](https://tracker.example/p.png?session=1)",
    "[a][ref]\n\n[ref]: javascript:alert(1)",
    "[![img](http://x/i.png)](javascript:alert(1))",
    "<javascript:alert(1)>",
    "see <https://example.com>",
    "\\\\[x](javascript:alert(1))",
]


@pytest.mark.parametrize("text", [*HOSTILE, *LINKS])
def test_a_tag_link_or_image_in_any_message_is_shown_as_text(text: str) -> None:
    document = _everywhere(text)
    assert live_html(document) == []
    assert live_links(document) == []


def test_a_link_reads_as_the_characters_the_message_held() -> None:
    rendered = _MD.render(markdown_block("see [docs](https://example.com/a) and ![i](x.png)"))
    assert rendered == "<p>see [docs](https://example.com/a) and ![i](x.png)</p>\n"


def test_a_link_inside_code_stays_code() -> None:
    document = markdown_block("`[a](javascript:x)`\n\n```\n![i](x.png)\n```")
    assert code(document) == ["[a](javascript:x)", "![i](x.png)\n"]


_LINK_PIECES = st.sampled_from(
    ["[", "]", "(", ")", "!", "<", ">", ":", "javascript:alert(1)", "data:x", "vbscript:x",
     "https://e.com/i.png", "mailto:a@b", "`", "\\", " ", "\n", "\t", "&#91;", "a", "*", "-", '"']
)  # fmt: skip


def _allowed(found: str) -> bool:
    kind, _, target = found.partition(" ")
    return kind == "link" and target.startswith(("http://", "https://", "mailto:"))


_TARGETS = st.sampled_from(
    ["javascript:alert(1)", "data:text/html,x", "vbscript:x", "https://e.com/i.png", "x.png", ""]
)
# Whole link forms (inline, image, reference use and definition, autolink) among loose pieces.
_LINK_FORMS = st.one_of(
    st.builds("{}[{}]({})".format, st.sampled_from(["", "!", "\\"]), _LINK_PIECES, _TARGETS),
    st.builds("[{}]: {}\n".format, _LINK_PIECES, _TARGETS),
    st.builds("[{}][{}]".format, _LINK_PIECES, _LINK_PIECES),
    st.builds("<{}>".format, _TARGETS),
)


@given(st.lists(st.one_of(_LINK_PIECES, _LINK_FORMS), max_size=30).map("".join))
def test_no_message_text_ever_renders_an_image_or_an_unsafe_link(text: str) -> None:
    document = render_markdown(INFO, [UserEntry(text), AssistantEntry(text)])
    assert all(_allowed(found) for found in live_links(document))
    assert live_html(document) == []
