"""What a turn and a transcript look like without a terminal: a pipe, JSON, quiet.

One ``Output`` per run, chosen by where it writes:

- ``PlainOutput`` (a pipe or a file): standard output gets exactly the stored replies — a step's
  text is written once its response is durable, so text a failed attempt streamed (and the
  retry sends again) never appears twice — and everything else goes to standard error;
- ``JsonOutput``: one JSON object per event on standard output, for scripts;
- ``QuietOutput``: the replies and nothing else;
- ``RichOutput`` (a terminal, in ``console``): spinner, streamed Markdown, tool panels.

Every output consumes the same ``session.stream()`` events through ``render``. Nothing here
imports ``rich``: a command whose output goes to a pipe or a file never loads it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .._frozen import frozen
from ..codec import encode
from ..errors import ProviderError, TransientProviderError, UsageError
from ..events import (
    ApprovalNeeded,
    ContextAdmitted,
    Event,
    PromptResult,
    ProviderRetry,
    StepCommitted,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    TurnFinished,
)
from ..hygiene import visible, visible_json
from ..inspection.toolview import call_line
from ..request import AssistantMessage, Message, ToolResultMessage, UserMessage, text_of

__all__ = [
    "SCHEMA_VERSION",
    "JsonOutput",
    "Output",
    "PlainOutput",
    "QuietOutput",
    "TurnFigures",
    "error_fields",
    "print_transcript",
    "refuse_missing_folder",
    "render",
    "short",
]

_PREVIEW = 200
SCHEMA_VERSION = 1
"""The version of the ``--json`` objects (docs/cli.md); raised when a field changes meaning."""


def short(text: str, limit: int = _PREVIEW) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "…"


def error_fields(exc: BaseException | None) -> dict[str, object]:
    """An ``error`` object's ``type``, ``status`` (the provider's HTTP status) and ``retryable``."""
    status = exc.status if isinstance(exc, ProviderError) else None
    return {
        "type": type(exc).__name__ if exc is not None else None,
        "status": status,
        "retryable": isinstance(exc, TransientProviderError),
    }


@frozen
class TurnFigures:
    """What the figures line after a turn says: usage, steps and each request's diagnosis."""

    result: PromptResult
    caches: tuple[str, ...] = ()
    estimated: bool = False

    def line(self) -> str:
        """``2 requests · 1,234 tokens in (1,000 cached) · 56 out · cache: first, hit``."""
        usage = self.result.usage
        parts = [f"{self.result.steps} request{'s' if self.result.steps != 1 else ''}"]
        cached = f" ({usage.cached_input_tokens:,} cached)" if usage.cached_input_tokens else ""
        parts.append(f"{usage.input_tokens:,} tokens in{cached}")
        parts.append(f"{usage.output_tokens:,} out")
        if self.estimated:
            parts[-1] += " (estimated)"
        if self.caches:
            parts.append("cache: " + ", ".join(self.caches))
        return " · ".join(parts)


@dataclass
class Output:
    """Where a turn goes; the base class writes nothing (see the subclasses)."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    project: Path | None = None
    """The folder the tools work in: a ``write_file`` call is shown as a diff against it."""
    shown_calls: set[str] = field(default_factory=set)
    """The calls on screen already: an approval question does not show them again."""

    def note(self, text: str) -> None:
        """A status line (session id, the demo model in use, a cancellation)."""
        self.err.write(visible(text) + "\n")
        self.err.flush()

    def error(self, text: str, exc: BaseException | None = None) -> None:
        """A failure the command goes on after (a turn of ``chat``); shown in every mode."""
        self.err.write(f"error: {visible(text)}\n")
        self.err.flush()

    def waiting(self) -> None:
        """The model was asked; nothing has arrived yet."""

    def event(self, event: Event) -> None:
        """One event of the turn."""

    def stop(self) -> None:
        """The turn ended however it ended: put the screen in order."""

    def figures(self, figures: TurnFigures) -> None:
        """The usage and cache figures after a finished turn."""


async def render(events: AsyncIterator[Event], output: Output) -> PromptResult | None:
    """Show a turn's events on ``output``; return the result when the turn finished."""
    result: PromptResult | None = None
    output.waiting()
    try:
        async for event in events:
            output.event(event)
            if isinstance(event, TurnFinished):
                result = event.result
    finally:
        output.stop()
    return result


