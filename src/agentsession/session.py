"""Session: the public operations on one durable session, and the guard around each turn.

``stream()`` runs one prompt as a ``Turn`` and yields its events; ``prompt()``, ``retry()`` and
``resume()`` drain the same stream. Every operation that writes holds the session exclusively
(``_exclusive``): refused while a turn runs, while refused writes are pending or while a tool
call waits for approval. However a turn ends — finished, failed, cancelled (task cancel, a
timeout, leaving ``stream()`` early, ``session.cancel()``) — the session is left consistent with
its store: a write that committed while being cancelled is picked up, and an abandoned step is
recorded as interrupted by cancellation, so the same object takes the next prompt.

The session owns no storage logic: its ``LogWriter`` knows what is durable, what is pending and
which seq comes next; ``recovery`` says how an unfinished step is closed; ``SessionParts`` hold its
permission gate, tools and context sources. Everything else comes in one ``SessionDeps`` value.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from .admission import Admitter
from .boundary import Admission
from .deps import SessionDeps
from .errors import AgentSessionError, SessionBusyError, StoreError, UsageError
from .events import ApprovalRequest, Event, PromptResult, StepCommitted, TurnFinished
from .hygiene import has_surrogates
from .inspect import mismatch
from .log import (
    ApprovalDecided,
    AssistantEntry,
    Dispatch,
    LogEntry,
    ModelSwitched,
    Record,
    SystemPromptCheckpoint,
    UserEntry,
    now,
)
from .parts import SessionParts
from .providers.base import Model, Preparable
from .recovery import Cause, closing_entries, step_state
from .request import AssistantMessage, ContentPart, Message, Request, TextPart, ToolCall, digest
from .store.base import SessionInfo
from .sync import run_sync
from .turn import Start, Turn, approval_of
from .views import Inspection, inspect_log
from .writer import LogWriter

__all__ = ["Session"]


class Session:
    """One durable conversation. Create with ``Runtime.create_session``/``open_session``."""

    def __init__(
        self,
        deps: SessionDeps,
        info: SessionInfo,
        model: Model | None,
        writer: LogWriter,
        parts: SessionParts,
        *,
        switch: ModelSwitched | None = None,
    ) -> None:
        self._deps = deps
        self._info = info
        self._model = model
        self._writer = writer
        self._parts = parts
        self._admitter = Admitter(deps, writer, parts)
        self._busy = False
        self._held = False
        self._task: asyncio.Task[object] | None = None
        self._last_dispatch: Dispatch | None = None
        self._last_dispatch_known = False
        self._switch = switch
        if switch is not None:
            self._admitter.epoch_reason = "model_switch"

    # -- public views -------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The session id."""
        return self._info.id

    @property
    def title(self) -> str | None:
        """The title named after the first turn, or ``None``."""
        return self._info.title

    @property
    def model(self) -> Model:
        """The model this session currently talks to (``UsageError`` when it has none)."""
        if self._model is None:
            raise UsageError(
                f"session {self.id} has no model: give the Runtime a model, or pass"
                " open_session(id, model=...)"
            )
        return self._model

    @property
    def messages(self) -> list[Message]:
        """The user transcript: user, assistant and tool messages only (copies)."""
        return list(self._writer.transcript)

    @property
    def busy(self) -> bool:
        """Whether a turn is running."""
        return self._busy

    @property
    def pending(self) -> int:
        """How many entries the store refused and ``flush()`` has yet to write."""
        return len(self._writer.pending)

    @property
    def permission_preset(self) -> str:
        """The name of the permission preset in effect."""
        return self._parts.gate.preset.name

    def system_prompt_checkpoints(self) -> list[SystemPromptCheckpoint]:
        """The system-context record of each dispatched request that changed it (copies)."""
        return copy.deepcopy(self._writer.checkpoints)

    def pending_approvals(self) -> list[ApprovalRequest]:
        """Tool calls waiting for the user's approval, oldest first."""
        calls = [
            call
            for message in self._writer.transcript
            if isinstance(message, AssistantMessage)
            for call in message.tool_calls
        ]
        return [approval_of(r, calls) for r in self._parts.gate.waiting()]

    async def log(self, start: int = 0, end: int | None = None) -> list[Record]:
        """Raw log records in ``[start, end)`` (for inspection and export)."""
        return await self._deps.store.read(self.id, start, end)

    # -- turns --------------------------------------------------------------------------------

    async def prompt(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> PromptResult:
        """Run one prompt to the final text reply (or a pause for approval) and return it."""
        return await _drain(self.stream(text, skills=skills))

    def prompt_sync(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> PromptResult:
        """``prompt()`` for scripts and notebooks (runs on the package's event loop thread)."""
        return run_sync(self.prompt(text, skills=skills))

    async def stream(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> AsyncIterator[Event]:
        """Run one prompt, yielding events as they happen; the last is ``TurnFinished``."""
        if skills:
            raise UsageError("skill selection is not available yet in this version")
        user = UserEntry(_normalize_content(text), timestamp=now())
        async with self._exclusive():
            self._ready()
            await self._recover()
            async for event in self._run([user, *self._metadata()], "new"):
                yield event

    async def retry(self) -> PromptResult:
        """Finish a turn that did not finish.

        A step whose response never arrived (provider failure, process killed) is re-sent
        exactly as admitted — ``UsageError`` if the runtime changed so that the same request can
        no longer be sent (``prompt()`` continues instead); after ``switch_model()`` the step is
        admitted afresh for the new model, in a new epoch. A response whose tool calls did not
        run (a refused write, since flushed) runs them once; a turn that stopped after its tool
        results continues with the next model call.
        """
        return await _drain(self._resume())

    async def resume(self) -> PromptResult:
        """Continue a turn paused for approval, once every waiting call is approved or denied."""
        return await _drain(self._resume())

    async def _resume(self) -> AsyncIterator[Event]:
        async with self._exclusive(allow_waiting=True):
            self._ready()
            waiting = self._parts.gate.waiting()
            if waiting:
                names = ", ".join(f"{w.name} ({w.call_id})" for w in waiting)
                raise UsageError(f"approve or deny the waiting tool calls first: {names}")
            if not self._held:
                await self._recover()
            tail = await self._writer.tail_since_dispatch()
            if tail is None:
                raise UsageError("nothing to retry: no request was ever dispatched")
            state = step_state(tail)
            if state.finished:
                raise UsageError("nothing to retry: the last turn finished")
            start: Start
            calls: list[ToolCall] = []
            if not state.responded:
                start = await self._replay_or_readmit(tail)
            elif state.missing:
                start = "tools"
                response = [r.entry for r in tail if isinstance(r.entry, AssistantEntry)][-1]
                missing = {call_id for call_id, _ in state.missing}
                calls = [c for c in response.tool_calls if c.id in missing]
            else:
                start = "continue"
            async for event in self._run(self._metadata(), start, calls):
                yield event

    async def _replay_or_readmit(self, tail: Sequence[Record]) -> Start:
        """``replay`` when the dispatched request can be sent again unchanged, else explain."""
        dispatch = tail[0].entry
        assert isinstance(dispatch, Dispatch)
        if dispatch.model != self.model.name:
            return "continue"  # switched since: a new epoch for the new model
        rebuilt = await self._admitter.rebuild(self.model)
        if digest(rebuilt) != dispatch.digest:
            raise UsageError(
                "retry() cannot send the failed request again: the runtime changed since it was"
                f" dispatched ({mismatch(rebuilt, dispatch)}); call prompt() to continue"
                " with the current runtime instead"
            )
        return "replay"

    async def preview_request(self, text: str | Sequence[ContentPart]) -> Request:
        """The neutral request the next prompt would send; nothing is admitted."""
        user = UserEntry(_normalize_content(text), timestamp=now())
        return (await self._admitter.preview([user, *self._metadata()], self.model)).request

    async def inspect(self) -> Inspection:
        """The session as its log tells it; nothing is admitted or written.

        Timeline, turns, epochs, every dispatched request rebuilt, and the next request
        previewed and annotated (``Inspection.next_request``).
        """
        upcoming: Admission | str = "the session has no model to preview the next request with"
        if self._model is not None:
            try:
                upcoming = await self._admitter.preview(self._metadata(), self._model)
            except AgentSessionError as exc:
                upcoming = str(exc)
        return inspect_log(
            await self._deps.store.get_session(self.id),
            await self.log(),
            specs=self._parts.toolbox.specs(),
            tools=[t.name for t in self._deps.tools],
            config=self._deps.config,
            budget=self._deps.budget,
            model=self._model,
            upcoming=upcoming,
        )

    async def flush(self) -> int:
        """Write the entries a refused commit kept in memory; return how many were written.

        Raises ``StoreError`` again (keeping them) while the store still refuses. Afterwards
        ``retry()`` continues an unfinished turn.
        """
        if self._busy:
            raise SessionBusyError(f"session {self.id} is running a turn")
        return await self._writer.flush()

    async def compact(self) -> bool:
        """Summarise the history before the last ``Config.keep_user_turns`` user turns.

        The summary opens a new epoch with a freshly rendered baseline; earlier history stays in
        the log. Returns ``False`` when there is nothing before the kept turns to summarise.
        """
        async with self._exclusive():
            await self._recover()
            return await self._admitter.compact(await self._admitter.sample(), self.model)

    async def switch_model(self, model: Model) -> None:
        """Talk to ``model`` from the next request on; that request starts a new epoch."""
        if not isinstance(model, Model):
            raise UsageError(f"expected a Model, got {type(model).__name__}")
        async with self._exclusive(allow_waiting=True):
            previous = self._model.name if self._model is not None else ""
            if self._switch is not None:
                previous, self._switch = self._switch.previous, None
            if model.name != previous:
                await self._writer.append([ModelSwitched(model.name, previous, now())])
                self._admitter.epoch_reason = "model_switch"
            self._model = model

    def set_permission_preset(self, name: str) -> None:
        """Switch the permission preset while idle; the next request tells the model.

        One ``permission_changed`` entry per effective change is committed with the next
        admission; setting the preset in effect changes nothing.
        """
        self._check_idle()
        self._parts.gate.set(name)

    async def approve(self, call_id: str, *, always: bool = False) -> None:
        """Approve a waiting tool call (``always``: this tool for the rest of the session)."""
        await self._answer(call_id, approved=True, always=always, note="")

    async def deny(self, call_id: str, note: str = "") -> None:
        """Deny a waiting tool call; the model reads that the user denied it."""
        await self._answer(call_id, approved=False, always=False, note=note)

    async def _answer(self, call_id: str, *, approved: bool, always: bool, note: str) -> None:
        if self._busy:
            raise SessionBusyError(f"session {self.id} is running a turn")
        if call_id not in {w.call_id for w in self._parts.gate.waiting()}:
            raise UsageError(f"no tool call {call_id!r} is waiting for approval")
        entry = ApprovalDecided(call_id, approved, always, note, now())
        await self._writer.append([entry])
        self._parts.gate.record(entry)

    def cancel(self) -> bool:
        """Cancel the running turn; ``False`` when none runs. The session stays usable."""
        task = self._task
        if task is None or task.done():
            return False
        loop = task.get_loop()
        loop.call_soon_threadsafe(task.cancel)
        return True

    # -- the guard ----------------------------------------------------------------------------

    def _check_idle(self, *, allow_waiting: bool = False) -> None:
        if self._busy:
            raise SessionBusyError(f"session {self.id} is running a turn")
        if self._writer.pending:
            raise SessionBusyError(
                f"session {self.id} has {len(self._writer.pending)} entries the store refused;"
                " call session.flush() first"
            )
        waiting = self._parts.gate.waiting()
        if waiting and not allow_waiting:
            raise SessionBusyError(
                f"session {self.id} has a tool call waiting for approval ({waiting[0].name},"
                f" {waiting[0].call_id}): approve() or deny() it, then resume()"
            )

    @contextlib.asynccontextmanager
    async def _exclusive(self, *, allow_waiting: bool = False) -> AsyncIterator[None]:
        """Hold the session for one operation; settle it however the operation ends."""
        self._check_idle(allow_waiting=allow_waiting)
        self._busy = True
        self._task = asyncio.current_task()
        try:
            yield
        except (asyncio.CancelledError, GeneratorExit):
            await self._settle_cancelled()
            raise
        finally:
            self._busy = False
            self._task = None

    async def _settle_cancelled(self) -> None:
        """After a cancellation: catch up with the store and record the abandoned step."""
        with contextlib.suppress(Exception):
            await self._writer.resync()
            if not self._writer.pending:
                await self._recover("cancelled")

    def _metadata(self) -> list[LogEntry]:
        """Changes recorded while idle that the next admission commits (switch, presets)."""
        switch = [self._switch] if self._switch is not None else []
        return [*switch, *self._parts.gate.pending_changes]

    def _ready(self) -> None:
        """Refuse before anything is stored when the model cannot be called (no key, no SDK)."""
        model = self.model
        if isinstance(model, Preparable):
            model.ensure_ready()

    async def _run(
        self, promoted: list[LogEntry], start: Start, calls: Sequence[ToolCall] = ()
    ) -> AsyncIterator[Event]:
        turn = Turn(
            self._deps,
            self._parts,
            self._writer,
            self._admitter,
            self.model,
            self.id,
            await self._previous_dispatch(),
        )
        self._held = False
        try:
            async for event in turn.run(promoted, start, calls):
                if isinstance(event, StepCommitted) and event.what == "admission":
                    self._switch = None
                if isinstance(event, TurnFinished) and event.result.stop_reason != (
                    "approval_required"
                ):
                    await self._name_session()
                yield event
        finally:
            self._held = turn.held
            self._last_dispatch, self._last_dispatch_known = turn.last_dispatch, True

    async def _previous_dispatch(self) -> Dispatch | None:
        """The session's last dispatch record (read once from the log, then kept)."""
        if not self._last_dispatch_known:
            found = await self._deps.store.last(self.id, ["dispatch"])
            entry = found.entry if found is not None else None
            self._last_dispatch = entry if isinstance(entry, Dispatch) else None
            self._last_dispatch_known = True
        return self._last_dispatch

    async def _recover(self, cause: Cause = "process") -> None:
        """Record truthfully a step that was dispatched but left unfinished."""
        tail = await self._writer.tail_since_dispatch()
        closing = closing_entries(tail or [], now(), cause)
        if closing:
            await self._writer.append(closing)

    async def _name_session(self) -> None:
        if self._info.title is not None:
            return
        titles = self._deps.config.titles
        title = await self._deps.titler.title(self._writer.transcript, use_model=titles)
        if title:
            self._info = replace(self._info, title=title)
            # A title is a convenience: a store that refuses it must not fail the turn.
            with contextlib.suppress(StoreError):
                await self._deps.store.set_title(self.id, title)

    def __repr__(self) -> str:
        return f"Session({self.id!r})"


async def _drain(events: AsyncIterator[Event]) -> PromptResult:
    """Run a turn's events to the end and return its result."""
    result: PromptResult | None = None
    async for event in events:
        if isinstance(event, TurnFinished):
            result = event.result
    assert result is not None
    return result


def _normalize_content(text: str | Sequence[ContentPart]) -> str | tuple[ContentPart, ...]:
    if isinstance(text, str):
        if not text.strip():
            raise UsageError("a prompt needs text or at least one content part")
        _refuse_surrogates(text)
        return text
    parts = tuple(text)
    if not parts:
        raise UsageError("a prompt needs text or at least one content part")
    for part in parts:
        if isinstance(part, TextPart):
            _refuse_surrogates(part.text)
    return parts


def _refuse_surrogates(text: str) -> None:
    if has_surrogates(text):
        raise UsageError(
            "the prompt holds text that is not valid Unicode (lone surrogates, e.g. from a"
            " terminal that is not UTF-8); nothing was stored"
        )
