"""A session's transcript as a document people read: Markdown, or one self-contained HTML page.

Both hold the user transcript in order (user and assistant turns, tool calls with their
arguments, tool results) and the compaction summaries where they were made; runtime metadata
(epochs, context updates, dispatch records) is left to the session file and the report. Tool
calls and results are fenced blocks (the fence longer than any backtick run inside); a result
longer than ``RESULT_LINES`` lines or ``RESULT_CHARS`` characters is trimmed, the trim saying
how much was left out. Nothing from the session is markup: HTML is escaped; in Markdown, text that
looks like a tag is shown as text (``markdown_text``) while its Markdown formatting and code stay.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from .._files import write_private
from ..errors import StoreError
from ..hygiene import visible_line
from ..log import AssistantEntry, LogEntry, Summary, ToolResultEntry, UserEntry
from ..request import ContentPart, ImagePart, TextPart, ToolCall
from ..store.base import SessionInfo, Store
from .markdown_text import code_span, markdown_block, markdown_line

__all__ = [
    "READABLE",
    "RESULT_CHARS",
    "RESULT_LINES",
    "export_readable",
    "render_html",
    "render_markdown",
    "trimmed",
]

#: How much of a tool result a readable export keeps.
RESULT_LINES = 40
RESULT_CHARS = 4_000
_TICKS = re.compile(r"`{3,}")


def trimmed(text: str) -> str:
    """``text`` cut to ``RESULT_LINES`` lines and ``RESULT_CHARS`` characters, saying so."""
    lines = text.splitlines()
    kept = "\n".join(lines[:RESULT_LINES])[:RESULT_CHARS]
    if kept == text or kept == "\n".join(lines):
        return text
    left = len(text) - len(kept)
    more = max(0, len(lines) - kept.count("\n") - 1)
    return f"{kept}\n[… {more:,} more lines, {left:,} more characters]"


def _text(content: str | tuple[ContentPart, ...]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        p.text if isinstance(p, TextPart) else f"[image {p.media_type}]"
        for p in content
        if isinstance(p, TextPart | ImagePart)
    )


def _fence(body: str, language: str = "") -> str:
    longest = max((len(m) for m in _TICKS.findall(body)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{body}\n{ticks}"


def _arguments(call: ToolCall) -> str:
    return json.dumps(call.arguments, ensure_ascii=False, indent=2, sort_keys=True)


def _when(stamp: str) -> str:
    return stamp[:19].replace("T", " ") if stamp else ""


def _heading(who: str, stamp: str) -> str:
    when = _when(stamp)
    return f"### {_one_line(who)}" + (f" · {when}" if when else "")


def _one_line(text: str) -> str:
    return markdown_line(" ".join(text.splitlines()))


def _markdown_entry(entry: LogEntry, names: dict[str, str]) -> list[str]:
    match entry:
        case UserEntry():
            return [_heading("User", entry.timestamp), markdown_block(_text(entry.content))]
        case AssistantEntry():
            who = f"Assistant ({entry.model})" if entry.model else "Assistant"
            parts = [_heading(who, entry.timestamp)]
            if entry.content:
                parts.append(markdown_block(entry.content))
            for call in entry.tool_calls:
                names[call.id] = call.name
                parts.append(
                    f"Tool call {code_span(call.name)}:\n\n{_fence(_arguments(call), 'json')}"
                )
            return parts
        case ToolResultEntry():
            name = entry.name or names.get(entry.call_id, "tool")
            said = "error" if entry.is_error else "result"
            body = _fence(trimmed(_text(entry.content)), "text")
            return [f"Tool {said} of {code_span(name)}:\n\n{body}"]
        case Summary():
            return [_heading(_summary_title(entry), entry.timestamp), markdown_block(entry.text)]
        case _:
            return []


def render_markdown(info: SessionInfo, entries: Sequence[LogEntry]) -> str:
    """The transcript of ``info``'s session as Markdown (see the module doc)."""
    title = visible_line(info.title or f"Session {info.id}")
    lines = [f"# {_one_line(title)}", "", f"- session: {code_span(info.id)}"]
    if info.created_at:
        lines.append(
            f"- created: {_when(info.created_at)}; last activity: {_when(info.updated_at)}"
        )
    if info.project_dir:
        lines.append(f"- folder: {code_span(info.project_dir)}")
    names: dict[str, str] = {}
    for entry in entries:
        parts = _markdown_entry(entry, names)
        if isinstance(entry, UserEntry):
            lines += ["", "---", ""]
        for part in parts:
            lines += ["", part] if lines[-1] else [part]
    lines.append("")
    return "\n".join(lines)


