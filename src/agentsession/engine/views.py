"""What a session shows without writing: its views, the next request previewed, the inspection.

``SessionViews`` is a part of ``Session`` (mixed in, like ``SessionCosts`` and
``SessionApprovals``) so the session module stays about turns. Nothing here admits or writes:
the id, title, model and transcript, the raw log, the system-context records, the request the
next prompt would send (neutral and as its wire body) and ``inspect()``.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..log import LogEntry, Record, RuntimeContextSnapshot, SystemPromptCheckpoint
from ..providers.base import Model
from ..request import ContentPart, Message, Request
from ..store.base import SessionInfo
from .admission import Admitter
from .deps import SessionDeps
from .guard import Guard
from .next_controls import cache_controls, preview_body
from .parts import SessionParts
from .writer import LogWriter

if TYPE_CHECKING:
    from ..inspection.inputs import InspectionInputs
    from ..inspection.views import Inspection

__all__ = ["SessionViews"]


#: Entries an inspection reads from the store at a time. Each page is a hand-over to the store's
#: thread and a read transaction of its own (pages of 200 cost a 10,000-entry report 20–30 ms
#: of CPU); a page of 1,000 keeps another caller of the store waiting for about 10 ms at most.
_INSPECT_PAGE = 1_000


class SessionViews:
    """The views, previews and inspection of a ``Session``."""

    _deps: SessionDeps
    _info: SessionInfo
    _model: Model | None
    _writer: LogWriter
    _parts: SessionParts
    _admitter: Admitter
    _guard: Guard

    if TYPE_CHECKING:

        def _metadata(self) -> list[LogEntry]:
            """Changes recorded while idle that the next admission commits (``Session``)."""

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
        """The model this session currently talks to.

        Raises:
            UsageError: The session has no model (give the Runtime one, or ``open_session``).
        """
        if self._model is None:
            raise UsageError(
                f"session {self.id} has no model: give the Runtime a model, or pass"
                " open_session(id, model=...)"
            )
        return self._model

    @property
    def messages(self) -> Sequence[Message]:
        """The user transcript (user, assistant, tool messages): a read-only, lazy snapshot.

        Stored messages are read a page at a time when first asked for; ``len()`` reads nothing.
        """
        return self._writer.transcript.view()

    async def transcript(self, *, limit: int = 50, before: int | None = None) -> list[Message]:
        """Up to ``limit`` messages before index ``before`` of ``messages`` (default: the end).

        Args:
            limit: How many messages at most.
            before: The index in ``messages`` to stop before; ``None`` pages from the end.
        """
        return await asyncio.to_thread(self._writer.transcript.page, limit, before)

    @property
    def next_seq(self) -> int:
        """The seq this session's next durable entry gets, as far as it knows the log.

        Its log as read when it was opened, plus what it has written since; another process's
        entries appear here once this session writes or refreshes.
        """
        return self._writer.next_seq

    @property
    def busy(self) -> bool:
        """Whether a turn is running (one whose stream was left is over for its caller)."""
        return self._guard.busy

    def system_prompt_checkpoints(self) -> list[SystemPromptCheckpoint]:
        """The system-context record of each dispatched request that changed it (copies)."""
        return copy.deepcopy(self._writer.checkpoints)

    def runtime_contexts(self) -> list[RuntimeContextSnapshot]:
        """Explicit skill selections saved with user turns (copies): committed, then pending."""
        turns = self._writer.transcript.user_turns()
        found = self._parts.runtime_contexts(turns, pending=self._guard.busy)
        found.extend(e for e in self._writer.pending if isinstance(e, RuntimeContextSnapshot))
        return copy.deepcopy(found)

    async def log(self, start: int = 0, end: int | None = None) -> list[Record]:
        """Raw log records in ``[start, end)`` (for inspection and export).

        Args:
            start: The first seq to read.
            end: The seq to stop before; ``None`` reads to the end of the log.

        Raises:
            StoreError: The store failed or holds an entry that does not decode.
        """
        return await self._deps.store.read(self.id, start, end)

    async def preview_request(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> Request:
        """The neutral request ``prompt(text, skills=skills)`` would send; nothing is admitted.

        Args:
            text: The user's message: a string, or content parts (text and images).
            skills: Skills to select for this turn, by name (as ``$name`` in the text does).

        Raises:
            UsageError: The text is not valid Unicode or names an unknown skill.
            BudgetExceededError: The request would not fit the context budget.
            ContextLoadError: A context component's loader failed.
        """
        await self._guard.settle_dropped()  # a stream left early records how it ended first
        # Steers waiting join the prompt's admission after its own entries, as prompt() sends.
        promoted = [*self._metadata(), *self._parts.inbox.preview_steers()]
        admission = await self._admitter.preview_prompt(text, skills, promoted, self.model)
        return admission.request

    async def preview_body(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> dict[str, Any]:
        """The JSON body of the request ``prompt(text, skills=skills)`` would send first.

        As the model's SDK sends it: cache key, lifetime, diagnostics and breakpoints included
        (the neutral form for a model without a wire format). Nothing is admitted.

        Args:
            text: The user's message: a string, or content parts (text and images).
            skills: Skills to select for this turn, by name (as ``$name`` in the text does).

        Raises:
            UsageError: The text is not valid Unicode or names an unknown skill.
            BudgetExceededError: The request would not fit the context budget.
            ContextLoadError: A context component's loader failed.
        """
        request = await self.preview_request(text, skills=skills)
        deps = self._deps
        from .summary_call import threshold_at  # the threshold edit rides on the next call

        trigger = threshold_at(deps, self.model)
        ledger = self._writer.ledger
        controls = await cache_controls(deps.config, ledger, deps.store, self.id, trigger)
        return preview_body(request, self.model, controls)

    async def inspect(self) -> Inspection:
        """The session as its log tells it; nothing is admitted or written.

        Timeline, turns, epochs, every dispatched request rebuilt, and the next request
        previewed and annotated (``Inspection.next_request``).
        """
        return await self._inspected(await self._inspection_inputs())

    async def _inspected(self, inputs: InspectionInputs) -> Inspection:
        """The inspection from ``inputs`` (``_inspection_inputs``) and the log they bound."""
        from ..inspection.inputs import inspect_records  # loads with the first inspection

        # The log a page at a time, so a store's other callers (a server's other sessions)
        # get their turn between pages; then every request is rebuilt on a worker thread, so
        # an application's event loop goes on meanwhile.
        records: list[Record] = []
        for start in range(0, inputs.info.next_seq, _INSPECT_PAGE):
            records += await self.log(start, min(start + _INSPECT_PAGE, inputs.info.next_seq))
        return await asyncio.to_thread(inspect_records, inputs, records)

    async def _inspection_inputs(self) -> InspectionInputs:
        """What ``inspect()`` rebuilds from besides the log (a server rebuilds elsewhere).

        The next admission previewed, the tools, configuration and budget, the in-memory
        skill selections and the log's length now; all plain values another process can take
        (``inspection.inputs``). The stored checkpoints are not read here: the rebuild takes
        them from the log it reads (``inspect_records``).
        """
        from ..inspection.inputs import InspectionInputs
        from ..inspection.views import request_limit

        promoted = [*self._metadata(), *self._parts.inbox.preview_steers()]
        upcoming = await self._admitter.upcoming(promoted, self._model)
        info = await self._deps.store.get_session(self.id)
        return InspectionInputs(
            info=info,
            specs=self._parts.toolbox.specs(),
            tools=tuple(t.name for t in self._deps.tools),
            config=self._deps.config,
            budget=self._deps.budget,
            limit=request_limit(self._deps.budget, self._model),
            upcoming=upcoming,
            runtime_contexts=tuple(self.runtime_contexts()),
        )