@dataclass
class PlainOutput(Output):
    """Stored replies on standard output; calls, results and notes on standard error."""

    _text: list[str] = field(default_factory=list)
    _wrote: bool = False

    def event(self, event: Event) -> None:
        """See ``Output.event``."""
        match event:
            case TextDelta():
                self._text.append(event.text)
            case ProviderRetry():
                self._drop(event.discarded)
                self.note(f"  [provider failed, retry {event.attempt}: {event.error}]")
            case StepCommitted(what="response"):
                self._flush()
            case ToolCallStarted():
                self.shown_calls.add(event.call.id)
                self.note(f"  → {short(call_line(event.call.name, event.call.arguments))}")
            case ToolResultEvent():
                mark = "✗" if event.is_error else "←"
                self.note(f"  {mark} {event.name}: {short(event.content)}")
            case ContextAdmitted():
                label = "new context epoch" if event.new_epoch else "context update"
                self.note(f"  [{label}: {', '.join(event.keys)}]")
            case ApprovalNeeded():
                request = event.request
                if request.call_id not in self.shown_calls:
                    self.shown_calls.add(request.call_id)
                    self.note(f"  → {short(call_line(request.name, request.arguments))}")
                self.note(
                    f"  ? {request.name} waits for approval ({request.call_id}): {request.reason}"
                )
            case TurnFinished():
                self._flush()

    def _drop(self, count: int) -> None:
        text = "".join(self._text)
        self._text = [text[: max(0, len(text) - count)]]

    def _flush(self) -> None:
        text = "".join(self._text)
        self._text = []
        if text:
            text = visible(text)  # the model's words, never its escape sequences
            self.out.write(text if text.endswith("\n") else text + "\n")
            self.out.flush()
            self._wrote = True

    def figures(self, figures: TurnFigures) -> None:
        """See ``Output.figures``."""
        self.note(f"  [{figures.line()}]")


@dataclass
class QuietOutput(PlainOutput):
    """The stored replies and nothing else."""

    def note(self, text: str) -> None:
        """See ``Output.note``."""
        return

    def figures(self, figures: TurnFigures) -> None:
        """See ``Output.figures``."""
        return


@dataclass
class JsonOutput(Output):
    """One JSON object per event on standard output (the figures as a ``figures`` object)."""

    def _emit(self, value: dict[str, object]) -> None:
        value = {"kind": value.get("kind"), "schema_version": SCHEMA_VERSION, **value}
        self.out.write(visible_json(json.dumps(value, ensure_ascii=False)) + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        """See ``Output.note``."""
        return

    def error(self, text: str, exc: BaseException | None = None) -> None:
        """See ``Output.error``: an ``error`` object."""
        self._emit({"kind": "error", "message": text, **error_fields(exc)})

    def event(self, event: Event) -> None:
        """See ``Output.event``."""
        self._emit(encode(event))

    def emit(self, kind: str, **fields: object) -> None:
        """An object of the command's own (``session``, ``error``)."""
        self._emit({"kind": kind, **fields})

    def figures(self, figures: TurnFigures) -> None:
        """See ``Output.figures``."""
        self._emit({"kind": "figures", "caches": list(figures.caches), "line": figures.line()})


def print_transcript(
    messages: Sequence[Message],
    out: TextIO | None = None,
    marks: Mapping[int, str] | None = None,
) -> None:
    """Print a user transcript as plain text (control characters made visible); ``marks`` follow."""
    out = out or sys.stdout
    for index, message in enumerate(messages):
        if marks and index - 1 in marks:
            out.write(f"  {marks[index - 1]}\n")
        match message:
            case UserMessage():
                out.write(visible(f"user: {text_of(message.content)}") + "\n")
            case AssistantMessage():
                if message.content:
                    out.write(visible(f"assistant: {message.content}") + "\n")
                for call in message.tool_calls:
                    out.write(visible(f"  → {short(call_line(call.name, call.arguments))}") + "\n")
            case ToolResultMessage():
                mark = "✗" if message.is_error else "←"
                said = f"  {mark} {message.name}: {short(text_of(message.content))}"
                out.write(visible(said) + "\n")
            case _:
                pass
    if marks and len(messages) - 1 in marks:
        out.write(f"  {marks[len(messages) - 1]}\n")


def refuse_missing_folder(target: str | Path) -> Path:
    """``target`` as a path to write, refused when the folder it goes in does not exist.

    ``export -o`` and ``report -o`` (and ``report --all -o``, for the folder it makes) write
    where they are told and make no folders the user did not name: a typo in a path is an
    error, as ``cp`` and ``tar`` have it, not a new tree of folders.
    """
    path = Path(target)
    folder = path.parent
    if not folder.is_dir():
        said = "is not a folder" if folder.exists() else "does not exist"
        raise UsageError(f"cannot write {path}: the folder {folder} {said}")
    return path
