"""Console rendering of turns and transcripts on a terminal, with ``rich``.

``RichOutput`` shows a spinner while the model has not answered yet, the reply as Markdown while
it streams, each tool call and result as a compact panel, and the usage and cache figures after
the turn. The outputs for a pipe, JSON and quiet runs are in ``output`` (they need no ``rich``)
and are named here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from rich.console import Console
from rich.live import Live
from rich.panel import Panel
from rich.spinner import Spinner
from rich.text import Text

from ..events import (
    ApprovalNeeded,
    ContextAdmitted,
    Event,
    ProviderRetry,
    StepCommitted,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    TurnFinished,
)
from ..hygiene import visible, visible_line
from ..inspection.toolview import call_text
from ..request import AssistantMessage, Message, ToolResultMessage, UserMessage, text_of
from .output import (
    SCHEMA_VERSION,
    JsonOutput,
    Output,
    PlainOutput,
    QuietOutput,
    TurnFigures,
    error_fields,
    print_transcript,
    render,
    short,
)
from .streamview import Elapsed, LiveReply, markdown

__all__ = [
    "SCHEMA_VERSION",
    "JsonOutput",
    "Output",
    "PlainOutput",
    "QuietOutput",
    "RichOutput",
    "TurnFigures",
    "error_fields",
    "print_transcript",
    "render",
    "short",
]

_PANEL_LINES = 12


@dataclass
class RichOutput(Output):
    """A terminal: spinner, streamed Markdown, tool panels, a dim figures line."""

    console: Console = field(default_factory=Console)
    verbose: bool = False
    """Show ``[context update]`` lines and the cache diagnosis too."""
    _live: Live | None = None
    _reply: LiveReply | None = None

    def note(self, text: str) -> None:
        """See ``Output.note``."""
        self._pause()
        self.console.print(Text(visible(text), style="dim"))

    def waiting(self, label: str = "thinking…") -> None:
        """See ``Output.waiting``."""
        self._pause()
        spinner = Spinner("dots", text=Elapsed(label))
        self._live = Live(spinner, console=self.console, transient=True, refresh_per_second=12)
        self._live.start()

    def _pause(self) -> None:
        """Stop what is live; streamed text stays on the screen, printed once."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._reply is not None:
            self._reply.close()
            self._reply = None

    def stop(self) -> None:
        """See ``Output.stop``."""
        self._pause()

    def event(self, event: Event) -> None:
        """See ``Output.event``."""
        match event:
            case TextDelta():
                self._stream(event.text)
            case ProviderRetry():
                self._discard(event.discarded)
                self.console.print(
                    Text(
                        visible(f"provider failed ({event.error}); retry {event.attempt}"),
                        style="yellow",
                    )
                )
            case ToolCallStarted():
                self._pause()
                self.shown_calls.add(event.call.id)
                body = call_text(event.call.name, event.call.arguments, self.project)
                self.console.print(_call_panel(body, f"→ {event.call.name}"))
                self.waiting(f"running {event.call.name}…")
            case ToolResultEvent():
                self._pause()
                style = "red" if event.is_error else "green"
                mark = "✗" if event.is_error else "←"
                self.console.print(_panel(event.content, f"{mark} {event.name}", style))
                self.waiting()
            case ContextAdmitted():
                if event.new_epoch or self.verbose:
                    label = "new context epoch" if event.new_epoch else "context update"
                    keys = visible(", ".join(event.keys))
                    self._print_keep(Text(f"[{label}: {keys}]", style="dim"))
            case ApprovalNeeded():
                self._pause()
                request = event.request
                body = request.reason
                if request.call_id not in self.shown_calls:  # each call is shown once
                    self.shown_calls.add(request.call_id)
                    shown = call_text(request.name, request.arguments, self.project)
                    body = f"{shown}\n{request.reason}"
                self.console.print(_panel(body, f"? {request.name} waits for approval", "yellow"))
            case StepCommitted() | TurnFinished():
                pass

    def _print_keep(self, text: Text) -> None:
        """Print above a spinner (or a streaming reply) without disturbing it."""
        if self._live is not None:
            self._live.console.print(text)
        else:
            self.console.print(text)

    def _stream(self, piece: str) -> None:
        if self._reply is None:
            self._pause()
            self._reply = LiveReply(self.console)
        self._reply.add(visible(piece))  # the model's words, never its escape sequences

    def _discard(self, count: int) -> None:
        if self._reply is not None and count:
            self._reply.discard(count)

    def figures(self, figures: TurnFigures) -> None:
        """See ``Output.figures``; the cache diagnosis only when ``verbose``."""
        shown = figures if self.verbose else replace(figures, caches=())
        self.console.print(Text(shown.line(), style="dim"))

    def transcript(
        self, messages: Sequence[Message], marks: Mapping[int, str] | None = None
    ) -> None:
        """A user transcript with the same panels as a live turn; ``marks`` follow messages."""
        for index, message in enumerate(messages):
            self._message(message)
            if marks and index in marks:
                self.console.print(Text(visible(marks[index]), style="yellow"))

    def _message(self, message: Message) -> None:
        match message:
            case UserMessage():
                self.console.print(
                    Text("you › ", style="bold") + Text(visible(text_of(message.content)))
                )
            case AssistantMessage():
                if message.content:
                    self.console.print(markdown(visible(message.content)))
                for call in message.tool_calls:
                    body = call_text(call.name, call.arguments)
                    self.console.print(_call_panel(body, f"→ {call.name}"))
            case ToolResultMessage():
                style = "red" if message.is_error else "green"
                mark = "✗" if message.is_error else "←"
                content = text_of(message.content)
                self.console.print(_panel(content, f"{mark} {message.name}", style))
            case _:
                pass


def _call_panel(body: str, title: str) -> Panel:
    """A call: a diff coloured as one, anything else as it is."""
    if "\n--- " not in body and "\n+++ " not in body:
        return _panel(body, title, "cyan")
    text = Text()
    for line in body.splitlines()[: _PANEL_LINES * 4]:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
        if line.startswith(("+++", "---", "@@")):
            style = "dim"
        text.append(visible(short(line, 400)) + "\n", style=style)
    return Panel(
        text, title=Text(visible_line(title)), title_align="left", border_style="cyan", expand=False
    )


def _panel(body: str, title: str, style: str) -> Panel:
    lines = body.splitlines() or [""]
    if len(lines) > _PANEL_LINES:
        more = len(lines) - _PANEL_LINES
        lines = [*lines[:_PANEL_LINES], f"… {more} more line{'s' if more != 1 else ''}"]
    text = Text(visible("\n".join(short(line, 400) for line in lines)))
    shown = Text(visible_line(title))
    return Panel(text, title=shown, title_align="left", border_style=style, expand=False)
