"""Compaction: a model-written summary of old history opens a new context epoch.

The last ``keep_user_turns`` user turns stay verbatim (a turn is never split); everything the
model view holds before them — including an earlier summary — is summarised into fixed sections.
When the session's own model summarises (or a summariser of the same provider and model name),
the summary request *extends the live request*: the same system part, tools and windowed
history, with the summary instruction appended as the last user message, so the provider reads
its input from the prompt cache the conversation keeps warm (``cached_summary_request``). A
summariser of another provider or model cannot read that cache: it gets the history rendered as
plain text in a request of its own (``summary_request``). ``compaction_entries``
turns the summary text into the two values the session commits in one transaction: the
``Summary`` and the new epoch, whose baseline is rendered from the boundary's samples (components
are re-sampled, never summarised). A crash during compaction leaves the old epoch untouched.
Earlier history and mid-conversation messages stay in the log, out of the model view.

Where the provider compacts itself (``Config(compaction="provider"|"auto")``), it is sent the
live request whole (``provider_compaction_request``): its block replaces the whole history,
kept turns included, and is stored on the ``Summary``; ``provider_is_cheaper`` is the price
test ``"auto"`` makes. Every request then also carries the provider's threshold edit, its
trigger (``threshold_trigger``) halfway between the session's own compaction point and the
limit: a safety net for a turn whose tool results outgrow the session's own decision, which
falls between turns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ._frozen import frozen
from .budget import TokenCounter
from .config import ModelPrice
from .context.component import ContextComponent, LoadResult
from .context.engine import ComponentState, fresh_baseline
from .ledger import charge_usd
from .log import ContextEpoch, ProviderCompaction, Summary
from .projection import ViewMessage
from .request import (
    AssistantMessage,
    Request,
    SystemMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
    text_of,
)

__all__ = [
    "CACHED_SUMMARY_INSTRUCTIONS",
    "SUMMARY_INSTRUCTIONS",
    "CompactionPlan",
    "cached_summary_request",
    "compaction_entries",
    "plan_compaction",
    "provider_compaction_request",
    "provider_is_cheaper",
    "summary_request",
    "threshold_trigger",
]

_SECTIONS = """\
## Goal
## Facts and decisions
## Work done (tools used and what they returned that still matters)
## Open items and next steps

Keep names, numbers, paths and identifiers exactly. Do not invent anything. Do not restate the
system instructions; they are provided separately."""

SUMMARY_INSTRUCTIONS = f"""\
You are compacting an agent conversation so it can continue within a limited context window.
Write a faithful, self-contained summary of the conversation below using exactly these sections:

{_SECTIONS}"""

CACHED_SUMMARY_INSTRUCTIONS = (
    """\
[This message comes from the agent runtime, not from the user.] The conversation is being
compacted so it can continue within a limited context window. Do not answer or continue it and
call no tool. Write a faithful, self-contained summary of the conversation above, up to but not
including the user message that begins: «{first}». That message and everything after it
({kept} user turn(s)) stay verbatim after your summary. Use exactly these sections:

"""
    + _SECTIONS
)
"""The last user message of a cache-reading summary request (``{first}``, ``{kept}`` filled)."""

_QUOTE_CHARS = 160

_ITEM_CHARS = 2_000


@frozen
class CompactionPlan:
    """What to summarise (``head``) and where the kept tail starts in the log (``cut_seq``)."""

    head: tuple[ViewMessage, ...]
    cut_seq: int
    kept_turns: int


def plan_compaction(view: Sequence[ViewMessage], keep_user_turns: int) -> CompactionPlan | None:
    """Split the model view before its last ``keep_user_turns`` user turns (at least one).

    ``None`` when there is nothing before the kept tail to summarise.
    """
    starts = [
        i
        for i, v in enumerate(view)
        if isinstance(v.message, UserMessage) and not v.summary and not v.replayed
    ]
    keep = max(1, keep_user_turns)
    while keep > 0 and len(starts) <= keep:
        keep -= 1
    if keep == 0 or not starts:
        return None
    cut = starts[-keep]
    head = tuple(view[:cut])
    if not any(not isinstance(v.message, SystemMessage) for v in head):
        return None
    return CompactionPlan(head=head, cut_seq=view[cut].seqs[0], kept_turns=keep)


def render_history(view: Sequence[ViewMessage]) -> str:
    """The part of the history to summarise, as plain text (long items clipped)."""
    lines: list[str] = []
    for item in view:
        message = item.message
        match message:
            case UserMessage():
                lines.append(f"USER: {_clip(text_of(message.content))}")
            case AssistantMessage():
                if message.content:
                    lines.append(f"ASSISTANT: {_clip(message.content)}")
                for call in message.tool_calls:
                    args = json.dumps(call.arguments, ensure_ascii=False)
                    lines.append(f"TOOL CALL {call.name}: {_clip(args)}")
            case ToolResultMessage():
                label = "TOOL ERROR" if message.is_error else "TOOL RESULT"
                lines.append(f"{label} {message.name}: {_clip(text_of(message.content))}")
            case SystemMessage():
                continue  # context updates are re-rendered into the new baseline, not summarised
    return "\n\n".join(lines)


def _clip(text: str) -> str:
    if len(text) <= _ITEM_CHARS:
        return text
    return text[:_ITEM_CHARS] + f" […{len(text) - _ITEM_CHARS} more characters]"


def summary_request(head: Sequence[ViewMessage], counter: TokenCounter, budget: int) -> Request:
    """The summariser's request; the oldest lines are dropped if the text exceeds the budget."""
    text = render_history(head)
    limit = max(1, int(budget * 0.8))
    while counter.count(text) > limit and "\n\n" in text:
        text = text.split("\n\n", 1)[1]
    return Request(
        system=(("compaction", SUMMARY_INSTRUCTIONS),),
        messages=(UserMessage(f"Conversation to summarise:\n\n{text}"),),
    )


