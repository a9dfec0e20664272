"""Admission: preparing one provider call — one sample, the safe boundary, automatic compaction.

``Admitter`` is what the session asks for the next request. It samples every component exactly
once per provider call and uses that one sample for everything at this boundary: the update
message, a new epoch's baseline, and — when the request is over the compaction threshold or the
budget — the baseline of the epoch a compaction opens, so the first request after a compaction
cannot carry one value in its baseline and another in an update. It reads the log through the
session's ``LogWriter`` (O(window)) and commits only compactions; the admission itself is
returned for the session to commit right before the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .boundary import Admission, BoundaryInput, admit, build_request, window_of
from .compaction import compaction_entries, plan_compaction, summary_request
from .context.component import LoadResult
from .context.engine import effective_state
from .deps import SessionDeps
from .errors import BudgetExceededError, ProviderError, UsageError
from .log import (
    ContextEpoch,
    EpochReason,
    LogEntry,
    MidConversationSystemMessage,
    UserEntry,
    now,
)
from .model_call import as_package_error
from .projection import project
from .providers.base import Model, complete
from .request import Request, text_of
from .writer import EpochView, LogWriter

__all__ = ["Admitter", "Samples"]

Samples = dict[str, LoadResult]


@dataclass
class Admitter:
    """Builds the admissions of one session; ``epoch_reason`` asks the next one for a new epoch."""

    deps: SessionDeps
    writer: LogWriter
    epoch_reason: EpochReason | None = None

    async def sample(self) -> Samples:
        """Sample every component once: one sample serves the whole boundary."""
        return {c.key: await c.sample() for c in self.deps.components()}

    async def preview(self, promoted: Sequence[LogEntry], model: Model) -> Request:
        """The request ``promoted`` would lead to; nothing is admitted or compacted."""
        samples = await self.sample()
        return self._admission(await self.writer.epoch_view(), promoted, samples, model, 1).request

    async def admit(self, promoted: Sequence[LogEntry], step: int, model: Model) -> Admission:
        """The admission of the next request, compacting first when it is too big."""
        config = self.deps.config
        samples = await self.sample()
        try:
            admission = self._admission(
                await self.writer.epoch_view(), promoted, samples, model, step
            )
        except BudgetExceededError:
            if not config.auto_compact or not await self.compact(samples, model):
                raise
            return self._admission(await self.writer.epoch_view(), promoted, samples, model, step)
        limit = self.deps.budget.limit(
            model_window=model.profile.context_window,
            max_output_tokens=model.profile.max_output_tokens,
        )
        if config.auto_compact and admission.tokens > limit * config.compact_threshold:
            # The request fits: a summariser that fails here must not fail the prompt.
            try:
                compacted = await self.compact(samples, model)
            except ProviderError:
                return admission
            if compacted:
                view = await self.writer.epoch_view()
                return self._admission(view, promoted, samples, model, step)
        return admission

    def admitted(self) -> None:
        """The last admission was committed: a requested new epoch has started."""
        self.epoch_reason = None

    async def compact(self, samples: Samples, model: Model) -> bool:
        """Summarise the history before the kept turns and commit the summary with its epoch.

        ``False`` when there is nothing to summarise. The summariser's failure raises (as one of
        the package's errors) and leaves the old epoch untouched.
        """
        view = await self.writer.epoch_view()
        if view.epoch is None:
            return False
        plan = plan_compaction(project(view.records, view.epoch), self.deps.config.keep_user_turns)
        if plan is None:
            return False
        summarizer = self.deps.summarizer or model
        budget = self.deps.budget.budget(summarizer.profile.context_window)
        request = summary_request(plan.head, self.deps.budget.counter, budget)
        try:
            done = await complete(summarizer, request)
        except Exception as exc:
            raise as_package_error(exc, "the summariser") from exc
        text = done.message.content.strip()
        if not text:
            raise ProviderError("the summariser returned an empty summary")
        mids = [r.entry for r in view.records if isinstance(r.entry, MidConversationSystemMessage)]
        entries = compaction_entries(
            plan,
            text,
            epoch=view.epoch,
            state=effective_state(view.epoch, mids),
            components=self.deps.components(),
            samples=samples,
            model=model.name,
            summary_seq=self.writer.next_seq,
            timestamp=now(),
        )
        await self.writer.append(entries)
        self.epoch_reason = None
        return True

    async def rebuild(self, model: Model) -> Request:
        """The request of the current epoch exactly as last admitted (nothing sampled)."""
        view = await self.writer.epoch_view()
        if view.epoch is None:
            raise UsageError("nothing to retry: no request was ever admitted")
        projected = project(view.records, view.epoch)
        window = window_of(projected, self.deps.config)
        tools = [t.spec for t in self.deps.tools]
        return build_request(projected, window, view.epoch.baseline, tools, model.profile.provider)

    def _admission(
        self,
        view: EpochView,
        promoted: Sequence[LogEntry],
        samples: Samples,
        model: Model,
        step: int,
    ) -> Admission:
        users = [e for e in promoted if isinstance(e, UserEntry)]
        text = text_of(users[0].content) if users else None
        profile = model.profile
        data = BoundaryInput(
            records=view.records,
            epoch=view.epoch,
            next_seq=self.writer.next_seq,
            promoted=promoted,
            components=self.deps.components(),
            samples=samples,
            tools=[t.spec for t in self.deps.tools],
            config=self.deps.config,
            model=model.name,
            step=step,
            message_count=len(self.writer.transcript) + len(users),
            epoch_reason=self.epoch_reason or _switched(view.epoch, model),
            timestamp=now(),
            epoch_dispatched=view.dispatched,
            provider=profile.provider,
        )

        def preflight(request: Request) -> int:
            return self.deps.budget.check(
                request,
                model_window=profile.context_window,
                max_output_tokens=profile.max_output_tokens,
                text=text,
            ).total

        return admit(data, preflight)


def _switched(epoch: ContextEpoch | None, model: Model) -> EpochReason | None:
    """``"model_switch"`` when the epoch was rendered for another model than the current one.

    This covers a session reopened in a process configured with a different model.
    """
    if epoch is not None and epoch.model and epoch.model != model.name:
        return "model_switch"
    return None
