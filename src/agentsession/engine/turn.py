"""One turn: steps until the model answers with text, a call waits for approval, or a step fails.

A step is: admission (committed in one transaction right before the call), the provider call,
the response (committed before any tool runs — the write-ahead rule), then each tool call run and
committed with what it changed. Where a turn starts depends on how the last one ended
(``Start``): a new prompt admits its input; ``replay`` re-sends the dispatched request unchanged;
``tools`` runs the calls of a stored response that have no result yet (a response whose commit
the store refused, since flushed, or calls the user has answered); ``continue`` admits the next
request after settled results. Each step yields its events, then one outcome (``steps``) that
the loop matches: ask again, finish, pause for an approval, or stop on a refused write.

A response is checked on arrival before it is stored: a tool call without an id gets one, and an
id that repeats one already in the history is made unique, so every later request pairs each
result with its call. A provider's context-overflow error compacts once and retries once when
automatic compaction is on.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal, TypeAlias, assert_never

from .._memo import conforms
from ..boundary import Admission
from ..errors import ContextOverflowError, MaxStepsExceededError, StoreError
from ..events import (
    ApprovalNeeded,
    ApprovalRequest,
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
from ..log import (
    ApprovalRequested,
    AssistantEntry,
    Dispatch,
    LogEntry,
    ProviderFailed,
    ToolResultEntry,
    now,
)
from ..providers.base import CacheControlled, Model, ModelDone, provider_failure, valid_reply
from ..providers.cache_controls import CacheControls
from ..providers.cache_policy import cache_lifetime
from ..request import AssistantMessage, Request, ToolCall, Usage, digest, new_call_id
from .admission import Admitter
from .deps import SessionDeps
from .model_call import FirstEvent, call_model
from .next_controls import cache_controls
from .parts import SessionParts
from .server_compaction import opened_in_reply
from .steps import STEP_OUTCOMES, StepContinue, StepFinished, StepHeld, StepOutcome, StepPaused
from .summary_call import threshold_at
from .writer import LogWriter

__all__ = [
    "CUT_BY_LIMIT",
    "Start",
    "Turn",
    "approval_of",
    "refused_calls",
    "unique_call_ids",
]

Start: TypeAlias = Literal["new", "replay", "tools", "continue"]


def unique_call_ids(message: AssistantMessage, used: Collection[str]) -> AssistantMessage:
    """``message`` with every tool call id present and unique against ``used`` and each other."""
    taken = set(used)
    calls: list[ToolCall] = []
    changed = False
    for call in message.tool_calls:
        call_id = call.id or new_call_id()
        if call_id in taken:
            base, n = call_id, 2
            while f"{base}_{n}" in taken:
                n += 1
            call_id = f"{base}_{n}"
        taken.add(call_id)
        changed = changed or call_id != call.id
        calls.append(call if call_id == call.id else replace(call, id=call_id))
    return replace(message, tool_calls=tuple(calls)) if changed else message


@dataclass
class Turn:
    """Runs the steps of one operation on a session; ``held`` reports a write-ahead stop."""

    deps: SessionDeps
    parts: SessionParts
    writer: LogWriter
    admitter: Admitter
    model: Model
    session_id: str
    last_dispatch: Dispatch | None
    _held: bool = field(default=False, init=False)
    _asked: CacheControls | None = field(default=None, init=False)  # the last call's controls
    _first: FirstEvent = field(default_factory=FirstEvent, init=False)  # its first event's time

    @property
    def held(self) -> bool:
        """Whether the turn stopped because the store refused a response whose calls wait."""
        return self._held

    async def run(
        self, promoted: Sequence[LogEntry], start: Start, calls: Sequence[ToolCall] = ()
    ) -> AsyncIterator[Event]:
        """Run from ``start``; ``calls`` are the unanswered calls a ``tools`` start settles."""
        step = 0
        outcome: StepOutcome = StepContinue(Usage())
        if start == "tools":
            step, start = 1, "continue"
            # The stored response's calls, offered as its request offered them.
            offered: Collection[str] = await self.admitter.offered(self.model)
            async for item in self._settle(step, calls, offered, Usage()):
                if isinstance(item, STEP_OUTCOMES):
                    outcome = item
                else:
                    yield item
        overflowed = False
        while True:
            match outcome:
                case StepContinue():
                    usage = outcome.usage
                case StepFinished() | StepPaused():
                    yield TurnFinished(outcome.result)
                    return
                case StepHeld():
                    self._held = outcome.calls_wait
                    self.writer.raise_pending()
                case _:
                    assert_never(outcome)
            step += 1
            request, offered, events = await self._dispatch(promoted, step, start == "replay")
            promoted, start = (), "new"
            for event in events:
                yield event
            done: ModelDone | None = None
            try:
                async for answer in self._ask(request):
                    if isinstance(answer, ModelDone):
                        done = answer
                    else:
                        yield answer
            except ContextOverflowError:
                if overflowed or not await self._make_room():
                    raise
                overflowed = True
                step -= 1
                continue
            assert done is not None  # a provider call's last event is its answer
            async for item in self._answer(step, request, offered, done, usage):
                if isinstance(item, STEP_OUTCOMES):
                    outcome = item
                else:
                    yield item

    async def _make_room(self) -> bool:
        """After a provider's context-overflow error: compact once, if that is allowed."""
        if not self.deps.config.auto_compact:
            return False
        return await self.admitter.compact(await self.admitter.sample(), self.model)

    async def _answer(
        self, step: int, request: Request, offered: Collection[str], done: ModelDone, usage: Usage
    ) -> AsyncIterator[Event | StepOutcome]:
        """The rest of a step once the model answered: commit the answer, then run its calls."""
        usage = _add(usage, done.usage)
        # Text is made valid where it is committed: a lone surrogate stored would fail every
        # later request (and every display) at encoding.
        done, replaced = valid_reply(done)
        # Unique against this epoch's calls and every call an approval was asked for in the
        # session: an earlier answer must never decide a later call that reused its id.
        message = unique_call_ids(done.message, await self._used_ids(done.message))
        refused = refused_calls(done, message)
        if refused:
            message = replace(message, tool_calls=tuple(_emptied(message, refused)))
        for event in await self._respond(step, request, done, message, refused, replaced):
            yield event
        if self.writer.pending:
            # Write-ahead: the calls wait until the response is durable (flush, then retry).
            yield StepHeld(calls_wait=bool(message.tool_calls))
            return
        if not message.tool_calls or done.stop_reason == "max_tokens":
            # A reply the output limit cut ends the turn: its calls did not run, and
            # asking again at once would likely be cut the same way.
            yield StepFinished(
                PromptResult(message.content, step, usage, self.session_id, done.stop_reason)
            )
            return
        runnable = [c for c in message.tool_calls if c.id not in refused]
        async for item in self._settle(step, runnable, offered, usage):
            yield item

    async def _dispatch(
        self, promoted: Sequence[LogEntry], step: int, replay: bool
    ) -> tuple[Request, Collection[str], list[Event]]:
        """Admit and commit one request right before the provider call (step ``step``)."""
        limit = self.deps.config.max_steps
        if step > limit:
            raise MaxStepsExceededError(f"the prompt reached Config.max_steps={limit} model calls")
        admitted: Admission | None = None
        if not replay:  # steers join after the settled results and the prompt's own entries
            await self.writer.settle()  # a delivery whose answer was lost is known first
            promoted = [*promoted, *self.parts.inbox.reserve_steers()]
        try:
            if replay:
                request = await self.admitter.rebuild(self.model)
                offered: Collection[str] = await self.admitter.offered(self.model)
                # Changes recorded while idle (a preset switch) are not part of the model view:
                # the same request is sent again, committed with its dispatch record.
                entries: list[LogEntry] = [
                    *promoted,
                    Dispatch(self.model.name, step, digest(request), timestamp=now()),
                ]
            else:
                admitted = await self.admitter.admit(promoted, step, self.model)
                request, offered = admitted.request, admitted.offered
                entries = list(admitted.entries)
            dispatch = entries.pop()
            assert isinstance(dispatch, Dispatch)
            from ..log.fingerprint import fingerprinted  # with the first call (import time)

            stamped = fingerprinted(dispatch, request, self.last_dispatch)
            records = await self.writer.append([*entries, stamped])
        finally:
            self.parts.inbox.release(promoted)
        self.last_dispatch = stamped
        self.admitter.admitted()
        self.parts.gate.admitted()
        events: list[Event] = []
        if admitted is not None and admitted.changed:
            events.append(ContextAdmitted(admitted.changed, admitted.new_epoch))
        events.append(StepCommitted(step, records[0].seq, records[-1].seq, "admission"))
        return request, offered, events

    async def _ask(self, request: Request) -> AsyncIterator[TextDelta | ProviderRetry | ModelDone]:
        """The provider call of a step; a failure is recorded in the log, then raised."""
        config = self.deps.config
        try:
            async for event in call_model(
                self.model,
                request,
                retries=config.provider_retries,
                base_delay=config.retry_base_delay,
                controls=await self._cache_controls(),
                first=self._first,
            ):
                yield event
        except Exception as exc:
            # Best effort: the admitted context is already durable; a failed write here must
            # not hide the provider error the caller needs to see.
            with contextlib.suppress(StoreError):
                await self.writer.append([ProviderFailed(str(exc), type(exc).__name__, now())])
            error = provider_failure(exc, f"model {self.model.name}")
            if error is exc:
                raise
            raise error from exc

    async def _cache_controls(self) -> CacheControls:
        """The provider cache controls of the next call (see ``cache_policy``)."""
        config, ledger, clock = self.deps.config, self.writer.ledger, self.deps.clock
        if clock is not None:
            ledger.note(clock())
        trigger = threshold_at(self.deps, self.model)
        controls = await cache_controls(config, ledger, self.deps.store, self.session_id, trigger)
        ledger.ttl_seconds = cache_lifetime(self.model.profile, controls.ttl)
        # Recorded on the response only where the model sends them (``CacheControlled``).
        self._asked = controls if conforms(self.model, CacheControlled) else None
        return controls

    async def _respond(
        self,
        step: int,
        request: Request,
        done: ModelDone,
        message: AssistantMessage,
        refused: dict[str, str],
        replaced: int = 0,
    ) -> list[Event]:
        """Commit the response (no tool runs unless it is durable); its events.

        The error results of calls that must not run commit with it, so no later start (a
        flush and retry, a crash recovery) can take them for calls still to run.
        """
        results = [
            ToolResultEntry(c.id, c.name, refused[c.id], True, now())
            for c in message.tool_calls
            if c.id in refused
        ]
        entry = AssistantEntry(
            content=message.content,
            tool_calls=message.tool_calls,
            provider=message.provider,
            provider_data=message.provider_data,
            model=done.model or self.model.name,
            usage=done.usage,
            timestamp=now(),
            response_id=done.response_id,
            provider_cache=done.provider_cache,
            usage_estimated=not self.model.profile.reports_usage or bool(done.usage_note),
            sent_at=_iso(self.writer.ledger.last_noted()),
            usage_note=done.usage_note,
            replaced_surrogates=replaced,
            cache_ttl=self._asked.ttl if self._asked is not None else "",
            cache_diagnose=self._asked is not None and self._asked.diagnose,
            first_token_at=self._first.at,
        )
        # A compaction the server made inside the reply opens its epoch right before it.
        opened = await opened_in_reply(self.writer, self.parts, self.model, done.compaction)
        saved = await self.writer.commit([*opened, entry, *results])
        measured = not done.usage_note and not opened  # a compaction's input is not this one's
        if self.model.profile.reports_usage and done.usage.input_tokens > 0 and measured:
            self.deps.budget.observe(request, done.usage.input_tokens)
        # A list, not a generator: every event comes after the commit.
        events: list[Event] = [
            ToolResultEvent(c.id, c.name, refused[c.id], True)
            for c in message.tool_calls
            if c.id in refused
        ]
        if saved:
            events.append(StepCommitted(step, saved[0].seq, saved[-1].seq, "response"))
        return events

    async def _settle(
        self,
        step: int,
        calls: Sequence[ToolCall],
        offered: Collection[str],
        usage: Usage,
    ) -> AsyncIterator[Event | StepOutcome]:
        """Run each call in order and commit its result; stop at the first one that must wait."""
        for call in calls:
            answer = self.parts.gate.unsaved(call.id)
            if answer is not None:
                if self.writer.pending:
                    # The answer must not overtake refused entries.
                    yield StepHeld(calls_wait=False)
                    return
                # Durable before the call runs: a decision without a result then means the
                # call started, and recovery closes it instead of running it twice.
                await self.writer.append([answer])
                self.parts.gate.record(answer)
            yield ToolCallStarted(call)
            started, result = now(), await self.parts.toolbox.run(call, offered)
            if result.kind == "paused":
                await self._commit_step(step, [result.request])
                self.parts.gate.record(result.request)
                asked = result.call or call  # the inner tool's call for a call_tool call
                request = ApprovalRequest(
                    call.id, asked.name, dict(asked.arguments), result.request.reason
                )
                yield ApprovalNeeded(request)
                yield StepPaused(
                    PromptResult("", step, usage, self.session_id, "approval_required", (request,))
                )
                return
            out = result.outcome
            entry = ToolResultEntry(call.id, call.name, out.content, out.is_error, now(), started)
            committed = await self._commit_step(step, [entry, *result.entries])
            yield ToolResultEvent(call.id, call.name, out.content, out.is_error)
            if committed is not None:
                yield committed
        if self.writer.pending:
            yield StepHeld(calls_wait=False)
            return
        yield StepContinue(usage)

    async def _commit_step(self, step: int, entries: list[LogEntry]) -> StepCommitted | None:
        saved = await self.writer.commit(entries)
        if not saved:
            return None
        return StepCommitted(step, saved[0].seq, saved[-1].seq, "tool_result")

    async def _used_ids(self, message: AssistantMessage) -> set[str]:
        if not message.tool_calls:
            return set()  # an answer without calls has no id to check
        view = await self.writer.epoch_view()
        used = {
            c.id
            for r in view.records
            if type(r.entry) is AssistantEntry  # one check per record, no call
            for c in r.entry.tool_calls
        }
        return used | self.parts.gate.known_call_ids()


