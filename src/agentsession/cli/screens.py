"""Listings of the command line: sessions, skills and the annotated request (``context``).

In a terminal they are rich tables; in a pipe, plain aligned text a script can cut up, with the
same columns in the same order.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..hygiene import visible, visible_line
from ..inspection.annotate import ContextView, Part
from ..inspection.describe import EPOCH_REASONS
from ..skills import SkillDiagnostic, SkillSet
from ..store.base import SessionInfo
from .output import short

__all__ = ["SessionRow", "print_context", "print_sessions", "print_skills"]

SessionRow = tuple[SessionInfo, int, int, int, str]
"""A session, its user, assistant and tool message counts, and the model it names last."""


def _when(stamp: str) -> str:
    return stamp[:16].replace("T", " ")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


_MODEL_WIDTH = 40


def print_sessions(rows: Sequence[SessionRow], *, rich: bool) -> None:
    """One line per session: id, last activity, messages, model, title.

    A long model string (an ``openai-compatible:`` URL) is cut so the columns stay aligned.
    """
    if rich:
        table = Table(box=None, header_style="dim")
        table.add_column("session", no_wrap=True)
        table.add_column("last activity", no_wrap=True)
        table.add_column("messages", no_wrap=True)
        table.add_column("model", no_wrap=True, max_width=_MODEL_WIDTH, overflow="ellipsis")
        table.add_column("title", overflow="fold")
        for info, user, assistant, tool, model in rows:
            counts = f"{user} user · {assistant} assistant · {tool} tool"
            table.add_row(
                Text(visible_line(info.id[:12])),
                _when(info.updated_at),
                counts,
                Text(visible_line(model or "–")),
                Text(visible_line(info.title or "(untitled)")),
            )
        Console().print(table)
        return
    width = min(_MODEL_WIDTH, max((len(row[4] or "-") for row in rows), default=1))
    for info, user, assistant, tool, model in rows:
        counts = f"{user:>3} user {assistant:>3} assistant {tool:>3} tool"
        title = visible_line(info.title or "(untitled)")
        shown = _cut(visible_line(model or "-"), width)
        sid = visible_line(info.id)
        print(f"{sid}  {_when(info.updated_at)}  {counts}  {shown:<{width}}  {title}")


def print_skills(found: SkillSet, *, rich: bool) -> None:
    """One line per skill (name, location, description), then one line per diagnostic."""
    if rich:
        console = Console()
        if found.skills:
            table = Table(box=None, header_style="dim")
            for column in ("skill", "description", "location"):
                table.add_column(column, overflow="fold")
            for skill in found.skills:
                description = " ".join(skill.description.split())
                table.add_row(
                    Text(visible_line(skill.name)),
                    Text(visible_line(description)),
                    Text(visible_line(skill.location or "(Python)")),
                )
            console.print(table)
        else:
            console.print(Text("no skills found", style="dim"))
        for diagnostic in found.diagnostics:
            style = "red" if diagnostic.severity == "error" else "yellow"
            console.print(Text(_diagnostic_line(diagnostic), style=style))
        return
    if not found.skills:
        print("no skills found", file=sys.stderr)
    for skill in found.skills:
        description = " ".join(skill.description.split())
        print(visible_line(f"{skill.name}  {skill.location or '(Python)'}  {description}"))
    for diagnostic in found.diagnostics:
        print(_diagnostic_line(diagnostic))


def _diagnostic_line(diagnostic: SkillDiagnostic) -> str:
    said = f"{diagnostic.severity}: {diagnostic.path}: {' '.join(diagnostic.message.split())}"
    return visible_line(said)


def _describe(view: ContextView) -> list[str]:
    lines = []
    if view.epoch is not None:
        why = EPOCH_REASONS.get(view.epoch_reason, view.epoch_reason)
        starts = "starts with this request" if view.new_epoch else "in force"
        lines.append(f"epoch {view.epoch} ({starts}; it started because of {why})")
    share = f" of {view.limit:,} ({view.total / view.limit:.0%})" if view.limit else ""
    lines.append(f"{view.total:,} tokens{share}, measured as the budget measures them")
    if view.window_start is None:
        lines.append("no conversation in the window yet")
    else:
        edge = f"window from log seq {view.window_start}"
        edge += f"; {view.before_window} earlier transcript messages are outside it"
        if view.left_out:
            edge += f"; {view.left_out} inside it were elided"
        lines.append(edge)
    return lines


def _source(part: Part) -> str:
    pairs = [f"#{seq} {kind}" for seq, kind in zip(part.sources, part.source_kinds, strict=False)]
    return ", ".join(pairs) or "–"


def print_context(view: ContextView, heading: str, *, full: bool, rich: bool) -> None:
    """The request part by part: system sections, messages with their log sources, tools."""
    if rich:
        _rich_context(view, heading, full=full)
        return
    out = _Visible(sys.stdout)
    out.write(heading + "\n")
    for line in _describe(view):
        out.write(f"  {line}\n")
    out.write(f"\nsystem ({sum(p.tokens for p in view.sections):,} tokens)\n")
    for part in view.sections:
        out.write(f"  {part.tokens:>7,}  {part.label}\n")
        if full:
            out.write(_indent(part.text))
    out.write(f"\nmessages ({sum(p.tokens for p in view.messages):,} tokens)\n")
    for i, part in enumerate(view.messages):
        out.write(f"  {part.tokens:>7,}  [{i}] {part.label}  ← {_source(part)}\n")
        out.write(_indent(part.text) if full else f"           {short(part.text, 90)}\n")
    out.write(f"\ntools ({sum(p.tokens for p in view.tools):,} tokens)\n")
    for part in view.tools:
        out.write(f"  {part.tokens:>7,}  {part.label}\n")
    out.write(f"\n  {view.overhead:>7,}  request framing\n")


class _Visible:
    """Writes to ``out`` with control characters made visible (the parts hold model text)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def write(self, text: str) -> None:
        self._out.write(visible(text))


def _indent(text: str) -> str:
    return "".join(f"           {line}\n" for line in (text.splitlines() or [""]))


def _rich_context(view: ContextView, heading: str, *, full: bool) -> None:
    console = Console()
    console.print(Text(visible(heading), style="bold"))
    for line in _describe(view):
        console.print(Text(visible(line), style="dim"))
    table = Table(box=None, header_style="dim", expand=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("part", ratio=2)
    table.add_column("from the log", ratio=1, style="dim")
    table.add_column("text", ratio=4, overflow="fold")
    table.add_row(Text("system", style="bold"), "", "", "")
    for part in view.sections:
        skill = part.label.startswith("core.skills")
        label = Text(visible_line(part.label), style="magenta" if skill else "cyan")
        table.add_row(f"{part.tokens:,}", label, "baseline", _text(part.text, full))
    table.add_row(Text("messages", style="bold"), "", "", "")
    for i, part in enumerate(view.messages):
        style = "yellow" if part.role == "system" else ""
        label = Text(visible_line(f"[{i}] {part.label}"), style=style)
        table.add_row(f"{part.tokens:,}", label, _source(part), _text(part.text, full))
    table.add_row(Text("tools", style="bold"), "", "", "")
    for part in view.tools:
        table.add_row(f"{part.tokens:,}", Text(visible_line(part.label), style="green"), "", "")
    table.add_row(f"{view.overhead:,}", "request framing", "", "")
    console.print(table)


def _text(text: str, full: bool) -> Text:
    return Text(visible(text if full else short(text, 160)))
