"""News of new log entries: within this process, and between processes; live turn frames.

A process that commits entries says so (``published``); a reader following a session's log
waits for news and then reads the log itself — the log is the truth, news only wakes readers.
Between processes PostgreSQL carries the news (``LISTEN``/``NOTIFY`` on one channel, the session
id as payload). The database itself notifies, from a trigger on the entries table (schema 7),
in the transaction that commits them: whoever writes — this server, another one, a library
user, the CLI, a durable worker — every follower hears it, and nothing here sends a ``NOTIFY``
of its own. While this process listens (``listening``), an idle reader waits for news alone
and costs the database nothing; when the listening connection drops every reader is woken once
it is back (news may have been missed) and readers poll meanwhile. On SQLite there is no channel
between processes: readers poll the file, which is local and cheap to ask.

A turn this process runs also hands its live frames (text deltas, tool calls: events that are
not in the log) to the readers of its session here (``live``, ``subscribe``). On PostgreSQL its
text deltas also reach readers on other processes, as hints on a channel of their own
(``live_relay``); the other live frames stay in their process. Each text frame carries the seq
its step's entries start at: a reader that has sent an entry at or beyond it drops the frame.

No lock guards the waiting: a waiter is a future of its own, woken by a plain call. A follower
whose client leaves is cancelled at any await, and a lock held across such a cancellation (an
``asyncio.Condition`` under ``wait_for`` on Python 3.11) could stay held for good, so that the
next publish — and every later step of every turn of the process — waited forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import SupportsIndex

from ..events import TextDelta
from ..store.base import Store
from ..store.migrations import LOG_CHANNEL
from .live_relay import LIVE_CHANNEL, LiveRelay
from .wire import event_json, sse_frame

__all__ = ["CHANNEL", "LiveBuffer", "LiveFrame", "Notifier", "Wakeup"]

_log = logging.getLogger(__name__)

#: The PostgreSQL channel that carries "session X has new entries" between processes: the
#: database's own trigger notifies it at each commit of entries (schema 7), whoever writes.
CHANNEL = LOG_CHANNEL
#: The channel of cancel requests (``cancels``): heard here, handled by the turns.
CANCEL_CHANNEL = "agentsession_cancel"
#: Live frames, and their bytes, kept for a reader that has not read them yet; beyond either, it
#: misses live frames (the log still has every entry). The bytes bound what a client that
#: connects to ``/events`` and never reads holds in the server: a tool's result or a call's
#: arguments may be tens of kilobytes each, so a count alone let one such client hold
#: hundreds of megabytes.
_LIVE_BACKLOG = 10_000
_LIVE_BYTES = 1024 * 1024

LiveFrame = tuple[bytes, int | None]
"""A live frame and, for text, the seq its step's entries start at (stale once sent past)."""


class LiveBuffer(list[LiveFrame]):
    """One reader's live frames not yet sent, with their size in bytes (``held``)."""

    def __init__(self) -> None:
        super().__init__()
        self.held = 0

    def offer(self, frame: bytes, first_seq: int | None) -> None:
        """Keep ``frame`` unless the reader is too far behind (it then misses it)."""
        if len(self) < _LIVE_BACKLOG and self.held + len(frame) <= _LIVE_BYTES:
            self.append((frame, first_seq))
            self.held += len(frame)

    def pop(self, index: SupportsIndex = -1) -> LiveFrame:
        """Take a frame out (to send or drop it)."""
        taken = super().pop(index)
        self.held -= len(taken[0])
        return taken


