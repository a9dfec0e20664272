"""Running turns for the command line, and the interactive ``chat`` loop.

A ``Driver`` runs one session's turns on one ``Output``: a prompt's events as they stream; then,
while the turn waits for approval, the answers of its ``Approver`` and the resumed turn's events
(``session.stream_retry()``, as are retries), a call that was shown before its approval not
shown twice; then the usage and cache figures of the whole turn (each request's diagnosis read
back from its dispatch record). Calls that waited from an earlier run are asked about before the
next prompt.

``chat`` reads prompts with prompt_toolkit in a terminal — history across runs in the user data
dir, multi-line paste (and Esc Enter for a new line), Ctrl-C clears a typed line, and at an
empty prompt Ctrl-C or Ctrl-D leave, naming the session to resume — and line by line from a
pipe. While a reply runs, Ctrl-C cancels that turn only (recorded as cancelled), and a line
typed then steers it or, with ``/queue``, runs after it (``typeahead``). ``/commands`` change the
preset or the model, compact, answer waiting calls, retry (``HELP``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .._files import create_private, private_folder
from ..errors import UsageError
from ..events import (
    ContextAdmitted,
    Event,
    PromptResult,
    StepCommitted,
    ToolCallStarted,
    TurnStream,
)
from ..ledger import cost_lines
from ..log import Dispatch
from ..permissions import BUILTIN_PRESETS
from ..providers.base import Model
from ..request import Usage
from ..session import Session
from ..store.base import Store
from .approvals import Answer, Approver, CommandRules, Fixed, settle
from .chatview import COMMAND_NAMES, HELP, EpochWatch, banner, recap
from .console import JsonOutput, Output, RichOutput, TurnFigures, render
from .inspectview import show_context, write_export, write_report
from .interrupts import interruptible, no_echo
from .typeahead import TypedInput

__all__ = ["HELP", "Chat", "Driver"]


async def _watched(
    events: AsyncIterator[Event], dispatches: list[int], shown: set[str], epochs: EpochWatch
) -> AsyncIterator[Event]:
    """``events``, noting each request sent.

    A call shown before its approval is not shown again when the resumed turn runs it. The first
    request of an epoch that a compaction opened is shown as a new epoch, not as an update of
    every key (the compaction stored the epoch before the request).
    """
    async for event in events:
        if isinstance(event, StepCommitted) and event.what == "admission":
            dispatches.append(event.last_seq)
        if isinstance(event, ToolCallStarted):
            if event.call.id in shown:
                continue
            shown.add(event.call.id)
        if isinstance(event, ContextAdmitted):
            opened = await epochs.opened()
            if opened and not event.new_epoch:
                event = ContextAdmitted(event.keys, True)
        yield event


def _combined(parts: Sequence[PromptResult], requests: int) -> PromptResult:
    """One result for a turn that paused for approvals: the last part's, with summed figures.

    Its ``steps`` are the ``requests`` sent: a resumed part counts its stored calls as a step.
    """
    last = parts[-1]
    usage = Usage(
        sum(p.usage.input_tokens for p in parts),
        sum(p.usage.output_tokens for p in parts),
        sum(p.usage.cached_input_tokens for p in parts),
        sum(p.usage.cache_write_tokens for p in parts),
    )
    return replace(last, steps=requests or sum(p.steps for p in parts), usage=usage)


@dataclass
class Driver:
    """One session's turns on the command line: rendered, with their approvals answered."""

    session: Session
    output: Output
    store: Store
    approver: Approver
    max_rounds: int = 100
    epochs: EpochWatch | None = None
    rules: CommandRules = field(default_factory=CommandRules)

    def watch(self) -> EpochWatch:
        """The epoch watch of the current session (a new one after ``/new``)."""
        if self.epochs is None or self.epochs.session is not self.session:
            self.epochs = EpochWatch(self.session, self.store, self.output)
        return self.epochs

    async def prompt(self, text: str, skills: Sequence[str] = ()) -> PromptResult | None:
        """One prompt to its end; ``None`` when it stopped early (calls still wait)."""
        if not await self.settle_waiting():
            return None
        result = await self._drive(self.session.stream(text, skills=skills))
        while result and result.stop_reason != "approval_required" and self.session.pending_input():
            result = await self._drive(self.session.stream_pending())  # typed during the turn
        return result

    async def retry(self) -> PromptResult | None:
        """``session.retry()``, shown as it happens (``stream_retry()``)."""
        return await self._drive(self.session.stream_retry())

    async def resume(self) -> PromptResult | None:
        """``session.retry()`` after the waiting calls were answered, shown like ``retry``."""
        return await self._drive(self.session.stream_retry())

    async def settle_waiting(self, approver: Approver | None = None) -> bool:
        """Answer the calls an earlier run left waiting and finish that turn.

        ``True`` when no call waits any more.
        """
        waiting = self.session.pending_approvals()
        if not waiting:
            return True
        if approver is None:  # asked now: say where the calls come from, and show them
            many = len(waiting) != 1
            self.output.note(
                f"{len(waiting)} tool call{'s' if many else ''} of an earlier turn"
                f" wait{'' if many else 's'} for approval"
            )
        chosen = approver or self.approver
        shown = approver is None
        if not await settle(
            self.session, waiting, chosen, self.output, show=shown, rules=self.rules
        ):
            return False
        result = await self.resume()
        return result is not None and result.stop_reason != "approval_required"

    async def _drive(self, events: TurnStream) -> PromptResult | None:
        dispatches: list[int] = []
        shown: set[str] = set()
        parts: list[PromptResult] = []
        epochs = self.watch()
        await epochs.start()
        while True:
            restore = no_echo()
            try:
                async with events, TypedInput(self.session, self.output):
                    result = await render(_watched(events, dispatches, shown, epochs), self.output)
            finally:
                restore()
            if result is None:
                return None
            parts.append(result)
            if result.stop_reason != "approval_required":
                break
            if len(parts) > self.max_rounds:
                raise UsageError(
                    f"the model asked for approval {len(parts)} times in one turn; stopped"
                    " (the last call still waits)"
                )
            if not await settle(
                self.session, result.approvals, self.approver, self.output, rules=self.rules
            ):
                break
            events = self.session.stream_retry()
        total = _combined(parts, len(dispatches))
        self.output.figures(await self._figures(total, dispatches))
        return total

    async def _figures(self, result: PromptResult, dispatches: list[int]) -> TurnFigures:
        caches: list[str] = []
        for seq in dispatches:
            for record in await self.session.log(seq, seq + 1):
                if isinstance(record.entry, Dispatch):
                    caches.append(record.entry.cache)
        estimated = not self.session.model.profile.reports_usage
        return TurnFigures(result, tuple(caches), estimated)


