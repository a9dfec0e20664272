"""Inspection views: a session's log as typed values, for the command line, reports and UIs.

``inspect_log`` reads a whole log once and returns an ``Inspection``: the timeline (every entry,
described in one line; a kind this module does not know is shown from its stored fields, so a
new kind appears without changes here), the turns, the epochs with their baseline sections, and
every dispatched request rebuilt from the log (``inspect.rebuild_all``) with its prompt size
split into the part that repeats the previous request's prefix — what a provider's prompt cache
can serve — and the new part, beside the provider-reported figures and the local diagnosis.
``annotate.context_view`` (re-exported) annotates one request part by part. Nothing here writes
or calls a model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import field, replace

from .._frozen import frozen
from ..boundary import Admission
from ..budget import (
    BudgetPolicy,
    TokenCounter,
)
from ..codec import builder
from ..config import Config
from ..errors import UsageError
from ..ledger import CostSummary, charges_of, summarize
from ..log import (
    ApprovalRequested,
    AssistantEntry,
    ContextEpoch,
    Dispatch,
    InputDelivered,
    Interrupted,
    ModelSwitched,
    ProviderFailed,
    Record,
    RuntimeContextSnapshot,
    SystemPromptCheckpoint,
    UserEntry,
)
from ..providers.base import Model, ModelProfile
from ..providers.cache_controls import CacheControls
from ..request import ToolSpec, text_of
from ..store.base import SessionInfo
from .annotate import ContextView, Part, context_view
from .describe import Category, category_of, describe, preview
from .rebuild import rebuild_all
from .requests import RequestInfo, _requests
from .sent import next_controls, sent_controls
from .timing import TimingSpan, TurnUsage, attributed_turns, spans_by_turn, usage_by_turn

__all__ = [
    "Category",
    "ContextView",
    "EpochInfo",
    "Inspection",
    "MessageCounts",
    "Part",
    "RequestInfo",
    "TimelineItem",
    "TimingSpan",
    "TurnInfo",
    "TurnUsage",
    "context_view",
    "inspect_log",
    "last_model",
    "next_view",
    "past_context",
    "request_limit",
    "turn_marks",
]


@frozen
class TimelineItem:
    """One log entry on the timeline: ``turn`` is 0 before the first user message."""

    seq: int
    kind: str
    category: Category
    turn: int
    timestamp: str
    title: str
    text: str = ""


@frozen
class EpochInfo:
    """A context epoch: why it started, for which model, and its baseline sections."""

    number: int
    seq: int
    reason: str
    model: str
    timestamp: str
    turn: int
    history_start: int
    sections: tuple[Part, ...]
    tools: tuple[str, ...] | None
    removed: tuple[str, ...]


@frozen
class TurnInfo:
    """A user turn: its prompt, how many requests and tool calls it took, how it ended.

    ``outcome``: ``answered``, ``running``, ``unfinished``, ``failed``, ``cancelled``,
    ``interrupted``, ``waiting for approval``, or ``steered`` (a steer arrived after its tool
    results and the turn went on as the steer's: the next turn starts at that steer).

    ``usage`` is what its requests and side calls used and cost, as reported; ``spans`` its
    waterfall: each request, tool run and side call on the time axis (``inspection.timing``).
    """

    number: int
    seq: int
    timestamp: str
    text: str
    requests: int
    tool_calls: int
    outcome: str
    usage: TurnUsage = field(default_factory=TurnUsage)
    spans: tuple[TimingSpan, ...] = ()


@frozen
class MessageCounts:
    """Messages of the user transcript by role."""

    user: int = 0
    assistant: int = 0
    tool: int = 0


@frozen
class Inspection:
    """Everything inspection knows about one session, from its log alone.

    ``next_request`` is the request the next prompt would start from, annotated (nothing
    admitted; ``None`` with ``next_error`` saying why when it cannot be previewed).
    ``checkpoints`` and ``runtime_contexts`` are what ``session.system_prompt_checkpoints()``
    and ``session.runtime_contexts()`` return, as of this inspection.
    """

    session_id: str
    title: str | None
    created_at: str
    updated_at: str
    model: str
    counts: MessageCounts
    entries: int
    timeline: tuple[TimelineItem, ...]
    turns: tuple[TurnInfo, ...]
    epochs: tuple[EpochInfo, ...]
    requests: tuple[RequestInfo, ...]
    next_request: ContextView | None = None
    next_error: str = ""
    checkpoints: tuple[SystemPromptCheckpoint, ...] = ()
    runtime_contexts: tuple[RuntimeContextSnapshot, ...] = ()
    cost: CostSummary | None = None  # what the session cost (ledger.summarize)
    # the cache controls each request went out with (by dispatch seq), and the next one's
    controls: Mapping[int, CacheControls] = field(default_factory=dict)
    next_controls: CacheControls | None = None


def inspect_log(
    info: SessionInfo,
    records: Sequence[Record],
    *,
    specs: Mapping[str, ToolSpec],
    config: Config,
    budget: BudgetPolicy,
    tools: Sequence[str] = (),
    model: Model | None = None,
    upcoming: Admission | str = "",
    limit: int | None = None,
) -> Inspection:
    """The inspection of one session's whole log (``records`` in seq order, from seq 0).

    ``specs`` and ``tools`` are the tool declarations the caller knows and the application's
    tool names (see ``inspect.rebuild_all``); ``upcoming`` is the previewed admission of the next
    request for ``model``, or why there is none. ``limit``: the next request's token limit,
    given instead of ``model`` where the model is not at hand (another process).
    """
    counter = _Memo(budget.counter)
    next_error = upcoming if isinstance(upcoming, str) else ""
    if limit is None:
        limit = request_limit(budget, model)
    next_request = next_view(upcoming, records, counter, limit)
    rebuilt = rebuild_all(records, specs=specs, config=config, tools=tools)
    timeline, turns_of = _timeline(records)
    # A side call belongs to the turn that made it (a title is committed with the next turn).
    attributed = attributed_turns(records, turns_of)
    if attributed != turns_of:
        turns_of = attributed
        timeline = tuple(
            replace(i, turn=turns_of[i.seq]) if i.kind == "side_call" else i for i in timeline
        )
    spans = spans_by_turn(records, turns_of)
    charges = charges_of(records)
    kinds = Counter(r.entry.kind for r in records)
    counts = MessageCounts(kinds["user"], kinds["assistant"], kinds["tool_result"])
    epochs = tuple(
        _epoch_info(r, turns_of.get(r.seq, 0), counter)
        for r in records
        if isinstance(r.entry, ContextEpoch)
    )
    timed = {s.seq: s for turn in spans.values() for s in turn if s.kind == "request"}
    # Each message object is measured once (``_measure``); many carry the same texts (an
    # answer given again, a tool's name), so these are counted once each too.
    requests = _requests(records, rebuilt, turns_of, counter, config, timed)
    usage = usage_by_turn(charges, turns_of, config.prices)

    def limit_of(profile: ModelProfile) -> int:
        window, output = profile.context_window, profile.max_output_tokens
        return budget.limit(model_window=window, max_output_tokens=output)

    return Inspection(
        session_id=info.id,
        title=info.title,
        created_at=info.created_at,
        updated_at=info.updated_at,
        model=last_model(records),
        counts=counts,
        entries=len(records),
        timeline=timeline,
        turns=_turns(records, turns_of, usage, spans),
        epochs=epochs,
        requests=requests,
        next_request=next_request,
        next_error=next_error,
        cost=summarize(charges, config.prices),
        controls=sent_controls(info.id, records, config, limit_of),
        next_controls=next_controls(info.id, records, config, limit_of),
    )


def next_view(
    upcoming: Admission | str, records: Sequence[Record], counter: TokenCounter, limit: int
) -> ContextView | None:
    """The previewed next request annotated against ``records`` (``None``: ``upcoming`` says why).

    ``Inspection.next_request``; on its own for a caller that shows only the next request
    (``context``, ``/context``) and so need not rebuild the past ones.
    """
    if not isinstance(upcoming, Admission):
        return None
    return context_view(
        upcoming.request,
        records,
        counter,
        epoch=upcoming.epoch.epoch,
        epoch_reason=upcoming.epoch.reason,
        new_epoch=upcoming.new_epoch,
        limit=limit,
    )


def request_limit(budget: BudgetPolicy, model: Model | None) -> int:
    """The token limit a request for ``model`` has under ``budget`` (0: no model)."""
    if model is None:
        return 0
    profile = model.profile
    return budget.limit(
        model_window=profile.context_window, max_output_tokens=profile.max_output_tokens
    )


class _Memo:
    """A counter that counts each distinct text once: a session's requests repeat their texts."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens of ``text``, as the wrapped counter counts them."""
        found = self._counts.get(text)
        if found is None:
            found = self._counts[text] = self._counter.count(text)
        return found


def last_model(records: Sequence[Record]) -> str:
    """The model the log names last (a dispatch, an epoch or a switch); "" when none."""
    for record in reversed(records):
        entry = record.entry
        if isinstance(entry, Dispatch | ContextEpoch | ModelSwitched) and entry.model:
            return entry.model
    return ""


def _timeline(records: Sequence[Record]) -> tuple[tuple[TimelineItem, ...], dict[int, int]]:
    """Every entry described, and the turn number of each seq."""
    items: list[TimelineItem] = []
    turns: dict[int, int] = {}
    turn = 0
    item = builder(TimelineItem)  # ten thousand of them for a long session
    for record in records:
        entry = record.entry
        if isinstance(entry, UserEntry):
            turn += 1
        turns[record.seq] = turn
        title, text = describe(entry)
        stamp = getattr(entry, "timestamp", "")
        items.append(
            item(
                record.seq,
                entry.kind,
                category_of(entry.kind),
                turn,
                stamp if isinstance(stamp, str) else "",
                title,
                text,
            )
        )
    return tuple(items), turns


def _turns(
    records: Sequence[Record],
    turns_of: Mapping[int, int],
    usage: Mapping[int, TurnUsage],
    spans: Mapping[int, Sequence[TimingSpan]],
) -> tuple[TurnInfo, ...]:
    """Each user turn with its requests, tool calls and how it ended so far."""
    out: list[TurnInfo] = []
    none = TurnUsage()
    made = builder(TurnInfo)

    def info(
        opened: tuple[int, int, str, str], requests: int, calls: int, outcome: str
    ) -> TurnInfo:
        number = opened[0]
        used, timed = usage.get(number, none), tuple(spans.get(number, ()))
        return made(*opened, requests, calls, outcome, used, timed)

    opened: tuple[int, int, str, str] | None = None  # the turn so far: number, seq, time, text
    requests = calls = 0
    outcome = ""
    for record in records:
        entry = record.entry
        if isinstance(entry, UserEntry):
            if opened is not None:
                out.append(info(opened, requests, calls, outcome))
            text = preview(text_of(entry.content), 200)
            opened = (turns_of[record.seq], record.seq, entry.timestamp, text)
            requests, calls, outcome = 0, 0, "unfinished"
            continue
        if opened is None:
            continue
        if entry.kind == "dispatch":
            requests += 1
        if isinstance(entry, AssistantEntry):
            calls += len(entry.tool_calls)
        if isinstance(entry, InputDelivered) and entry.mode == "steer" and outcome == "running":
            outcome = "steered"  # it goes on as the steer's turn, after its tool results
        outcome = _outcome(entry) or outcome
    if opened is not None:
        out.append(info(opened, requests, calls, outcome))
    return tuple(out)


def turn_marks(records: Sequence[Record]) -> tuple[list[str], dict[int, str]]:
    """What a transcript marks, from the log alone and with no request rebuilt.

    Each user turn's outcome, in order (as ``Inspection.turns`` has them), and the title of the
    summary each turn holds, by its number (as ``Inspection.timeline``, the last when several).
    """
    turns_of: dict[int, int] = {}
    compacted: dict[int, str] = {}
    turn = 0
    for record in records:
        entry = record.entry
        if isinstance(entry, UserEntry):
            turn += 1
            turns_of[record.seq] = turn
        elif entry.kind == "summary":
            compacted[turn] = describe(entry)[0]
    return [t.outcome for t in _turns(records, turns_of, {}, {})], compacted


def _outcome(entry: object) -> str:
    """How a turn stands after ``entry`` ("" when the entry changes nothing about that)."""
    if isinstance(entry, AssistantEntry):
        return "running" if entry.tool_calls else "answered"
    if isinstance(entry, ProviderFailed):
        return "failed"
    if isinstance(entry, Interrupted):
        return "cancelled" if "cancel" in entry.reason else "interrupted"
    if isinstance(entry, ApprovalRequested):
        return "waiting for approval"
    return ""


def _epoch_info(record: Record, turn: int, counter: TokenCounter) -> EpochInfo:
    epoch = record.entry
    assert isinstance(epoch, ContextEpoch)
    sections = tuple(Part(key, counter.count(text), text) for key, text in epoch.baseline)
    return EpochInfo(
        number=epoch.epoch,
        seq=record.seq,
        reason=epoch.reason,
        model=epoch.model,
        timestamp=epoch.timestamp,
        turn=turn,
        history_start=epoch.history_start,
        sections=sections,
        tools=epoch.tools,
        removed=epoch.removed,
    )


def past_context(
    inspection: Inspection, number: int, records: Sequence[Record], counter: TokenCounter
) -> ContextView:
    """Dispatched request ``number`` (from 1) annotated against the log as it was then."""
    if not 1 <= number <= len(inspection.requests):
        raise UsageError(
            f"there is no dispatched request {number}: the session has {len(inspection.requests)}"
        )
    info = inspection.requests[number - 1]
    previous = inspection.requests[number - 2] if number > 1 else None
    reason = next((e.reason for e in inspection.epochs if e.number == info.epoch), "")
    return context_view(
        info.request,
        [r for r in records if r.seq < info.seq],
        counter,
        epoch=info.epoch,
        epoch_reason=reason,
        new_epoch=previous is None or previous.epoch != info.epoch,
    )