class Wakeup:
    """A broadcast without a lock: ``wait()`` returns at the next ``fire()`` or its timeout.

    Firing never awaits, so it cannot be held up by a waiter; a cancelled waiter only takes its
    own future away.
    """

    def __init__(self) -> None:
        self._waiters: set[asyncio.Future[None]] = set()

    @property
    def waiting(self) -> int:
        """How many waiters are waiting right now."""
        return len(self._waiters)

    def fire(self) -> None:
        """Wake every current waiter."""
        waiters, self._waiters = self._waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self, within: float | None = None) -> bool:
        """Return at the next ``fire()`` (``True``) or after ``within`` seconds (``False``)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            # ``asyncio.wait`` never cancels the future it watches, and it holds no lock.
            await asyncio.wait((waiter,), timeout=within)
            return waiter.done() and not waiter.cancelled()
        finally:
            self._waiters.discard(waiter)
            waiter.cancel()


class Notifier:
    """Wakes readers of a session's log when entries may have been appended."""

    def __init__(self, store: Store) -> None:
        self._dsn: str | None = getattr(store, "dsn", None)
        self._generation: dict[str, int] = {}
        self._wakeups: dict[str, Wakeup] = {}
        self._listener: asyncio.Task[None] | None = None
        #: Seconds between reads of the log when no news comes (news may come from elsewhere).
        self.poll_interval = 1.0 if self._dsn else 0.25
        #: Set when the server stops: followers end their streams (clients resume elsewhere).
        #: A plain flag, so a signal handler may set it; followers see it within one interval.
        self.stopping = False
        #: Set once this process listens to the others (PostgreSQL).
        self.listening = asyncio.Event()
        #: Fired when another process asks for a turn to be cancelled (PostgreSQL).
        self.cancel_news = Wakeup()
        #: Each session's subscribers to live frames: a buffer per subscriber.
        self._live: dict[str, list[LiveBuffer]] = {}
        #: Text deltas between processes (PostgreSQL; inert otherwise).
        self.relay = LiveRelay(self._dsn, self._relayed, self._live.__contains__)

    async def start(self) -> None:
        """Begin listening to other processes (PostgreSQL only)."""
        if self._dsn and self._listener is None:
            self._listener = asyncio.create_task(self._listen(self._dsn))

    async def close(self) -> None:
        """Stop listening; readers fall back to polling."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        await self.relay.close()

    async def published(self, session_id: str) -> None:
        """Entries of ``session_id`` were committed here: wake the readers here at once.

        Other processes hear it from the database (its trigger notified at the commit).
        """
        self._wake(session_id)

    def generation(self, session_id: str) -> int:
        """A number that grows each time news about ``session_id`` arrives."""
        return self._generation.get(session_id, 0)

    async def wait(self, session_id: str, seen: int, within: float | None = None) -> bool:
        """Whether news newer than ``seen`` or a live frame woke the reader (``False``: timeout).

        ``within``: seconds to wait at most (default: the polling interval).
        """
        if self.generation(session_id) != seen:
            return True
        wakeup = self._wakeups.setdefault(session_id, Wakeup())
        try:
            return await wakeup.wait(self.poll_interval if within is None else within)
        finally:
            if not wakeup.waiting and self._wakeups.get(session_id) is wakeup:
                del self._wakeups[session_id]

    @property
    def news_arrive(self) -> bool:
        """Whether every commit reaches the readers here as news (no polling needed).

        True while this process listens to PostgreSQL's notifications.
        """
        return self.listening.is_set()

    def live(self, session_id: str, frame: bytes, first_seq: int | None = None) -> None:
        """A live frame of a turn this process runs: handed to the session's subscribers.

        ``first_seq``: for a text delta, the seq its step's entries start at.
        """
        buffers = self._live.get(session_id)
        if not buffers:
            return
        for buffer in buffers:
            buffer.offer(frame, first_seq)  # a reader that does not keep up misses live frames
        self._poke(session_id)

    def text(self, session_id: str, first_seq: int, text: str, frame: bytes) -> None:
        """A text delta of a turn this process runs: to readers here and, asked, elsewhere."""
        self.live(session_id, frame, first_seq)
        self.relay.said(session_id, first_seq, text)

    def _relayed(self, session_id: str, first_seq: int, text: str) -> None:
        """Text of a turn another process runs, for the readers here."""
        self.live(session_id, sse_frame("text_delta", event_json(TextDelta(text))), first_seq)

    @contextlib.contextmanager
    def subscribe(self, session_id: str) -> Iterator[LiveBuffer]:
        """A buffer that receives the session's live frames while the block runs."""
        buffer = LiveBuffer()
        self._live.setdefault(session_id, []).append(buffer)
        self.relay.following(session_id)
        try:
            yield buffer
        finally:
            # By identity: buffers are lists, and two readers' empty ones are equal, so
            # ``remove`` took the first reader's buffer away when the second left.
            buffers = [b for b in self._live.get(session_id, []) if b is not buffer]
            if buffers:
                self._live[session_id] = buffers
            else:
                self._live.pop(session_id, None)

    def _poke(self, session_id: str) -> None:
        wakeup = self._wakeups.pop(session_id, None)
        if wakeup is not None:
            wakeup.fire()

    def _wake(self, session_id: str) -> None:
        self._generation[session_id] = self.generation(session_id) + 1
        self._poke(session_id)

    def _wake_all(self) -> None:
        """News may have been missed (the listening connection was away): wake every reader."""
        for session_id in list(self._wakeups):
            self._wake(session_id)

    async def _listen(self, dsn: str) -> None:
        """Forward PostgreSQL notifications to local readers; reconnect when the link drops."""
        while True:
            try:
                async for channel, payload in _notifications(dsn, self):
                    if channel == CANCEL_CHANNEL:
                        self.cancel_news.fire()
                    elif channel == LIVE_CHANNEL:
                        self.relay.heard(payload)  # text, or a want for it
                    else:  # the payload is the session's id
                        self._wake(payload)
                        if payload in self._live:  # a turn may be under way elsewhere
                            self.relay.following(payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.debug("LISTEN connection lost, reconnecting: %s", exc)
            # Readers poll until the channel is back, then all look once (``_notifications``).
            self.listening.clear()
            self._wake_all()
            await asyncio.sleep(self.poll_interval)


async def _notifications(dsn: str, notifier: Notifier) -> AsyncIterator[tuple[str, str]]:
    """(channel, payload) of each notification: a session's id, or on the live channel text."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(f"LISTEN {CHANNEL}")
        await conn.execute(f"LISTEN {CANCEL_CHANNEL}")
        await conn.execute(f"LISTEN {LIVE_CHANNEL}")
        notifier.listening.set()
        notifier._wake_all()  # what was committed before this point was not heard
        notifier.relay.rejoined(list(notifier._live))  # nor the live text asked for
        async for note in conn.notifies():
            yield note.channel, note.payload
