"""What an inspection is rebuilt from besides the log: ``InspectionInputs`` and ``inspect_records``.

``session.inspect()`` gathers these from the open session (its tools, configuration, budget,
the previewed next admission and the in-memory skill selections), then reads the log and
rebuilds. Kept apart as plain values so the rebuild can run where the session is not: another
process reads the log from its own store connection and calls ``inspect_records`` with the same
inputs, which is how a server keeps a long rebuild out of its own interpreter. Nothing here is
read from the log beyond the current epoch: what the whole log holds (the system-context
checkpoints among it) is taken from the records the rebuild reads anyway, so a process that
hands the rebuild elsewhere never decodes the session's history itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from .._frozen import frozen
from ..boundary import Admission
from ..budget import BudgetPolicy
from ..config import Config
from ..log import Record, RuntimeContextSnapshot, SystemPromptCheckpoint
from ..request import ToolSpec
from ..store.base import SessionInfo
from .annotate import ContextView
from .views import Inspection, inspect_log, next_view

__all__ = ["InspectionInputs", "inspect_records", "next_context"]


@frozen
class InspectionInputs:
    """Everything ``inspect_log`` needs but the log, as of one moment of an open session.

    ``info`` bounds the log read (``[0, info.next_seq)``); ``limit`` is the next request's
    token limit for the session's model; ``upcoming`` the previewed admission of the next
    request, or why there is none.
    """

    info: SessionInfo
    specs: Mapping[str, ToolSpec]
    tools: tuple[str, ...]
    config: Config
    budget: BudgetPolicy
    limit: int
    upcoming: Admission | str
    runtime_contexts: tuple[RuntimeContextSnapshot, ...] = ()


def inspect_records(inputs: InspectionInputs, records: Sequence[Record]) -> Inspection:
    """The inspection of ``records`` (the log from seq 0, in order) with ``inputs``.

    Its checkpoints are the ones among ``records``: every one is durable, so they are what the
    open session's ``system_prompt_checkpoints()`` gave up to ``inputs.info.next_seq``.
    """
    found = inspect_log(
        inputs.info,
        records,
        specs=inputs.specs,
        config=inputs.config,
        budget=inputs.budget,
        tools=inputs.tools,
        upcoming=inputs.upcoming,
        limit=inputs.limit,
    )
    checkpoints = tuple(r.entry for r in records if isinstance(r.entry, SystemPromptCheckpoint))
    return replace(found, checkpoints=checkpoints, runtime_contexts=inputs.runtime_contexts)


def next_context(
    inputs: InspectionInputs, records: Sequence[Record]
) -> tuple[ContextView | None, str]:
    """What ``inspect_records`` gives as ``next_request`` and ``next_error``, and nothing else.

    For a caller that shows only the next request: no past request is rebuilt or measured.
    """
    error = inputs.upcoming if isinstance(inputs.upcoming, str) else ""
    counter = inputs.budget.counter
    return next_view(inputs.upcoming, records, counter, inputs.limit), error
