"""Following a session's log: replay what follows a seq, then each entry as it is committed.

The log is the only source: a reader that dropped and comes back with ``Last-Event-ID: N``
reads from ``N + 1`` and so sees every entry exactly once, whichever process commits them. News
(``Notifier``) only wakes the reader early; without news it reads again after the polling
interval. A comment line goes out when nothing happened for a while, so a client that left is
noticed and an idle proxy keeps the stream open. At those quiet moments the reader also asks
whether a turn was left unfinished by a process that is gone (a dispatched step with no answer
and no live lease): then a ``turn_abandoned`` event says so, once per step, instead of silence.
A store that fails ends the stream with an ``error`` event (the client resumes with its last
id).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from ..engine.leases import live_lease
from ..engine.recovery import closing_entries
from ..errors import StoreError
from ..events import PromptResult, TurnFinished
from ..log import AssistantEntry, now
from ..store.base import Store
from .notify import Notifier
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
    last = await store.last(session_id, ["dispatch"])
    if last is None:
        return None
    tail = await store.read(session_id, last.seq)
    if not closing_entries(tail, now(), "process"):
        return None  # answered, settled or waiting for an approval
    return None if await live_lease(store, session_id) is not None else last.seq


async def _follow(
    store: Store, notifier: Notifier, session_id: str, after: int
) -> AsyncIterator[bytes]:
    next_seq = after + 1
    quiet_since = time.monotonic()
    told: int | None = None
    while not notifier.stopping:
        seen = notifier.generation(session_id)
        records = await store.read(session_id, next_seq, next_seq + _PAGE)
        for record in records:
            yield sse_frame("entry", entry_json(record), record.seq)
            if isinstance(record.entry, AssistantEntry) and not record.entry.tool_calls:
                yield sse_frame("turn_finished", _finished(session_id, record.entry))
        if records:
            next_seq = records[-1].seq + 1
            quiet_since = time.monotonic()
            if len(records) == _PAGE:
                continue
        elif time.monotonic() - quiet_since > _KEEPALIVE:
            yield b": keepalive\n\n"
            quiet_since = time.monotonic()
            step = await abandoned_step(store, session_id)
            if step is not None and step != told:
                told = step
                yield sse_frame("turn_abandoned", _ABANDONED | {"dispatch_seq": step})
        await notifier.wait(session_id, seen)