def cached_summary_request(live: Request, plan: CompactionPlan) -> Request | None:
    """The summary request that extends ``live`` (the conversation's request as last sent).

    ``live``'s system part, tools and messages stay exactly as they are — the provider reads
    them from its cache — and the instruction naming where the kept tail starts is appended as
    the last user message. ``None`` when ``live``'s window holds nothing before the kept tail
    (the window moved past it) or does not reach the tail's first message.
    """
    start = _tail_start(live, plan)
    if start is None:
        return None
    first = live.messages[start]
    assert isinstance(first, UserMessage)  # ``_tail_start`` holds it
    quoted = " ".join(text_of(first.content).split())
    if len(quoted) > _QUOTE_CHARS:
        quoted = quoted[:_QUOTE_CHARS] + "…"
    instruction = CACHED_SUMMARY_INSTRUCTIONS.format(first=quoted, kept=plan.kept_turns)
    return Request(
        system=live.system,
        messages=(*live.messages, UserMessage(instruction)),
        tools=live.tools,
        sources=(*live.sources, ()),
    )


def _tail_start(live: Request, plan: CompactionPlan) -> int | None:
    """Where ``live``'s messages reach the kept tail (``None``: nothing before it, or no tail)."""
    start = next(
        (i for i, seqs in enumerate(live.sources) if seqs and min(seqs) >= plan.cut_seq), None
    )
    if not start or not isinstance(live.messages[start], UserMessage):
        return None
    return start


def provider_compaction_request(live: Request) -> Request | None:
    """The request a provider compacts: ``live`` itself, when it ends a finished turn.

    The provider summarises the whole conversation it is sent, kept turns included, and a
    later request sends its block in place of all of it; ``live`` is the request the
    conversation's cache holds, so it is read from the cache. ``None`` (compact locally) when
    ``live`` does not end with a final answer: after a compaction in the middle of a turn the
    model would be asked to go on from the block alone.
    """
    if not live.messages:
        return None
    last = live.messages[-1]
    if not isinstance(last, AssistantMessage) or last.tool_calls:
        return None
    return live


def threshold_trigger(limit: int, compact_threshold: float) -> int:
    """The input tokens past which the provider compacts inside a request by itself.

    Halfway between the session's own compaction point (``limit * compact_threshold``) and
    ``limit``: above the point where the session compacts between turns, so the server only
    compacts a turn whose tool results grew past it before the session could decide.
    """
    own = limit * compact_threshold
    return int(own + (limit - own) / 2)


def provider_is_cheaper(
    *,
    prefix_tokens: int,
    warm: bool,
    provider_price: ModelPrice | None,
    local_tokens: int,
    local_price: ModelPrice | None,
    output_tokens: int = 2_000,
    provider_reads_cache: bool = True,
    local_cached_tokens: int = 0,
) -> bool:
    """Whether the provider's compaction is expected to cost no more than the local summary.

    The provider is sent ``prefix_tokens``, read from the cache when ``warm`` and
    ``provider_reads_cache`` (OpenAI's compaction takes no tools, so with tools it reads
    nothing); the local summary sends ``local_tokens``, of which ``local_cached_tokens`` come
    from the cache when ``warm`` (its cache-reading request; a summariser of another model reads
    none). Both write about ``output_tokens``. A missing price is no evidence against the
    provider: it is chosen.
    """
    if provider_price is None or local_price is None:
        return True
    cached = prefix_tokens if warm and provider_reads_cache else 0
    ours = Usage(prefix_tokens, output_tokens, cached_input_tokens=cached)
    theirs = Usage(
        local_tokens, output_tokens, cached_input_tokens=local_cached_tokens if warm else 0
    )
    return charge_usd(ours, provider_price)[0] <= charge_usd(theirs, local_price)[0]


def compaction_entries(
    plan: CompactionPlan,
    summary: str,
    *,
    epoch: ContextEpoch,
    state: Mapping[str, ComponentState],
    components: Sequence[ContextComponent],
    samples: Mapping[str, LoadResult],
    model: str,
    summary_seq: int,
    timestamp: str,
    tools: tuple[str, ...] | None = None,
    provider: str = "",
    block: ProviderCompaction | None = None,
) -> tuple[Summary, ContextEpoch]:
    """The summary entry and the epoch it opens, to be committed together at ``summary_seq``.

    ``state`` is the effective System Context of the old epoch: a component unavailable in
    ``samples`` keeps what the model was last told in the new baseline. ``block``: the
    provider's compaction block, when the provider wrote the summary.
    """
    baseline, checkpoint, removed = fresh_baseline(state, components, samples)
    opened = ContextEpoch(
        epoch=epoch.epoch + 1,
        baseline=baseline,
        checkpoint=checkpoint,
        history_start=plan.cut_seq,
        reason="compaction",
        model=model,
        removed=removed,
        summary_seq=summary_seq,
        timestamp=timestamp,
        tools=tools,
        provider=provider,
    )
    return Summary(summary, plan.cut_seq, timestamp, block), opened
