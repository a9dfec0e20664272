"""Session: the turn loop and the public operations on one durable session.

A prompt runs steps until the model answers with text: each step samples the System Context
once, passes the safe boundary (``boundary.admit``), commits the admission in one transaction,
calls the model (``model_call``: transient failures retried with the same request), commits the
response, then runs and commits each tool result. ``stream()`` yields typed events as this
happens; ``prompt()`` and ``retry()`` drain the same stream.

The session owns no storage logic: its ``LogWriter`` knows what is durable, what is pending and
which seq comes next; ``recovery`` says how an unfinished step is closed; ``compaction`` turns a
summary into the entries to commit. Everything else it needs comes in one ``SessionDeps`` value.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Literal

from .admission import Admitter
from .boundary import Admission
from .deps import SessionDeps
from .errors import (
    AgentSessionError,
    MaxStepsExceededError,
    SessionBusyError,
    StoreError,
    UsageError,
)
from .events import (
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
from .inspect import fingerprinted
from .log import (
    AssistantEntry,
    Dispatch,
    LogEntry,
    ModelSwitched,
    ProviderFailed,
    Record,
    SystemPromptCheckpoint,
    ToolResultEntry,
    UserEntry,
    now,
)
from .model_call import as_package_error, call_model
from .providers.base import Model, ModelDone
from .recovery import Cause, closing_entries, step_state
from .request import ContentPart, Message, Request, ToolCall, Usage, digest
from .store.base import SessionInfo
from .sync import run_sync
from .tools import ToolOutcome
from .writer import LogWriter

__all__ = ["Session"]

_Resume = Literal["new", "replay", "continue"]


class Session:
    """One durable conversation. Create with ``Runtime.create_session``/``open_session``."""

    def __init__(
        self, deps: SessionDeps, info: SessionInfo, model: Model | None, writer: LogWriter
    ) -> None:
        self._deps = deps
        self._info = info
        self._model = model
        self._writer = writer
        self._admitter = Admitter(deps, writer)
        self._busy = False
        self._last_dispatch: Dispatch | None = None
        self._last_dispatch_known = False

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

    def system_prompt_checkpoints(self) -> list[SystemPromptCheckpoint]:
        """The system-context record of each dispatched request that changed it (copies)."""
        return copy.deepcopy(self._writer.checkpoints)

    async def log(self, start: int = 0, end: int | None = None) -> list[Record]:
        """Raw log records in ``[start, end)`` (for inspection and export)."""
        return await self._deps.store.read(self.id, start, end)

    # -- turns --------------------------------------------------------------------------------

    async def prompt(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> PromptResult:
        """Run one prompt to the final text reply and return it."""
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
            await self._recover()
            async for event in self._turn([user], "new"):
                yield event

    async def retry(self) -> PromptResult:
        """Finish a turn that did not finish.

        A step whose response never arrived (provider failure, process killed) is re-sent
        exactly as admitted; a turn that stopped after its tool results were stored (a refused
        write, since flushed) continues with the next model call.
        """
        return await _drain(self._retry())

    async def _retry(self) -> AsyncIterator[Event]:
        async with self._exclusive():
            await self._recover()
            tail = await self._writer.tail_since_dispatch()
            if tail is None:
                raise UsageError("nothing to retry: no request was ever dispatched")
            state = step_state(tail)
            if state.finished:
                raise UsageError("nothing to retry: the last turn finished")
            async for event in self._turn([], "continue" if state.responded else "replay"):
                yield event

    async def preview_request(self, text: str | Sequence[ContentPart]) -> Request:
        """The neutral request the next prompt would send; nothing is admitted."""
        user = UserEntry(_normalize_content(text), timestamp=now())
        return await self._admitter.preview([user], self.model)

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
        async with self._exclusive():
            previous = self._model.name if self._model is not None else ""
            if model.name != previous:
                await self._writer.append([ModelSwitched(model.name, previous, now())])
                self._admitter.epoch_reason = "model_switch"
            self._model = model

    # -- the turn loop ------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _exclusive(self) -> AsyncIterator[None]:
        """Hold the session for one operation: refused while busy or while writes are pending."""
        if self._busy:
            raise SessionBusyError(f"session {self.id} is running a turn")
        if self._writer.pending:
            raise SessionBusyError(
                f"session {self.id} has {len(self._writer.pending)} entries the store refused;"
                " call session.flush() first"
            )
        self._busy = True
        try:
            yield
        finally:
            self._busy = False

    async def _turn(self, promoted: list[LogEntry], resume: _Resume) -> AsyncIterator[Event]:
        """Run steps until the model answers with text (or a step cannot go on)."""
        config = self._deps.config
        usage = Usage()
        for step in range(1, config.max_steps + 2):
            if step > config.max_steps:
                raise MaxStepsExceededError(
                    f"the prompt reached Config.max_steps={config.max_steps} model calls"
                )
            if resume == "continue":
                request = await self._admitter.rebuild(self.model)
            else:
                request, events = await self._dispatch(promoted, step, replay=resume == "replay")
                for event in events:
                    yield event
            resume, promoted = "new", []
            done: ModelDone | None = None
            async for model_event in self._ask(request):
                if isinstance(model_event, ModelDone):
                    done = model_event
                else:
                    yield model_event
            assert done is not None
            usage = _add_usage(usage, done.usage)
            async for event in self._respond(step, request, done, usage):
                yield event
            if not done.message.tool_calls:
                return

    async def _ask(self, request: Request) -> AsyncIterator[TextDelta | ProviderRetry | ModelDone]:
        """The provider call of a step; a failure is recorded in the log, then raised."""
        config = self._deps.config
        try:
            async for event in call_model(
                self.model,
                request,
                retries=config.provider_retries,
                base_delay=config.retry_base_delay,
            ):
                yield event
        except AgentSessionError as exc:
            await self._record_failure(exc)
            raise
        except Exception as exc:
            await self._record_failure(exc)
            raise as_package_error(exc, f"model {self.model.name}") from exc

    async def _dispatch(
        self, promoted: list[LogEntry], step: int, *, replay: bool
    ) -> tuple[Request, list[Event]]:
        """Admit and commit one request right before the provider call; return it and events."""
        admitted: Admission | None = None
        if replay:
            request = await self._admitter.rebuild(self.model)
            entries: list[LogEntry] = [
                Dispatch(self.model.name, step, digest(request), timestamp=now())
            ]
        else:
            admitted = await self._admitter.admit(promoted, step, self.model)
            request = admitted.request
            entries = list(admitted.entries)
        dispatch = entries.pop()
        assert isinstance(dispatch, Dispatch)
        stamped = fingerprinted(dispatch, request, await self._previous_dispatch())
        records = await self._writer.append([*entries, stamped])
        self._last_dispatch = stamped
        self._admitter.admitted()
        events: list[Event] = []
        if admitted is not None and admitted.changed:
            events.append(ContextAdmitted(admitted.changed, admitted.new_epoch))
        events.append(StepCommitted(step, records[0].seq, records[-1].seq, "admission"))
        return request, events

    async def _respond(
        self, step: int, request: Request, done: ModelDone, usage: Usage
    ) -> AsyncIterator[Event]:
        """Commit the response; finish the turn or run its tool calls and commit each result."""
        message = done.message
        entry = AssistantEntry(
            content=message.content,
            tool_calls=message.tool_calls,
            provider=message.provider,
            provider_data=message.provider_data,
            model=done.model or self.model.name,
            usage=done.usage,
            timestamp=now(),
        )
        saved = await self._writer.commit([entry])
        if self.model.profile.reports_usage and done.usage.input_tokens > 0:
            self._deps.budget.observe(request, done.usage.input_tokens)
        if saved:
            yield StepCommitted(step, saved[0].seq, saved[-1].seq, "response")
        if not message.tool_calls:
            if self._writer.pending:
                self._writer.raise_pending()
            await self._name_session()
            yield TurnFinished(PromptResult(message.content, step, usage, self.id))
            return
        available = {spec.name for spec in request.tools}
        for call in message.tool_calls:
            yield ToolCallStarted(call)
            outcome = await self._run_tool(call, available)
            result = ToolResultEntry(call.id, call.name, outcome.content, outcome.is_error, now())
            saved = await self._writer.commit([result])
            yield ToolResultEvent(call.id, call.name, outcome.content, outcome.is_error)
            if saved:
                yield StepCommitted(step, saved[0].seq, saved[-1].seq, "tool_result")
        if self._writer.pending:
            self._writer.raise_pending()

    async def _run_tool(self, call: ToolCall, available: set[str]) -> ToolOutcome:
        tool = self._deps.tool_named(call.name)
        if tool is None or call.name not in available:
            return ToolOutcome(f"Unknown tool: {call.name}", True)
        return await tool.invoke(dict(call.arguments))

    # -- the boundary -------------------------------------------------------------------------

    async def _previous_dispatch(self) -> Dispatch | None:
        """The session's last dispatch record (read once from the log, then kept)."""
        if not self._last_dispatch_known:
            found = await self._deps.store.last(self.id, ["dispatch"])
            entry = found.entry if found is not None else None
            self._last_dispatch = entry if isinstance(entry, Dispatch) else None
            self._last_dispatch_known = True
        return self._last_dispatch

    # -- recovery, failures, titles -----------------------------------------------------------

    async def _recover(self, cause: Cause = "process") -> None:
        """Record truthfully a step that was dispatched but left unfinished."""
        tail = await self._writer.tail_since_dispatch()
        closing = closing_entries(tail or [], now(), cause)
        if closing:
            await self._writer.append(closing)

    async def _record_failure(self, exc: BaseException) -> None:
        # Best effort: the admitted context is already durable; a failed write here must not
        # hide the provider error the caller needs to see.
        with contextlib.suppress(StoreError):
            await self._writer.append([ProviderFailed(str(exc), type(exc).__name__, now())])

    async def _name_session(self) -> None:
        if self._info.title is not None:
            return
        title = await self._deps.titler.title(self._writer.transcript)
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
        return text
    parts = tuple(text)
    if not parts:
        raise UsageError("a prompt needs text or at least one content part")
    return parts


def _add_usage(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.cached_input_tokens + b.cached_input_tokens,
        a.cache_write_tokens + b.cache_write_tokens,
    )
