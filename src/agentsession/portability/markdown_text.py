"""Session text placed into a Markdown document as data, never as markup.

A Markdown viewer renders raw HTML, so a message holding ``<img src=x onerror=…>`` or
``</details>`` would come out live. Outside code every ``<`` becomes ``&lt;`` and every ``&`` that
would start a character reference becomes ``&amp;``, so a viewer shows the characters the session
held. Every ``[`` is escaped with a backslash: a link, an image or a link reference definition in
a message is shown as the text it was, so no ``javascript:`` link is clickable and no remote image
is fetched when the document is opened (``<`` escaped already stops autolinks). Markdown
formatting (emphasis, lists, headings) stays what it was. Code stays byte for byte:

- a fenced block opened at the top level (up to three spaces, CommonMark's rule) keeps its body;
  its body lines are kept at least as deep as the opening fence and its closing fence is written
  at the opener's depth, so a viewer ends the block exactly where this scan does, inside a list item
  or not; a block left open is closed at the message's end, so it cannot swallow what follows;
- a fence behind a list or quote marker (``- ```…``) is written with its first tick escaped: it
  shows as text, because this scan does not follow containers;
- a code span on one line is kept, unless an unpaired backtick earlier in the paragraph could pair
  with a later line in the viewer: then that paragraph's rest is escaped throughout.

Where the scan is unsure it escapes: an ``&lt;`` shown inside code is cosmetic, a live tag is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["code_span", "markdown_block", "markdown_line"]

_LINE_END = re.compile(r"\r\n|\r|\n")
# A fence per CommonMark: three or more backticks (an info string without backticks) or tildes.
_FENCE_RUN = r"(?P<fence>`{3,}(?=[^`]*$)|~{3,})"
_TOP_FENCE = re.compile(r"^(?P<indent> {0,3})" + _FENCE_RUN)
# Any other line a viewer could take for a fence: deeper, or behind container markers (quote ">",
# bullets, "1." / "1)"). This scan does not follow containers, so it escapes such a fence.
_INNER_FENCE = re.compile(r"^(?P<prefix>[ \t]*(?:(?:>|[-+*]|[0-9]{1,9}[.)])[ \t]*)*)" + _FENCE_RUN)
_REFERENCE = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]*;)")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def markdown_line(text: str, *, spans: bool = True) -> str:
    """One line of prose with its tags and character references made text.

    With ``spans`` a code span on the line is kept verbatim; without, it is escaped too.
    """
    return _scan_line(text, spans)[0]


def _scan_line(text: str, spans: bool) -> tuple[str, bool]:
    """The escaped line, and whether it left a backtick run unpaired."""
    out: list[str] = []
    unpaired = False
    i, size = 0, len(text)
    while i < size:
        char = text[i]
        if char == "\\" and i + 1 < size and text[i + 1] in _PUNCTUATION:
            # An escaped character is literal in Markdown; an escaped "<" opens no tag.
            out.append(text[i : i + 2])
            i += 2
        elif char == "`":
            run = len(text) - i - len(text[i:].lstrip("`"))
            close = _closing_run(text, i + run, run)
            if close < 0:
                unpaired = True
                out.append(text[i : i + run])
                i += run
            elif spans:
                out.append(text[i : close + run])
                i = close + run
            else:
                out.append(text[i : i + run] + _escape_all(text[i + run : close]) + "`" * run)
                i = close + run
        else:
            out.append(_escape_char(text, i))
            i += 1
    return "".join(out), unpaired


def _escape_char(text: str, i: int) -> str:
    char = text[i]
    if char == "<":
        return "&lt;"
    if char == "[":
        return "\\["
    if char == "&" and _REFERENCE.match(text, i):
        return "&amp;"
    return char


def _escape_all(text: str) -> str:
    return "".join(_escape_char(text, i) for i in range(len(text)))


def _closing_run(text: str, start: int, run: int) -> int:
    """Where a backtick run of exactly ``run`` ticks starts at or after ``start``; -1 if none."""
    for found in re.finditer(r"`+", text[start:]):
        if len(found.group()) == run:
            return start + found.start()
    return -1


@dataclass
class _Fence:
    marker: str  # the opening run: its character and least length close the block
    indent: int  # the opener's depth: body lines stay at least this deep, the closer at it


def _expand_indent(line: str) -> str:
    """``line`` with tabs in its indentation as spaces (tab stops of 4, as CommonMark counts)."""
    stripped = line.lstrip(" \t")
    return line[: len(line) - len(stripped)].expandtabs(4) + stripped


def _closes(line: str, fence: _Fence) -> bool:
    stripped = line.lstrip(" ")
    depth = len(line) - len(stripped)
    run = stripped.rstrip(" \t")
    return (
        depth <= fence.indent + 3
        and len(run) >= len(fence.marker)
        and set(run) == {fence.marker[0]}
    )


def _body_line(line: str, fence: _Fence) -> str:
    stripped = line.lstrip(" ")
    depth = len(line) - len(stripped)
    if depth >= fence.indent or not stripped.strip(" \t"):
        return line
    return " " * fence.indent + stripped


def markdown_block(text: str) -> str:
    """A message's text as Markdown that renders as that text (see the module doc)."""
    out: list[str] = []
    fence: _Fence | None = None
    trusted = True  # no unpaired backtick yet in this paragraph
    for line in _LINE_END.split(text):
        if fence is not None:
            line = _expand_indent(line)
            if _closes(line, fence):
                out.append(" " * fence.indent + fence.marker)
                fence = None
            else:
                out.append(_body_line(line, fence))
            continue
        top = _TOP_FENCE.match(line)
        if top:
            fence = _Fence(top.group("fence"), len(top.group("indent")))
            out.append(line)
            trusted = True
            continue
        if not line.strip(" \t"):
            trusted = True
            out.append(line)
            continue
        inner = _INNER_FENCE.match(line)
        prefix = ""
        if inner:
            # the fence's first tick escaped: the line is text, and is scanned as written
            cut = len(inner.group("prefix"))
            prefix, line = line[:cut], "\\" + line[cut:]
        escaped, unpaired = _scan_line(line, trusted)
        out.append(prefix + escaped)
        trusted = trusted and not unpaired
    if fence is not None:
        out.append(" " * fence.indent + fence.marker)
    return "\n".join(out)


def code_span(text: str) -> str:
    """``text`` (one line) as an inline code span whose delimiters it cannot close."""
    flat = " ".join(_LINE_END.split(text))
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat.strip() else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"
