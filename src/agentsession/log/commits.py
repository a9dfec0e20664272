"""Which log entries committed together, told from the entries alone.

The log keeps no transaction marks, but each commit point writes a recognisable run (DESIGN §3): an
admission runs from its first promoted entry (the user input, its skill selection, idle changes,
omissions, each inbox input delivered: ``input_delivered`` and its user entry) through the update
message or epoch and the checkpoint to its ``dispatch`` record; a tool result is followed by what
the tool changed (skills loaded, unloaded or read again, store writes, instruction files found); a
compaction writes its summary and the epoch it opens; the entries that close an unfinished step
(synthetic results, ``interrupted``) share one timestamp. Every other entry is a commit of its own.
``commit_end`` says where the commit that holds an entry ends, so that a fork never splits what
committed together.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from .entries import ContextEpoch
from .stored import LogEntry, Record, dump_entry

__all__ = ["commit_end", "common_prefix", "only_inputs"]

#: Entries an admission may hold before its dispatch record, in the order it writes them.
_ADMITTED = frozenset(
    {
        "user",
        "input_delivered",
        "runtime_context",
        "model_switched",
        "permission_changed",
        "omitted",
        "mid_conversation_system",
        "epoch",
        "system_prompt_checkpoint",
    }
)
#: Entries that continue an admission, up to and including its dispatch record.
_IN_ADMISSION = (_ADMITTED - {"user"}) | {"dispatch"}
#: Entries a tool result commits with: what the call changed.
_TOOL_SIDE = frozenset(
    {
        "skill_loaded",
        "skill_unloaded",
        "skill_activated",
        "skill_store",
        "tool_loaded",
        "tool_unloaded",
        "instructions_found",
    }
)


def commit_end(records: Sequence[Record]) -> int:
    """The seq of the last entry of the commit holding ``records[0]``.

    ``records`` run on from that entry in seq order; when they end before the commit does (the
    end of the log), the last one given ends it.
    """
    first, rest = records[0], records[1:]
    kind = first.entry.kind
    if kind in _ADMITTED and not _compaction(first):
        return _run(first, rest, _admission_member(kind), "dispatch")
    if kind == "summary":
        return _run(first, rest[:1], _compaction, "epoch")
    if kind == "tool_result" or kind in _TOOL_SIDE:
        stamp = getattr(first.entry, "timestamp", None)

        def with_result(r: Record) -> bool:
            closing = r.entry.kind in ("tool_result", "interrupted")
            same = getattr(r.entry, "timestamp", None) == stamp
            return r.entry.kind in _TOOL_SIDE or (closing and same)

        return _run(first, rest, with_result, "interrupted")
    return first.seq


async def read_commit_end(
    read: Callable[[int, int], Awaitable[Sequence[Record]]], seq: int, page: int
) -> int:
    """``commit_end`` of the entry ``seq`` (``seq`` itself when nothing is there).

    Reads ``read(start, end)`` a page at a time from ``seq`` on, only as far as its commit runs.
    """
    records: list[Record] = []
    while True:
        start = seq + len(records)
        got = await read(start, start + page)
        records.extend(got)
        if not records:
            return seq
        end = commit_end(records)
        if end < records[-1].seq or len(got) < page:
            return end


def _admission_member(first: str) -> Callable[[Record], bool]:
    """Whether a record continues an admission: a delivered input's user entry does too."""
    previous = [first]

    def member(record: Record) -> bool:
        kind = record.entry.kind
        inside = kind in _IN_ADMISSION or (kind == "user" and previous[0] == "input_delivered")
        previous[0] = kind
        return inside

    return member


def _compaction(record: Record) -> bool:
    return isinstance(record.entry, ContextEpoch) and record.entry.reason == "compaction"


def _run(
    first: Record, rest: Sequence[Record], member: Callable[[Record], bool], closer: str
) -> int:
    """Where the run from ``first`` that ``member`` continues ends; a ``closer`` ends it too."""
    end = first.seq
    for record in rest:
        if not member(record):
            break
        end = record.seq
        if record.entry.kind == closer:
            break
    return end


def common_prefix(records: Sequence[Record], entries: Sequence[LogEntry]) -> int:
    """How many leading ``records`` hold ``entries``: the same kinds, the same stored JSON."""
    count = 0
    for record, entry in zip(records, entries, strict=False):
        if dump_entry(record.entry) != dump_entry(entry):
            break
        count += 1
    return count


def only_inputs(records: Sequence[Record]) -> bool:
    """Whether ``records`` are inbox inputs alone.

    The only kind a process that does not drive a session may append to its log (``steer()``
    where it does not hold the lease, see ``engine/steering``): the driver takes them and
    writes after them.
    """
    return bool(records) and all(r.entry.kind == "input_queued" for r in records)
