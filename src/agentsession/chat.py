"""Running turns for the command line, and the interactive ``chat`` loop.

``run_turn`` renders one prompt's events and then the usage and cache figures (each request's
diagnosis is read back from its dispatch record). ``chat`` reads prompts with prompt_toolkit in a
terminal — history across runs in the user data dir, multi-line paste (and Esc Enter for a new
line), Ctrl-C clears a typed line, and at an empty prompt Ctrl-C or Ctrl-D leave, naming the
session to resume — and line by line from a pipe. While a reply runs, Ctrl-C cancels that turn
only: ``session.cancel()`` stops it, the session records the step as cancelled and takes the
next prompt.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from .console import JsonOutput, Output, RichOutput, TurnFigures, render
from .errors import AgentSessionError
from .events import Event, PromptResult, StepCommitted, TextDelta, TurnFinished
from .log import Dispatch
from .session import Session

__all__ = ["HELP", "chat", "run_retry", "run_turn"]

HELP = (
    "Type a prompt and press Enter (Esc Enter or a paste for several lines). Ctrl-C cancels a "
    "running reply; at an empty prompt Ctrl-C or Ctrl-D quits. Commands: /retry, /id, /help, "
    "/quit."
)


async def _watched(events: AsyncIterator[Event], dispatches: list[int]) -> AsyncIterator[Event]:
    async for event in events:
        if isinstance(event, StepCommitted) and event.what == "admission":
            dispatches.append(event.last_seq)
        yield event


async def _figures(session: Session, result: PromptResult, dispatches: list[int]) -> TurnFigures:
    caches: list[str] = []
    for seq in dispatches:
        for record in await session.log(seq, seq + 1):
            if isinstance(record.entry, Dispatch):
                caches.append(record.entry.cache)
    estimated = not session.model.profile.reports_usage
    return TurnFigures(result, tuple(caches), estimated)


async def run_turn(session: Session, text: str, output: Output) -> PromptResult | None:
    """Run one prompt on ``output``, then show its figures; the result when it finished."""
    dispatches: list[int] = []
    restore = _no_echo()
    try:
        result = await render(_watched(session.stream(text), dispatches), output)
    finally:
        restore()
    if result is not None:
        output.figures(await _figures(session, result, dispatches))
    return result


async def run_retry(session: Session, output: Output) -> PromptResult:
    """``session.retry()`` shown like a turn: a spinner, then the final reply and figures."""

    async def events() -> AsyncIterator[Event]:
        result = await session.retry()
        if result.text:
            yield TextDelta(result.text)
        yield TurnFinished(result)

    result = await render(events(), output)
    assert result is not None
    output.figures(TurnFigures(result, (), not session.model.profile.reports_usage))
    return result


async def _interruptible(session: Session, text: str, output: Output) -> None:
    """One turn that Ctrl-C cancels without ending the chat."""
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(run_turn(session, text, output))

    def interrupt() -> None:
        if not session.cancel():
            task.cancel()

    loop.add_signal_handler(signal.SIGINT, interrupt)
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        output.note("cancelled: the turn is recorded as cancelled; the session goes on")
    except AgentSessionError as exc:
        output.note(f"error: {exc}")
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def _no_echo() -> Callable[[], None]:
    """Keep keys typed during a reply (``^C`` too) off the screen; returns the undo."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return lambda: None
    import termios

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    changed = list(saved)
    changed[3] &= ~(termios.ECHO | termios.ECHOCTL)
    termios.tcsetattr(fd, termios.TCSANOW, changed)
    return lambda: termios.tcsetattr(fd, termios.TCSANOW, saved)


async def _command(session: Session, text: str, output: Output) -> bool:
    """Run a ``/command``; ``False`` when the chat should end."""
    name = text.strip().split()[0]
    if name in ("/quit", "/exit"):
        return False
    if name == "/help":
        output.note(HELP)
    elif name == "/id":
        output.note(f"session {session.id}")
    elif name == "/retry":
        try:
            await run_retry(session, output)
        except AgentSessionError as exc:
            output.note(f"error: {exc}")
    else:
        output.note(f"unknown command {name}; {HELP}")
    return True


async def chat(session: Session, output: Output, *, history: Path) -> None:
    """Read prompts until the user leaves; each one is a rendered turn."""
    interactive = sys.stdin.isatty() and sys.stdout.isatty() and not isinstance(output, JsonOutput)
    lines = _terminal_lines(history) if interactive else _piped_lines()
    if interactive:
        output.note(f"session {session.id} · {HELP}")
    async for text in lines:
        if not text.strip():
            continue
        if text.lstrip().startswith("/"):
            if not await _command(session, text, output):
                break
            continue
        if isinstance(output, RichOutput):
            output.console.print()
        await _interruptible(session, text, output)
    output.note(f"session {session.id} · resume with: agentsession chat --session {session.id}")


async def _piped_lines() -> AsyncIterator[str]:
    while True:
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            return
        yield line.rstrip("\n")


async def _terminal_lines(history: Path) -> AsyncIterator[str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import HTML
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    history.parent.mkdir(parents=True, exist_ok=True)
    keys = KeyBindings()

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    @keys.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.app.current_buffer.insert_text("\n")

    prompt: PromptSession[str] = PromptSession(history=FileHistory(str(history)), key_bindings=keys)
    while True:
        try:
            yield await prompt.prompt_async(HTML("<b>you</b> › "))
        except (KeyboardInterrupt, EOFError):
            return