@dataclass
class Chat:
    """The interactive loop of one session; ``resolve`` turns ``/model NAME`` into a model."""

    driver: Driver
    resolve: Callable[[str], Model]
    skills: Sequence[str] = ()
    preset: str | None = None
    opened: list[Model] = field(default_factory=list)
    failures: int = 0
    explain: Callable[[BaseException], str] = str
    new_session: Callable[[], Awaitable[Session]] | None = None
    folder: Path | None = None

    @property
    def session(self) -> Session:
        """The session talked to."""
        return self.driver.session

    @property
    def output(self) -> Output:
        """Where everything goes."""
        return self.driver.output

    async def run(self, *, history: Path) -> None:
        """Read prompts until the user leaves; each one is a rendered turn."""
        output = self.output
        interactive = (
            sys.stdin.isatty() and sys.stdout.isatty() and not isinstance(output, JsonOutput)
        )
        lines = _terminal_lines(history) if interactive else _piped_lines()
        if interactive:
            output.note(banner(self.session, self.folder or Path.cwd()))
            for line in await recap(self.driver.store, self.session.id):
                output.note(line)
        await self._attempt(self.driver.settle_waiting())
        if self.preset is not None:
            await self._attempt(self._preset(self.preset))
        async for text in lines:
            if not text.strip():
                continue
            if text.lstrip().startswith("/"):
                if not await self._command(text):
                    break
                continue
            if isinstance(output, RichOutput):
                output.console.print()
            skills, self.skills = self.skills, ()
            await self._attempt(self.driver.prompt(text, skills))
        if (await self.driver.store.get_session(sid := self.session.id)).next_seq:  # else deleted
            output.note(f"session {sid} · resume with: agentsession chat --session {sid}")

    async def _attempt(self, work: Awaitable[object]) -> None:
        """Run one prompt or command; a failure is shown and counted, and the chat goes on."""
        if not await interruptible(self.session, work, self.output, self.explain):
            self.failures += 1

    async def _command(self, text: str) -> bool:
        """Run a ``/command``; ``False`` when the chat should end."""
        name, _, rest = text.strip().partition(" ")
        arg = rest.strip()
        if name in ("/quit", "/exit"):
            return False
        handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "/help": self._help,
            "/id": self._id,
            "/retry": self._retry,
            "/preset": self._preset,
            "/model": self._model,
            "/compact": self._compact,
            "/context": self._context,
            "/new": self._new,
            "/report": self._report,
            "/export": self._export,
            "/approve": self._approve,
            "/deny": self._deny,
            "/usage": self._usage,
        }
        handler = handlers.get(name)
        if handler is None:
            self.output.note(f"unknown command {name}; {HELP}")
        else:
            await self._attempt(handler(arg))
        return True

    async def _help(self, arg: str) -> None:
        self.output.note(HELP)

    async def _usage(self, arg: str) -> None:
        for line in cost_lines(self.session.cost()):
            self.output.note(line)

    async def _id(self, arg: str) -> None:
        self.output.note(f"session {self.session.id}")

    async def _retry(self, arg: str) -> None:
        await self.driver.retry()

    async def _preset(self, arg: str) -> None:
        if not arg:
            known = ", ".join(BUILTIN_PRESETS)
            self.output.note(f"preset {self.session.permission_preset} (presets: {known})")
            return
        before = self.session.permission_preset
        self.session.set_permission_preset(arg)
        if arg == before:
            self.output.note(f"preset {arg} is already in effect")
        else:
            self.output.note(f"preset {arg} from the next request on (was {before})")

    async def _model(self, arg: str) -> None:
        if not arg:
            self.output.note(f"model {self.session.model.name}; /model NAME switches")
            return
        model = self.resolve(arg)
        self.opened.append(model)
        await self.session.switch_model(model)
        self.output.note(f"model {model.name} from the next request on (a new context epoch)")

    async def _compact(self, arg: str) -> None:
        if isinstance(self.output, RichOutput):
            self.output.waiting("compacting…")
        epochs = self.driver.watch()
        await epochs.start()
        try:
            compacted = await self.session.compact()
        finally:
            self.output.stop()
        found = await epochs.current()
        if compacted and found is not None:
            epochs.announced.add(found.seq)
        if compacted:
            self.output.note("compacted: older turns are summarised in a new context epoch")
        else:
            self.output.note("nothing to compact: no turns before the ones always kept")

    async def _context(self, arg: str) -> None:
        await show_context(self.session, self.output)

    async def _report(self, arg: str) -> None:
        path = Path(arg or f"agentsession-{self.session.id[:12]}.html")
        await write_report(self.session, path)
        self.output.note(f"wrote {path}")

    async def _export(self, arg: str) -> None:
        path = Path(arg or f"agentsession-{self.session.id[:12]}.md")
        self.output.note(f"wrote {path} ({await write_export(self.session, path)})")

    async def _new(self, arg: str) -> None:
        if self.new_session is None:
            self.output.note("/new is not available here")
            return
        self.driver.session = await self.new_session()
        self.output.note(f"new session {self.session.id} (the previous one is kept)")

    async def _approve(self, arg: str) -> None:
        always = arg.lower() == "always"
        await self._answer(Answer("always" if always else "yes", why="/approve"))

    async def _deny(self, arg: str) -> None:
        await self._answer(Answer("no", arg or "the user said no", why="/deny"))

    async def _answer(self, answer: Answer) -> None:
        if not self.session.pending_approvals():
            self.output.note("no tool call waits for approval")
            return
        await self.driver.settle_waiting(Fixed(answer))


async def _piped_lines() -> AsyncIterator[str]:
    while True:
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            return
        yield line.rstrip("\n")


async def _terminal_lines(history: Path) -> AsyncIterator[str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.filters import Condition
    from prompt_toolkit.formatted_text import HTML
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    private_folder(history.parent)
    create_private(history)  # what the user typed: for their eyes only
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

    commands = WordCompleter(list(COMMAND_NAMES), sentence=True)
    prompt: PromptSession[str] = PromptSession(
        history=FileHistory(str(history)),
        key_bindings=keys,
        completer=commands,
        complete_while_typing=Condition(lambda: prompt.default_buffer.text.startswith("/")),
    )
    while True:
        try:
            yield await prompt.prompt_async(HTML("<b>you</b> › "))
        except (KeyboardInterrupt, EOFError):
            return
