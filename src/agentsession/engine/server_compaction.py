"""A compaction the provider made inside a reply (Anthropic's threshold mode), as log entries.

The server compacted the request it was sent before answering: its reply opens with the
compaction block, and the rest of the reply was written from the block alone. The log keeps
that truth: a ``Summary`` holding the block, and the epoch it opens, are committed with the
reply, right before it, so the reply and everything after it belong to the new epoch, which
starts at the reply (no turn is kept verbatim: the block stands for all of them). The next
request sends the block first, then the rest of the reply, then its tool results — the
assistant message the server wrote, in one piece (``providers.anthropic_messages``).

The epoch's baseline folds what the model was told (the old baseline and every admitted
update): nothing is sampled inside a step, and the next boundary sends what changed since, as
after any compaction. A block without summary text (the server's failed compaction, which it
treats as nothing) opens nothing; its iteration is billed with the reply all the same.
"""

from __future__ import annotations

from typing import Any

from ..compaction import CompactionPlan, compaction_entries
from ..context.component import UNAVAILABLE, LoadResult
from ..context.engine import effective_state
from ..hygiene import replace_surrogates
from ..log import LogEntry, MidConversationSystemMessage, ProviderCompaction, now
from ..providers.base import Model
from .parts import SessionParts
from .writer import LogWriter

__all__ = ["opened_in_reply"]


async def opened_in_reply(
    writer: LogWriter, parts: SessionParts, model: Model, block: dict[str, Any] | None
) -> list[LogEntry]:
    """The ``Summary`` and ``ContextEpoch`` a reply's compaction ``block`` opens (or none).

    To be committed in one transaction right before the reply's own entries: the epoch's
    history starts two seqs after the summary, at the reply.
    """
    if block is None:
        return []
    text = block.get("content")
    if not isinstance(text, str) or not text.strip():
        return []
    view = await writer.epoch_view()
    if view.epoch is None:
        return []
    seq = writer.next_seq + len(writer.pending)
    components = parts.components()
    # Every component "unavailable": the new baseline is what the model was last told.
    samples: dict[str, LoadResult] = {c.key: UNAVAILABLE for c in components}
    mids = [r.entry for r in view.records if isinstance(r.entry, MidConversationSystemMessage)]
    summary, epoch = compaction_entries(
        CompactionPlan(head=(), cut_seq=seq + 2, kept_turns=0),
        replace_surrogates(text)[0].strip(),
        epoch=view.epoch,
        state=effective_state(view.epoch, mids),
        components=components,
        samples=samples,
        model=model.name,
        provider=model.profile.provider,
        summary_seq=seq,
        timestamp=now(),
        tools=tuple(t.spec.name for t in parts.toolbox.offered(model.profile)),
        block=ProviderCompaction(model.profile.wire_format, dict(block)),
    )
    return [summary, epoch]
