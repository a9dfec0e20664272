"""Session: the turn loop and the public operations on one durable session.

A prompt runs steps until the model answers with text: each step passes the safe boundary
(``boundary.admit``), commits the admission in one transaction, calls the model (retrying
transient failures with the same request), commits the response, then runs and commits each tool
result. ``stream()`` yields typed events as this happens and ``prompt()`` is built on it.

Reads for the next request are O(window): the newest epoch is found through the kind index and
only the log from its history start is read. The user transcript is loaded once at open and kept
in memory; runtime metadata never enters it. A failed provider call leaves the admitted entries
stored; ``retry()`` re-sends exactly the request rebuilt from the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from .boundary import (
    Admission,
    BoundaryInput,
    admit,
    build_request,
    request_digest,
    sample_all,
)
from .compaction import plan_compaction, summary_request
from .context.engine import effective_state, fresh_baseline
from .errors import (
    AgentSessionError,
    BudgetExceededError,
    ConflictError,
    MaxStepsExceededError,
    ProviderError,
    SessionBusyError,
    StoreError,
    TransientProviderError,
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
from .inspect import diagnose
from .log import (
    TRANSCRIPT_KINDS,
    AssistantEntry,
    ContextEpoch,
    Dispatch,
    EpochReason,
    Interrupted,
    LogEntry,
    MidConversationSystemMessage,
    ModelSwitched,
    ProviderFailed,
    Record,
    Summary,
    SystemPromptCheckpoint,
    ToolResultEntry,
    UserEntry,
    now,
)
from .projection import project, to_message
from .providers.base import Model, ModelDone, ModelTextDelta, ModelToolCall, complete
from .request import (
    ContentPart,
    Message,
    Request,
    ToolCall,
    Usage,
)
from .store.base import SessionInfo, Store
from .sync import run_sync
from .tools import Tool, ToolOutcome

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["Session"]

_INTERRUPTED_RESULT = "No result: the process ended before this tool call finished."


class Session:
    """One durable conversation. Create with ``Runtime.create_session``/``open_session``."""

    def __init__(
        self,
        runtime: Runtime,
        info: SessionInfo,
        transcript: list[Message],
        checkpoints: list[SystemPromptCheckpoint],
    ) -> None:
        self._runtime = runtime
        self._info = info
        self._transcript = transcript
        self._checkpoints = checkpoints
        self._next_seq = info.next_seq
        self._busy = False
        self._model_override: Model | None = None
        self._epoch_reason: EpochReason | None = None
        self._last_request: Request | None = None
        self._pending: list[LogEntry] = []
        self._pending_error: StoreError | None = None
        self._last_model: str | None = None

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
        """The model this session currently talks to."""
        return self._model

    @property
    def _model(self) -> Model:
        return self._model_override or self._runtime.model

    @property
    def messages(self) -> list[Message]:
        """The user transcript: user, assistant and tool messages only (copies)."""
        return list(self._transcript)

    @property
    def busy(self) -> bool:
        """Whether a turn is running."""
        return self._busy

    def system_prompt_checkpoints(self) -> list[SystemPromptCheckpoint]:
        """The system-context record of each dispatched request that changed it (copies)."""
        return copy.deepcopy(self._checkpoints)

    async def log(self, start: int = 0, end: int | None = None) -> list[Record]:
        """Raw log records in ``[start, end)`` (for inspection and export)."""
        return await self._store.read(self.id, start, end)

    # -- turns --------------------------------------------------------------------------------

    async def prompt(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> PromptResult:
        """Run one prompt to the final text reply and return it."""
        result: PromptResult | None = None
        async for event in self.stream(text, skills=skills):
            if isinstance(event, TurnFinished):
                result = event.result
        assert result is not None
        return result

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
        content = _normalize_content(text)
        self._enter()
        try:
            await self._recover()
            user = UserEntry(content, timestamp=now())
            async for event in self._run(user):
                yield event
        finally:
            self._busy = False

    async def retry(self) -> PromptResult:
        """Finish a turn that did not finish.

        A step whose response never arrived (provider failure, process killed) is re-sent
        exactly as admitted; a turn that stopped after its tool results were stored (a refused
        write, since flushed) continues with the next model call.
        """
        self._enter()
        try:
            await self._recover()
            tail = await self._tail_since_dispatch()
            if tail is None:
                raise UsageError("nothing to retry: no request was ever dispatched")
            responses = [r.entry for r in tail if isinstance(r.entry, AssistantEntry)]
            if responses and not responses[-1].tool_calls:
                raise UsageError("nothing to retry: the last turn finished")
            result: PromptResult | None = None
            async for event in self._run(None, replay=not responses):
                if isinstance(event, TurnFinished):
                    result = event.result
            assert result is not None
            return result
        finally:
            self._busy = False

    async def preview_request(self, text: str | Sequence[ContentPart]) -> Request:
        """The neutral request the next prompt would send; nothing is admitted."""
        user = UserEntry(_normalize_content(text), timestamp=now())
        admission = await self._admission(user, step=1)
        return admission.request

    @property
    def pending(self) -> int:
        """How many entries the store refused and ``flush()`` has yet to write."""
        return len(self._pending)

    async def flush(self) -> int:
        """Write the entries a refused commit kept in memory; return how many were written.

        Raises ``StoreError`` again (keeping them) while the store still refuses. Afterwards
        ``retry()`` continues an unfinished turn.
        """
        if self._busy:
            raise SessionBusyError(f"session {self.id} is running a turn")
        if not self._pending:
            return 0
        records = await self._append(self._pending)
        self._pending = []
        return len(records)

    async def compact(self) -> bool:
        """Summarise the history before the last ``Config.keep_user_turns`` user turns.

        The summary opens a new epoch with a freshly rendered baseline; earlier history stays in
        the log. Returns ``False`` when there is nothing before the kept turns to summarise.
        """
        self._enter()
        try:
            await self._recover()
            return await self._compact()
        finally:
            self._busy = False

    async def _compact(self) -> bool:
        epoch, records, _ = await self._view_records()
        if epoch is None:
            return False
        plan = plan_compaction(project(records, epoch), self._runtime.config.keep_user_turns)
        if plan is None:
            return False
        summarizer = self._runtime.summarizer or self._model
        request = summary_request(
            plan.head, self._runtime.token_counter, self._runtime.budget_for(summarizer)
        )
        try:
            done = await complete(summarizer, request)
        except AgentSessionError:
            raise
        except Exception as exc:
            raise ProviderError(f"the summariser failed: {type(exc).__name__}: {exc}") from exc
        text = done.message.content.strip()
        if not text:
            raise ProviderError("the summariser returned an empty summary")
        components = self._runtime.registry.components()
        samples = await sample_all(components)
        mids = [r.entry for r in records if isinstance(r.entry, MidConversationSystemMessage)]
        baseline, checkpoint, removed = fresh_baseline(
            effective_state(epoch, mids), components, samples
        )
        stamp = now()
        summary_seq = self._next_seq
        new_epoch = ContextEpoch(
            epoch=epoch.epoch + 1,
            baseline=baseline,
            checkpoint=checkpoint,
            history_start=plan.cut_seq,
            reason="compaction",
            model=self._model.name,
            removed=removed,
            summary_seq=summary_seq,
            timestamp=stamp,
        )
        await self._append([Summary(text, plan.cut_seq, stamp), new_epoch])
        self._epoch_reason = None
        return True

    async def switch_model(self, model: Model) -> None:
        """Talk to ``model`` from the next request on; that request starts a new epoch."""
        if not isinstance(model, Model):
            raise UsageError(f"expected a Model, got {type(model).__name__}")
        self._enter()
        try:
            if model.name != self._model.name:
                entry = ModelSwitched(model.name, self._model.name, now())
                await self._append([entry])
                self._epoch_reason = "model_switch"
            self._model_override = model
        finally:
            self._busy = False

    # -- internals ----------------------------------------------------------------------------

    @property
    def _store(self) -> Store:
        return self._runtime.store

    def _enter(self) -> None:
        if self._busy:
            raise SessionBusyError(f"session {self.id} is running a turn")
        if self._pending:
            raise SessionBusyError(
                f"session {self.id} has {len(self._pending)} entries the store refused;"
                " call session.flush() first"
            )
        self._busy = True

    async def _commit(self, entries: Sequence[LogEntry]) -> list[Record] | None:
        """Append after a provider or tool call; keep the entries pending if the store refuses.

        Nothing a model or tool produced is dropped: ``flush()`` writes it later, without
        calling them again. A conflicting writer is not a refusal and still raises.
        """
        if not self._pending:
            try:
                return await self._append(entries)
            except ConflictError:
                raise
            except StoreError as exc:
                self._pending_error = exc
        self._pending.extend(entries)
        return None

    def _raise_pending(self) -> None:
        assert self._pending_error is not None
        raise StoreError(
            f"the store refused to write ({self._pending_error}); {len(self._pending)} entries"
            " are kept in memory: call session.flush() to write them (they are lost if the"
            " process ends first)"
        ) from self._pending_error

    async def _append(self, entries: Sequence[LogEntry]) -> list[Record]:
        records: list[Record] = await self._store.append(self.id, self._next_seq, entries)
        self._next_seq += len(entries)
        for record in records:
            if record.entry.kind in TRANSCRIPT_KINDS:
                message = to_message(record)
                assert message is not None
                self._transcript.append(message)
            elif isinstance(record.entry, SystemPromptCheckpoint):
                self._checkpoints.append(record.entry)
        return records

    async def _epoch(self) -> Record | None:
        record: Record | None = await self._store.last(self.id, ["epoch"])
        return record

    async def _view_records(self) -> tuple[ContextEpoch | None, list[Record], bool]:
        """The current epoch, its log from the history start on, and whether it was dispatched.

        Reads O(window) rows: the epoch is found through the kind index.
        """
        epoch_record = await self._epoch()
        if epoch_record is None:
            return None, await self._store.read(self.id, 0), False
        epoch = epoch_record.entry
        assert isinstance(epoch, ContextEpoch)
        start = min(epoch.history_start, epoch_record.seq)
        if epoch.summary_seq is not None:
            start = min(start, epoch.summary_seq)
        records = await self._store.read(self.id, start)
        dispatched = any(
            isinstance(r.entry, Dispatch) and r.seq > epoch_record.seq for r in records
        )
        return epoch, records, dispatched

    async def _admission(self, user: UserEntry | None, *, step: int) -> Admission:
        epoch, records, dispatched = await self._view_records()
        tools = [t.spec for t in self._runtime.tools]
        data = BoundaryInput(
            records=records,
            epoch=epoch,
            next_seq=self._next_seq,
            new_user=user,
            components=self._runtime.registry.components(),
            tools=tools,
            config=self._runtime.config,
            model=self._model.name,
            step=step,
            message_count=len(self._transcript) + (1 if user is not None else 0),
            epoch_reason=self._epoch_reason or _switched(epoch, self._model),
            timestamp=now(),
            epoch_dispatched=dispatched,
            provider=self._model.profile.provider,
        )
        return await admit(data, self._runtime.preflight_for(self._model, user))

    async def _admit(self, user: UserEntry | None, *, step: int) -> Admission:
        """Admission with automatic compaction: over the threshold, or over the budget."""
        config = self._runtime.config
        try:
            admission = await self._admission(user, step=step)
        except BudgetExceededError:
            if not config.auto_compact or not await self._compact():
                raise
            return await self._admission(user, step=step)
        budget = self._runtime.budget_for(self._model)
        if config.auto_compact and admission.tokens > budget * config.compact_threshold:
            # The request fits: a summariser that fails here must not fail the prompt.
            try:
                compacted = await self._compact()
            except ProviderError:
                return admission
            if compacted:
                return await self._admission(user, step=step)
        return admission

    async def _rebuild_request(self) -> Request:
        """The request of the current epoch, exactly as last admitted (no sampling)."""
        epoch, records, _ = await self._view_records()
        if epoch is None:
            raise UsageError("nothing to retry: no request was ever admitted")
        tools = [t.spec for t in self._runtime.tools]
        request, _, _ = build_request(
            project(records, epoch),
            epoch,
            tools,
            self._runtime.config,
            self._model.profile.provider,
        )
        return request

    async def _tail_since_dispatch(self) -> list[Record] | None:
        last = await self._store.last(self.id, ["dispatch"])
        if last is None:
            return None
        records: list[Record] = await self._store.read(self.id, last.seq)
        return records

    async def _recover(self) -> None:
        """Record truthfully a step that a dead process left dispatched but unfinished."""
        tail = await self._tail_since_dispatch()
        if not tail:
            return
        entries = [r.entry for r in tail]
        if any(isinstance(e, ProviderFailed | Interrupted) for e in entries):
            return
        responses = [e for e in entries if isinstance(e, AssistantEntry)]
        if not responses:
            await self._append(
                [Interrupted("the process ended before the response was stored", now())]
            )
            return
        answered = {e.call_id for e in entries if isinstance(e, ToolResultEntry)}
        missing = [c for c in responses[-1].tool_calls if c.id not in answered]
        if missing:
            synthetic: list[LogEntry] = [
                ToolResultEntry(c.id, c.name, _INTERRUPTED_RESULT, True, now()) for c in missing
            ]
            synthetic.append(Interrupted("the process ended while tools were running", now()))
            await self._append(synthetic)

    async def _run(self, user: UserEntry | None, *, replay: bool = False) -> AsyncIterator[Event]:
        config = self._runtime.config
        usage = Usage()
        step = 0
        while True:
            step += 1
            if step > config.max_steps:
                raise MaxStepsExceededError(
                    f"the prompt reached Config.max_steps={config.max_steps} model calls"
                )
            if replay:
                request = await self._rebuild_request()
                again = Dispatch(self._model.name, step, request_digest(request), "", now())
                records = await self._append([self._diagnosed(again, request)])
                replay = False
            else:
                admission = await self._admit(user, step=step)
                request = admission.request
                *head, dispatch = admission.entries
                assert isinstance(dispatch, Dispatch)
                records = await self._append([*head, self._diagnosed(dispatch, request)])
                self._epoch_reason = None
                if admission.changed:
                    yield ContextAdmitted(admission.changed, admission.new_epoch)
            user = None
            yield StepCommitted(step, records[0].seq, records[-1].seq, "admission")

            done: ModelDone | None = None
            async for event in self._call_model(request):
                if isinstance(event, ModelDone):
                    done = event
                else:
                    yield event
            assert done is not None
            usage = _add_usage(usage, done.usage)
            message = done.message
            entry = AssistantEntry(
                content=message.content,
                tool_calls=message.tool_calls,
                provider=message.provider,
                provider_data=message.provider_data,
                model=done.model or self._model.name,
                usage=done.usage,
                timestamp=now(),
            )
            saved = await self._commit([entry])
            self._runtime.observe_usage(self._model, request, done.usage)
            if saved:
                yield StepCommitted(step, saved[0].seq, saved[-1].seq, "response")
            if not message.tool_calls:
                if self._pending:
                    self._raise_pending()
                await self._name_session()
                result = PromptResult(message.content, step, usage, self.id)
                yield TurnFinished(result)
                return
            available = {spec.name for spec in request.tools}
            for call in message.tool_calls:
                yield ToolCallStarted(call)
                outcome = await self._run_tool(call, available)
                result_entry = ToolResultEntry(
                    call.id, call.name, outcome.content, outcome.is_error, now()
                )
                saved = await self._commit([result_entry])
                yield ToolResultEvent(call.id, call.name, outcome.content, outcome.is_error)
                if saved:
                    yield StepCommitted(step, saved[0].seq, saved[-1].seq, "tool_result")
            if self._pending:
                self._raise_pending()

    def _diagnosed(self, dispatch: Dispatch, request: Request) -> Dispatch:
        """``dispatch`` with the cache diagnosis against the previous request of this process."""
        if self._last_request is None and self._next_seq == 0:
            cache = "first"
        else:
            cache = diagnose(self._last_request, self._last_model, request, self._model.name)
        self._last_request, self._last_model = request, self._model.name
        return replace(dispatch, cache=cache)

    async def _run_tool(self, call: ToolCall, available: set[str]) -> ToolOutcome:
        tool: Tool | None = self._runtime.tool_named(call.name)
        if tool is None or call.name not in available:
            return ToolOutcome(f"Unknown tool: {call.name}", True)
        return await tool.invoke(dict(call.arguments))

    async def _call_model(
        self, request: Request
    ) -> AsyncIterator[TextDelta | ProviderRetry | ModelDone]:
        retries = self._runtime.config.provider_retries
        attempt = 0
        while True:
            try:
                async for event in self._model.stream(request):
                    if isinstance(event, ModelTextDelta):
                        yield TextDelta(event.text)
                    elif isinstance(event, ModelToolCall):
                        continue
                    else:
                        yield event
                return
            except TransientProviderError as exc:
                if attempt < retries:
                    attempt += 1
                    yield ProviderRetry(attempt, str(exc))
                    await asyncio.sleep(self._runtime.config.retry_base_delay * 2 ** (attempt - 1))
                    continue
                await self._record_failure(exc)
                raise
            except AgentSessionError as exc:
                # The package's own errors keep their type: a RequestValidationError is a bug
                # report and a UsageError a misuse, not a provider failure.
                await self._record_failure(exc)
                raise
            except Exception as exc:
                await self._record_failure(exc)
                raise ProviderError(
                    f"model {self._model.name} failed: {type(exc).__name__}: {exc}"
                ) from exc

    async def _record_failure(self, exc: BaseException) -> None:
        # Best effort: the admitted context is already durable; a failed write here must not
        # hide the provider error the caller needs to see.
        with contextlib.suppress(StoreError):
            await self._append([ProviderFailed(str(exc), type(exc).__name__, now())])

    async def _name_session(self) -> None:
        if self._info.title is not None:
            return
        title = await self._runtime.make_title(self._transcript)
        if title:
            self._info = replace(self._info, title=title)
            # A title is a convenience: a store that refuses it must not fail the turn.
            with contextlib.suppress(StoreError):
                await self._store.set_title(self.id, title)

    def __repr__(self) -> str:
        return f"Session({self.id!r})"


def _switched(epoch: ContextEpoch | None, model: Model) -> EpochReason | None:
    """``"model_switch"`` when the epoch was rendered for another model than the current one.

    This covers a session reopened in a process configured with a different model.
    """
    if epoch is not None and epoch.model and epoch.model != model.name:
        return "model_switch"
    return None


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


def transcript_from(records: Sequence[Record]) -> list[Message]:
    """The user transcript of ``records``."""
    out: list[Message] = []
    for record in records:
        if record.entry.kind in TRANSCRIPT_KINDS:
            message = to_message(record)
            assert message is not None
            out.append(message)
    return out
