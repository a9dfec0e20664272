"""Following a session's log: replay what follows a seq, then each entry as it is committed.

The log is the only source: a reader that dropped and comes back with ``Last-Event-ID: N``
reads from ``N + 1`` and so sees every entry exactly once, whichever process commits them. News
(``Notifier``) only wakes the reader early; without news it reads again after the polling
interval. A comment line goes out when nothing happened for a while, so a client that left is
noticed and an idle proxy keeps the stream open.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from ..store.base import Store
from .notify import Notifier
from .wire import entry_json, sse_frame

__all__ = ["follow_log"]

_PAGE = 200
_KEEPALIVE = 15.0


async def follow_log(
    store: Store, notifier: Notifier, session_id: str, after: int
) -> AsyncIterator[bytes]:
    """SSE frames of every entry with seq > ``after``, then live ones; never ends by itself.

    It ends when the server stops; the client resumes with its last id on another process.
    """
    next_seq = after + 1
    quiet_since = time.monotonic()
    while not notifier.stopping:
        seen = notifier.generation(session_id)
        records = await store.read(session_id, next_seq, next_seq + _PAGE)
        for record in records:
            yield sse_frame("entry", entry_json(record), record.seq)
        if records:
            next_seq = records[-1].seq + 1
            quiet_since = time.monotonic()
            if len(records) == _PAGE:
                continue
        elif time.monotonic() - quiet_since > _KEEPALIVE:
            yield b": keepalive\n\n"
            quiet_since = time.monotonic()
        await notifier.wait(session_id, seen)
