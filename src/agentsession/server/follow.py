"""Following a session's log: replay what follows a seq, then each entry as it is committed.

The log is the only source of entries: a reader that dropped and comes back with
``Last-Event-ID: N`` reads from ``N + 1`` and so sees every entry exactly once, whichever process
commits them. News (``Notifier``) wakes the reader; while news arrives by itself (PostgreSQL's
``LISTEN``) an idle reader reads nothing until it comes, else it reads again after the polling
interval. A turn this process runs also hands its live frames (text deltas, tool calls; no id)
to its readers here, after the entries committed before them; on PostgreSQL a turn another
process runs sends its text deltas too (``live_relay``). A text delta goes out only while no
entry of its step (or a later one) has: the entry holds the whole text. Each turn's end is a
``turn_finished`` event after the answer's entry. A comment line goes out when nothing happened
for a while, so a client that left is noticed and an idle proxy keeps the stream open. At those
quiet moments, while the log shows a step under way, the reader also asks whether its process
is gone (a dispatched step with no answer and no live lease): then a ``turn_abandoned`` event
says so, once per step, instead of silence. A store that fails ends the stream with an
``error`` event (the client resumes with its last id).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Literal

from ..engine.leases import live_lease
from ..engine.recovery import closing_entries
from ..errors import StoreError
from ..events import PromptResult, TurnFinished
from ..log import AssistantEntry, Dispatch, Record, ToolResultEntry, UserEntry, now
from ..store.base import Store
from .notify import LiveFrame, Notifier
from .wire import entry_json, error_body, event_json, sse_frame

__all__ = ["follow_log"]

_PAGE = 200
_KEEPALIVE = 15.0
_ABANDONED = {
    "kind": "turn_abandoned",
    "message": "the process running this turn stopped; the next prompt or retry on any process"
    " records the unfinished step as interrupted and carries on",
}


async def follow_log(
    store: Store, notifier: Notifier, session_id: str, after: int
) -> AsyncIterator[bytes]:
    """SSE frames of every entry with seq > ``after``, then live ones; never ends by itself.

    It ends when the server stops; the client resumes with its last id on another process.
    """
    try:
        async for frame in _follow(store, notifier, session_id, after):
            yield frame
    except StoreError as exc:
        yield sse_frame("error", error_body(exc))


def _finished(session_id: str, answer: AssistantEntry) -> dict[str, object]:
    """The turn's end as a follower sees it: the answer's text (steps and usage: the prompt's)."""
    result = PromptResult(text=answer.content, steps=0, session_id=session_id)
    return event_json(TurnFinished(result))


async def abandoned_step(store: Store, session_id: str) -> int | None:
    """The seq of a dispatched step nobody will finish (its process is gone), else ``None``."""
    state = await _step_state(store, session_id)
    return state if isinstance(state, int) else None


async def _step_state(store: Store, session_id: str) -> int | Literal["settled", "running"]:
    """The last step: settled (answered, or waiting for an approval), running, or abandoned."""
    last = await store.last(session_id, ["dispatch"])
    if last is None:
        return "settled"
    tail = await store.read(session_id, last.seq)
    if not closing_entries(tail, now(), "process"):
        return "settled"
    return "running" if await live_lease(store, session_id) is not None else last.seq


def _opens(record: Record) -> bool | None:
    """Whether the log shows a step under way after ``record`` (``None``: it does not say)."""
    entry = record.entry
    if isinstance(entry, AssistantEntry):
        return bool(entry.tool_calls)
    if isinstance(entry, UserEntry | Dispatch | ToolResultEntry):
        return True
    return None


class _Quiet:
    """When the stream was last busy, and whether a quiet moment should ask for a dead turn."""

    def __init__(self) -> None:
        self.since = time.monotonic()
        self.open: bool = True  # unknown at first: asked once
        self.told: int | None = None

    def saw(self, records: list[Record]) -> None:
        self.since = time.monotonic()
        for record in records:
            opens = _opens(record)
            if opens is not None:
                self.open = opens

    def due(self) -> bool:
        return time.monotonic() - self.since > _KEEPALIVE

    async def check(self, store: Store, session_id: str) -> bytes | None:
        """At a quiet moment: a ``turn_abandoned`` frame when the step's process is gone."""
        self.since = time.monotonic()
        if not self.open:
            return None  # the last turn finished: nothing to ask the store
        state = await _step_state(store, session_id)
        self.open = state != "settled"
        if isinstance(state, int) and state != self.told:
            self.told = state
            return sse_frame("turn_abandoned", _ABANDONED | {"dispatch_seq": state})
        return None


def _due(live: list[LiveFrame], next_seq: int, hold: bool) -> tuple[list[bytes], bool]:
    """The live frames to send now, and whether one waits for the entries before it.

    Text of a step an entry at or past its first seq was sent of is stale: dropped (the entry
    has it). With ``hold``, text whose step starts beyond ``next_seq`` stays in the buffer
    until the entries before it are read.
    """
    ready: list[bytes] = []
    while live:
        frame, first_seq = live[0]
        if hold and first_seq is not None and first_seq > next_seq:
            return ready, True
        live.pop(0)
        if first_seq is None or first_seq >= next_seq:
            ready.append(frame)
    return ready, False


async def _follow(
    store: Store, notifier: Notifier, session_id: str, after: int
) -> AsyncIterator[bytes]:
    next_seq = after + 1
    quiet = _Quiet()
    must_read = True
    with notifier.subscribe(session_id) as live:
        while not notifier.stopping:
            seen = notifier.generation(session_id)
            # A running step's text comes before the entries it commits, after those before it.
            ready, behind = _due(live, next_seq, hold=True)
            for frame in ready:
                yield frame
            must_read = must_read or behind
            records = await store.read(session_id, next_seq, next_seq + _PAGE) if must_read else []
            for record in records:
                yield sse_frame("entry", entry_json(record), record.seq)
                if isinstance(record.entry, AssistantEntry) and not record.entry.tool_calls:
                    yield sse_frame("turn_finished", _finished(session_id, record.entry))
            if records:
                next_seq = records[-1].seq + 1
                quiet.saw(records)
                if len(records) == _PAGE:
                    continue
            late, _ = _due(live, next_seq, hold=False)
            for frame in late:
                yield frame
            if ready or late:
                quiet.since = time.monotonic()
            elif not records and quiet.due():
                yield b": keepalive\n\n"
                abandoned = await quiet.check(store, session_id)
                if abandoned is not None:
                    yield abandoned
            # With news arriving by itself, an idle reader waits for it alone (no reads).
            within = _KEEPALIVE if notifier.news_arrive else None
            woke = await notifier.wait(session_id, seen, within)
            must_read = notifier.generation(session_id) != seen or not (
                woke or notifier.news_arrive
            )