CUT_BY_LIMIT = (
    "Error: the output limit cut this reply before the tool call was complete, so it was not"
    " run. The same request may be cut the same way again: ask for a smaller step or a higher"
    " output limit."
)


def refused_calls(done: ModelDone, message: AssistantMessage) -> dict[str, str]:
    """Call id → the error result of each call of ``message`` that must not run.

    Every call of a reply the output limit cut is refused: its arguments may be a fragment
    that parses as something else (a list cut short, ``1500`` cut to ``1``), and a complete
    call cannot be told apart from a cut one by every vendor. A call whose arguments were not
    one JSON object is refused with that reason.
    """
    calls = message.tool_calls
    if done.stop_reason == "max_tokens":
        return {c.id: CUT_BY_LIMIT for c in calls}
    return {
        calls[index].id: f"Error: the arguments of this tool call were {why}, so it was not run."
        for index, why in done.unusable_calls
        if index < len(calls)
    }


def _emptied(message: AssistantMessage, refused: dict[str, str]) -> list[ToolCall]:
    """The calls with refused ones' arguments emptied: a fragment's guess is never kept."""
    return [replace(c, arguments={}) if c.id in refused else c for c in message.tool_calls]


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.cached_input_tokens + b.cached_input_tokens,
        a.cache_write_tokens + b.cache_write_tokens,
    )


def approval_of(entry: ApprovalRequested, calls: Sequence[ToolCall]) -> ApprovalRequest:
    """The public form of a stored approval request (arguments from its call)."""
    call = next((c for c in calls if c.id == entry.call_id), None)
    arguments = dict(call.arguments) if call is not None else {}
    inner = arguments.get("arguments")
    if call is not None and call.name != entry.name and isinstance(inner, dict):
        arguments = dict(inner)  # a call_tool call: the gate asked about the inner tool
    return ApprovalRequest(entry.call_id, entry.name, arguments, entry.reason)


def _iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else ""
