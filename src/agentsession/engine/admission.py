"""Admission: preparing one provider call — one sample, the safe boundary, automatic compaction.

``Admitter`` is what a turn asks for the next request. It samples every component exactly once
per provider call and uses that one sample for everything at this boundary: the update message,
a new epoch's baseline, and — when the request is over the compaction threshold or the budget —
the baseline of the epoch a compaction opens, so the first request after a compaction cannot
carry one value in its baseline and another in an update. Before a compaction that the budget
forces, it checks that the prompt would fit afterwards (with an empty summary, the best case): a
prompt that cannot fit is rejected before anything is summarised or stored, and every rejection
carries the prompt text back. A stored item that alone cannot fit — bigger than what a request
can hold beside its system part and tools (a huge tool result, say) — is marked ``Omitted`` in
the same admission and shown as a placeholder from then on, so one oversized item never makes
every later prompt, ``retry()`` and ``compact()`` fail. It reads the log through the session's
``LogWriter`` (O(window)) and commits only compactions; the admission itself goes back to the
turn, which commits it right before the call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .._frozen import frozen
from ..boundary import (
    Admission,
    BoundaryInput,
    admit,
    build_request,
    epoch_tools,
    request_tools,
    window_of,
)
from ..budget import measure, total_tokens
from ..compaction import CompactionPlan, compaction_entries, plan_compaction
from ..context.component import ContextComponent, LoadResult
from ..context.engine import effective_state, fresh_baseline
from ..errors import (
    AgentSessionError,
    BudgetExceededError,
    ProviderError,
    StoreError,
    UsageError,
)
from ..hygiene import prompt_content
from ..log import (
    ContextEpoch,
    Dispatch,
    EpochReason,
    LogEntry,
    MidConversationSystemMessage,
    Omitted,
    Record,
    Summary,
    UserEntry,
    now,
)
from ..projection import project
from ..providers.base import Model
from ..request import ContentPart, Request, digest, text_of
from .deps import SessionDeps
from .epoch_view import EpochView, standing_reason
from .parts import SessionParts
from .summary_call import Prepared, Written, threshold_at, write_summary
from .writer import LogWriter

__all__ = ["Admitter", "Samples"]

Samples = dict[str, LoadResult]


@frozen
class Rejection:
    """An admission the budget refused: the error to raise and the request it measured."""

    error: BudgetExceededError
    request: Request | None  # ``None`` when the rejection came before a request was built
    kind: Literal["rejected"] = "rejected"


@dataclass
class Admitter:
    """Builds the admissions of one session; ``epoch_reason`` asks the next one for a new epoch."""

    deps: SessionDeps
    writer: LogWriter
    parts: SessionParts
    epoch_reason: EpochReason | None = None
    prepared: Prepared | None = None  # a background summary waiting for the next boundary

    async def sample(self) -> Samples:
        """Sample every component once: one sample serves the whole boundary."""
        return {c.key: await c.sample() for c in self.parts.components()}

    async def preview(self, promoted: Sequence[LogEntry], model: Model) -> Admission:
        """The admission ``promoted`` would lead to; nothing is admitted or compacted."""
        samples = await self.sample()
        return self._admission(await self._next_view(samples, model), promoted, samples, model, 1)

    async def preview_prompt(
        self,
        text: str | Sequence[ContentPart],
        skills: Sequence[str],
        metadata: Sequence[LogEntry],
        model: Model,
    ) -> Admission:
        """The admission ``prompt(text, skills=skills)`` would lead to; nothing changes.

        The prompt's skill selection (``skills``, ``$name``) and the skill set it would find are
        part of it, so the preview's request is the one ``prompt()`` sends.
        """
        user = UserEntry(prompt_content(text), timestamp=now())
        turn = await self.writer.user_turns()
        async with self.parts.preview_prompt(user, skills, turn) as selection:
            return await self.preview([user, *selection, *metadata], model)

    async def upcoming(self, promoted: Sequence[LogEntry], model: Model | None) -> Admission | str:
        """What ``preview`` gives for an inspection, or why there is none (no model, too big)."""
        if model is None:
            return "the session has no model to preview the next request with"
        try:
            return await self.preview(promoted, model)
        except AgentSessionError as exc:
            return str(exc)

    async def admit(self, promoted: Sequence[LogEntry], step: int, model: Model) -> Admission:
        """The admission of the next request, compacting first when it is too big."""
        config = self.deps.config
        # The components sampled are the ones the boundary reads (listed once, not twice).
        components = self.parts.components()
        samples = {c.key: await c.sample() for c in components}
        await self.adopt(samples, model)  # a background summary, if the log is as it was
        view = await self.writer.epoch_view()
        admission = self._checked(view, promoted, samples, model, step, components)
        if isinstance(admission, Rejection):
            rejected = admission.error
            omissions = self._oversized(admission.request, model)
            if omissions:
                promoted = [*promoted, *omissions]
                try:
                    return self._admission(view, promoted, samples, model, step)
                except BudgetExceededError as again:
                    rejected = again
            if not config.auto_compact:
                raise rejected from None
            await self._compact_to_fit(rejected, view, promoted, samples, model, step)
            return self._admission(await self.writer.epoch_view(), promoted, samples, model, step)
        limit = self.deps.budget.limit(
            model_window=model.profile.context_window,
            max_output_tokens=model.profile.max_output_tokens,
        )
        if config.auto_compact and admission.tokens > limit * config.compact_threshold:
            if step > 1 and threshold_at(self.deps, model) is not None:
                return admission  # inside a turn the provider's threshold edit is the net
            # The request fits: a summariser that fails here must not fail the prompt.
            try:
                compacted = await self.compact(samples, model)
            except ProviderError:
                return admission
            if compacted:
                view = await self.writer.epoch_view()
                return self._admission(view, promoted, samples, model, step)
        return admission

    async def _compact_to_fit(
        self,
        rejected: BudgetExceededError,
        view: EpochView,
        promoted: Sequence[LogEntry],
        samples: Samples,
        model: Model,
        step: int,
    ) -> None:
        """Compact so the prompt fits, or re-raise ``rejected`` having changed nothing."""
        plan = self._plan(view)
        if plan is None or view.epoch is None:
            raise rejected
        # The best case after compaction: the kept turns under a fresh baseline, no summary.
        # If even that does not fit, summarising would cost a call and hide history for nothing.
        state = effective_state(view.epoch, _mids(view.records))
        baseline, checkpoint, _ = fresh_baseline(state, self.parts.components(), samples)
        trial = ContextEpoch(
            view.epoch.epoch + 1, baseline, checkpoint, plan.cut_seq, "compaction", model.name
        )
        kept = [r for r in view.records if r.seq >= plan.cut_seq]
        self._admission(EpochView(trial, kept, False), promoted, samples, model, step)
        try:
            await self.compact(samples, model, plan=plan)
        except ProviderError as exc:
            raise BudgetExceededError(
                f"{rejected}; compacting the history to make room failed: {exc}",
                text=rejected.text,
                tokens=rejected.tokens,
                budget=rejected.budget,
                contributors=rejected.contributors,
            ) from exc

    def _oversized(self, request: Request | None, model: Model) -> list[Omitted]:
        """``Omitted`` marks for stored items of a rejected ``request`` too big to keep sending."""
        if request is None:
            return []
        limit = self.deps.budget.limit(
            model_window=model.profile.context_window,
            max_output_tokens=model.profile.max_output_tokens,
        )
        measured = measure(request, self.deps.budget.counter)
        stored: list[tuple[int, tuple[int, ...]]] = []
        room = limit
        for label, tokens in measured.contributors:
            index = _message_index(label)
            seqs = request.sources[index] if index is not None else ()
            if index is None:
                room -= tokens  # system and tools go with every request
            elif all(seq < self.writer.next_seq for seq in seqs):
                stored.append((tokens, seqs))
        # The new input is never omitted: the caller gets it back with the rejection.
        return [
            Omitted(seq, tokens, now()) for tokens, seqs in stored if tokens > room for seq in seqs
        ]

    def admitted(self) -> None:
        """The last admission was committed: a requested new epoch has started."""
        self.epoch_reason = None

    async def compaction_plan(self) -> CompactionPlan | None:
        """What a compaction now would summarise (``None``: nothing)."""
        return self._plan(await self.writer.epoch_view())

    def _plan(self, view: EpochView) -> CompactionPlan | None:
        if view.epoch is None:
            return None
        projected = project(view.records, view.epoch)
        return plan_compaction(projected, self.deps.config.keep_user_turns)

    async def compact(
        self,
        samples: Samples,
        model: Model,
        *,
        plan: CompactionPlan | None = None,
        reason: str = "",
    ) -> bool:
        """Summarise the history before the kept turns and commit the summary with its epoch.

        ``False`` when there is nothing to summarise. The summariser's failure raises (as one of
        the package's errors) and leaves the old epoch untouched.
        """
        view = await self.writer.epoch_view()
        plan = plan or self._plan(view)
        if plan is None or view.epoch is None:
            return False
        # The failure leaves translated (``raise … from``), as one of the package's errors.
        written = await write_summary(
            self.deps, self.writer, plan, model, self.rebuild, warm=not self.cold(), reason=reason
        )
        if not written.text:
            with contextlib.suppress(StoreError):
                await self.writer.append([written.call])
            raise ProviderError("the summariser returned an empty summary")
        # After the epoch, so the summary stays at ``summary_seq``.
        await self.writer.append([*self._entries(view, written, samples, model), written.call])
        self.epoch_reason = None
        return True

    async def adopt(self, samples: Samples, model: Model) -> bool:
        """Commit the prepared summary with its epoch if nothing was logged since it was made."""
        prepared, self.prepared = self.prepared, None
        if prepared is None or not prepared.current(self.writer.next_seq, model.name):
            return False
        view = await self.writer.epoch_view()
        await self.writer.append(list(self._entries(view, prepared.written, samples, model)))
        self.epoch_reason = None
        return True

    def _entries(
        self, view: EpochView, written: Written, samples: Samples, model: Model
    ) -> tuple[Summary, ContextEpoch]:
        assert view.epoch is not None  # a plan was made from it
        return compaction_entries(
            written.plan,
            written.text,
            epoch=view.epoch,
            state=effective_state(view.epoch, _mids(view.records)),
            components=self.parts.components(),
            samples=samples,
            model=model.name,
            provider=model.profile.provider,
            summary_seq=self.writer.next_seq,
            timestamp=now(),
            # Like every epoch, the compaction's names the tools its requests declare.
            tools=tuple(t.spec.name for t in self.parts.toolbox.offered(model.profile)),
            block=written.block,
        )

    async def _next_view(self, samples: Samples, model: Model) -> EpochView:
        """The view the next prompt reads: with the prepared summary, where it will be adopted."""
        view, prepared, seq = await self.writer.epoch_view(), self.prepared, self.writer.next_seq
        if prepared is None or view.epoch is None or not prepared.current(seq, model.name):
            return view
        summary, epoch = self._entries(view, prepared.written, samples, model)
        kept = [r for r in view.records if r.seq >= prepared.written.plan.cut_seq]
        return EpochView(epoch, [*kept, Record(seq, summary), Record(seq + 1, epoch)], False)

    def cold(self) -> bool:
        """Whether the provider's cache has expired since the last request (runtime clock)."""
        clock, ledger = self.deps.clock, self.writer.ledger
        last = ledger.last_noted()
        if clock is None or last is None:
            return False
        return (clock() - last).total_seconds() > ledger.ttl_seconds

    async def rebuild(self, model: Model) -> Request:
        """The request of the current epoch exactly as last admitted (nothing sampled)."""
        view = await self.writer.epoch_view()
        if view.epoch is None:
            raise UsageError("nothing to retry: no request was ever admitted")
        projected = project(view.records, view.epoch)
        window = window_of(projected, self.deps.config)
        offered = [t.spec for t in self.parts.toolbox.offered(model.profile)]
        tools = request_tools(
            view.epoch,
            _mids(view.records),
            offered,
            self.parts.toolbox.specs(),
            native=model.profile.native_tool_changes,
        )
        if tools is None:
            raise UsageError(
                "the last request cannot be rebuilt: a tool it declared is no longer known"
            )
        return build_request(projected, window, view.epoch.baseline, tools, model.profile.provider)

    async def retry_start(
        self, tail: Sequence[Record], model: Model
    ) -> Literal["replay", "continue"]:
        """How ``retry()`` continues an unanswered step (``tail`` starts at its dispatch).

        ``replay`` when the rebuilt request is the dispatched one (same digest); ``continue`` (a
        fresh admission, a new epoch) when the model was switched since; ``UsageError`` naming
        what changed when the same request can no longer be sent.
        """
        dispatch = tail[0].entry
        assert isinstance(dispatch, Dispatch)
        if dispatch.model != model.name:
            return "continue"
        rebuilt = await self.rebuild(model)
        if digest(rebuilt) != dispatch.digest:
            from ..log.fingerprint import mismatch  # only this refusal needs it

            raise UsageError(
                "retry() cannot send the failed request again: the runtime changed since it was"
                f" dispatched ({mismatch(rebuilt, dispatch)}); call prompt() to continue"
                " with the current runtime instead"
            )
        return "replay"

    async def offered(self, model: Model) -> tuple[str, ...]:
        """The tools the last admitted request offered (read back from the log)."""
        view = await self.writer.epoch_view()
        current = [t.name for t in self.parts.toolbox.offered(model.profile)]
        if view.epoch is None:
            return tuple(current)
        return epoch_tools(view.epoch, _mids(view.records), current).offered

    def _admission(
        self,
        view: EpochView,
        promoted: Sequence[LogEntry],
        samples: Samples,
        model: Model,
        step: int,
    ) -> Admission:
        """The admission of ``promoted``; ``BudgetExceededError`` when its request does not fit."""
        admission = self._checked(view, promoted, samples, model, step)
        if isinstance(admission, Rejection):
            raise admission.error
        return admission

    def _checked(
        self,
        view: EpochView,
        promoted: Sequence[LogEntry],
        samples: Samples,
        model: Model,
        step: int,
        components: list[ContextComponent] | None = None,
    ) -> Admission | Rejection:
        """The admission of ``promoted``, or the request the budget rejected and why."""
        users = [e for e in promoted if isinstance(e, UserEntry)]
        text = text_of(users[0].content) if users else None
        profile = model.profile
        toolbox = self.parts.toolbox
        data = BoundaryInput(
            records=view.records,
            epoch=view.epoch,
            next_seq=self.writer.next_seq,
            promoted=promoted,
            components=self.parts.components() if components is None else components,
            samples=samples,
            tools=[t.spec for t in toolbox.offered(profile)],
            config=self.deps.config,
            model=model.name,
            step=step,
            message_count=len(self.writer.transcript) + len(users),
            epoch_reason=self.epoch_reason or standing_reason(view, model),
            timestamp=now(),
            epoch_dispatched=view.dispatched,
            provider=profile.provider,
            tool_specs=toolbox.specs(),
            native_tool_changes=profile.native_tool_changes,
            removal_texts=self.parts.removals,
            cold=self.cold(),
        )

        measured: Request | None = None  # the request preflight saw, once it got that far
        budget = self.deps.budget
        window, output = profile.context_window, profile.max_output_tokens

        def preflight(request: Request) -> int:
            nonlocal measured
            measured = request
            total = total_tokens(request, budget.counter)
            if total <= budget.limit(model_window=window, max_output_tokens=output):
                return total
            # Over the limit: the check raises, naming the biggest parts.
            checked = budget.check(
                request, model_window=window, max_output_tokens=output, text=text
            )
            return checked.total

        try:
            return admit(data, preflight)
        except BudgetExceededError as exc:
            return Rejection(exc, measured)


def _message_index(label: str) -> int | None:
    """The message index of a measurement label ``message[i]:role``, else ``None``."""
    if not label.startswith("message["):
        return None
    return int(label[len("message[") : label.index("]")])


def _mids(records: Sequence[Record]) -> list[MidConversationSystemMessage]:
    return [r.entry for r in records if isinstance(r.entry, MidConversationSystemMessage)]