_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem;
  color: #1d1d1f; }
.turn { border-left: 3px solid #ccd; padding: .2rem 1rem; margin: 1rem 0; }
.user { border-color: #4a7bd0; } .assistant { border-color: #3a9a5b; }
.summary { border-color: #b08a2e; background: #fbf7ec; }
.who { font-weight: 600; color: #555; font-size: .85rem; }
pre { background: #f5f5f7; padding: .6rem; overflow-x: auto; white-space: pre-wrap; }
.text { white-space: pre-wrap; } .error { color: #a33; }
"""


def _html_entry(entry: LogEntry, names: dict[str, str]) -> str:
    esc = html.escape
    match entry:
        case UserEntry():
            body = f'<div class="text">{esc(_text(entry.content))}</div>'
            return _block("user", "User", entry.timestamp, body)
        case AssistantEntry():
            body = f'<div class="text">{esc(entry.content)}</div>' if entry.content else ""
            for call in entry.tool_calls:
                names[call.id] = call.name
                body += f"<p>Tool call <code>{esc(call.name)}</code></p>"
                body += f"<pre>{esc(_arguments(call))}</pre>"
            who = f"Assistant ({entry.model})" if entry.model else "Assistant"
            return _block("assistant", who, entry.timestamp, body)
        case ToolResultEntry():
            name = esc(entry.name or names.get(entry.call_id, "tool"))
            said = '<span class="error">error</span>' if entry.is_error else "result"
            text = esc(trimmed(_text(entry.content)))
            body = f"<details open><summary>Tool {said} of <code>{name}</code></summary>"
            return _block("tool", "", entry.timestamp, f"{body}<pre>{text}</pre></details>")
        case Summary():
            body = f'<div class="text">{esc(entry.text)}</div>'
            return _block("summary", _summary_title(entry), entry.timestamp, body)
        case _:
            return ""


def _block(kind: str, who: str, stamp: str, body: str) -> str:
    when = f" · {html.escape(_when(stamp))}" if stamp else ""
    head = f'<div class="who">{html.escape(who)}{when}</div>' if who else ""
    return f'<section class="turn {kind}">{head}{body}</section>'


def render_html(info: SessionInfo, entries: Sequence[LogEntry]) -> str:
    """The transcript of ``info``'s session as one self-contained HTML page."""
    title = html.escape(visible_line(info.title or f"Session {info.id}"))
    names: dict[str, str] = {}
    body = "\n".join(filter(None, (_html_entry(e, names) for e in entries)))
    meta = f"session <code>{html.escape(info.id)}</code>"
    if info.created_at:
        meta += f" · {html.escape(_when(info.created_at))} – {html.escape(_when(info.updated_at))}"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{_STYLE}</style></head>\n"
        f"<body><h1>{title}</h1><p>{meta}</p>\n{body}\n</body></html>\n"
    )


#: The readable formats and their renderers.
READABLE = {"markdown": render_markdown, "html": render_html}
_PAGE = 1000


async def export_readable(
    store: Store, session_id: str, path: str | os.PathLike[str], format: str
) -> int:
    """Write the session as ``format`` (``"markdown"`` or ``"html"``) to ``path``; its entries."""
    render = READABLE[format]
    info = await store.get_session(session_id)
    entries: list[LogEntry] = []
    for start in range(0, info.next_seq, _PAGE):
        page = await store.read(session_id, start, min(start + _PAGE, info.next_seq))
        entries.extend(record.entry for record in page)
    text = render(info, entries)
    try:
        await asyncio.to_thread(write_private, Path(path), text.encode("utf-8"), make_folder=False)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc}") from exc
    return len(entries)


def _summary_title(entry: Summary) -> str:
    by = " (written by the provider)" if entry.block is not None else ""
    return f"Summary of the earlier conversation{by}"
