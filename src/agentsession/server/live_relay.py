"""Live text across server processes on PostgreSQL: a turn's text deltas as hints to followers.

A turn's deltas reach the followers of its own process directly (``Notifier.live``). A follower
attached to another process asks for them: its process sends a *want* for the session on
``LIVE_CHANNEL`` (when the follower subscribes, and again while news or deltas of the session
arrive, at most once per ``WANT_EVERY`` seconds per session), and the process running the turn
publishes the session's text there while a want is fresh (``WANT_TTL``). An idle follower
therefore costs one ``NOTIFY`` when it arrives and nothing after; a turn nobody follows
elsewhere sends nothing. Each want makes the running process send its step's text again from
the start (a follower that asked before it listened still gets it; the receivers cut repeats),
and a process whose listening connection comes back asks again for everything followed there.

Publishing never holds a turn up: the turn only appends to its step's text in memory
(``said``); one task per process sends what is new at most every ``INTERVAL`` seconds, all
sessions in one statement on a connection of its own (opened when there is something to send,
closed after ``IDLE`` seconds without), each payload below PostgreSQL's 8,000-byte limit (text
split between characters, JSON escaped as ASCII). A send that fails is dropped.

Each delta carries the seq its step's entries will start at (every entry before it is
committed) and its offset in the step's text. A receiving process forwards only text that
continues what it forwarded of that step (a repeat is cut off, a gap ends the step's deltas
there), and a follower drops a delta once it has sent an entry at or beyond that seq: the entry
holds the whole text. A delta never gets a seq; whatever is missed, the log has it. Payloads
carry the session id, the text and a random id of the sending process, nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["INTERVAL", "LIVE_CHANNEL", "WANT_EVERY", "WANT_TTL", "LiveRelay", "payloads_of"]

_log = logging.getLogger(__name__)

#: The PostgreSQL channel of live text and of the wants for it (every ``serve`` listens).
LIVE_CHANNEL = "agentsession_live"
#: Seconds between two sends of one process: deltas within them travel in one statement.
INTERVAL = 0.1
#: Seconds a want keeps the running process publishing a session's text.
WANT_TTL = 30.0
#: Seconds between two wants a process sends for one session (well within ``WANT_TTL``).
WANT_EVERY = 10.0
#: Seconds the sending connection stays open with nothing to send.
IDLE = 30.0
#: Bytes of one payload at most: PostgreSQL refuses 8,000 or more.
PAYLOAD_MAX = 7_900
#: Characters of one step's text kept for publishing; beyond, the step's deltas stop here.
STEP_MAX = 1_000_000
_VERSION = 1


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))  # ASCII: its length is its size in bytes


def _cost(char: str) -> int:
    """Bytes ``char`` takes inside an ASCII JSON string."""
    if " " <= char <= "~" and char not in '"\\':
        return 1
    return len(json.dumps(char)) - 2


def payloads_of(head: dict[str, Any], at: int, text: str, limit: int = PAYLOAD_MAX) -> list[str]:
    """``text`` (starting at offset ``at`` of its step) as payloads of at most ``limit`` bytes.

    Each payload is ``head`` with ``a`` (its text's offset) and ``t`` (its text); the text is
    split between characters, so each piece is valid text on its own. Empty when even one
    character does not fit beside ``head``.
    """
    room = limit - len(_json({**head, "a": at, "t": ""})) - len(str(at + len(text)))
    found: list[str] = []
    start, used = 0, 0
    for index, char in enumerate(text):
        cost = _cost(char)
        if cost > room:
            return []
        if used + cost > room:
            found.append(_json({**head, "a": at + start, "t": text[start:index]}))
            start, used = index, 0
        used += cost
    if start < len(text):
        found.append(_json({**head, "a": at + start, "t": text[start:]}))
    return found


@dataclass
class _Step:
    """The text of the step a turn running here is streaming, and how much of it went out."""

    first_seq: int
    parts: list[str] = field(default_factory=list)
    size: int = 0
    sent: int = 0
    full: bool = False

    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


@dataclass
class _Heard:
    """How far this process forwarded a step of a turn another process runs."""

    first_seq: int
    upto: int  # -1: a gap was seen, nothing more of this step is forwarded


Deliver = Callable[[str, int, str], None]
"""Hands text to this process's followers of a session: (session id, step's first seq, text)."""


class LiveRelay:
    """One process's end of ``LIVE_CHANNEL``: publishes its turns' text, forwards others'."""

    def __init__(self, dsn: str | None, deliver: Deliver, followed: Callable[[str], bool]) -> None:
        self._dsn = dsn
        self._deliver = deliver
        self._followed = followed
        #: Names this process in its payloads, so it ignores what it sent itself.
        self.origin = secrets.token_hex(8)
        self._steps: dict[str, _Step] = {}
        self._wanted: dict[str, float] = {}
        self._asked: dict[str, float] = {}
        self._heard: dict[str, _Heard] = {}
        self._wants_out: set[str] = set()
        self._due = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._pruned = time.monotonic()
        #: Payloads and statements (one per send) sent so far: what a benchmark counts.
        self.sent = 0
        self.statements = 0

    # The process running a turn.

    def said(self, session_id: str, first_seq: int, text: str) -> None:
        """A text delta of a turn running here, in the step whose entries start at ``first_seq``."""
        step = self._steps.get(session_id)
        if step is None or step.first_seq != first_seq:
            step = self._steps[session_id] = _Step(first_seq)
        if step.full or not text:
            return
        if step.size + len(text) > STEP_MAX:
            step.full = True
            return
        step.parts.append(text)
        step.size += len(text)
        if self._fresh(session_id):
            self._kick()

    def step_over(self, session_id: str) -> None:
        """The session's step committed (or its turn ended): its text is in the log."""
        self._steps.pop(session_id, None)

    def wanted(self, session_id: str) -> bool:
        """Whether a process following the session asked for its text lately."""
        return self._fresh(session_id)

    # A process with followers.

    def following(self, session_id: str) -> None:
        """A follower here wants the session's live text: ask for it (now and then)."""
        if not self._dsn:
            return
        now = time.monotonic()
        if now - self._asked.get(session_id, -WANT_EVERY) < WANT_EVERY:
            return
        self._asked[session_id] = now
        self._wants_out.add(session_id)
        self._kick()

    def heard(self, payload: str) -> None:
        """A notification on ``LIVE_CHANNEL``; anything malformed or unknown is ignored."""
        try:
            note = json.loads(payload)
        except ValueError:
            return
        if not isinstance(note, dict) or note.get("v") != _VERSION or note.get("o") == self.origin:
            return
        session_id = note.get("s")
        if not isinstance(session_id, str):
            return
        if note.get("k") == "w":
            self._want(session_id)
            return
        first_seq, at, text = note.get("n"), note.get("a"), note.get("t")
        if not (isinstance(first_seq, int) and isinstance(at, int) and isinstance(text, str)):
            return
        if note.get("k") == "d" and self._followed(session_id):
            self._arrived(session_id, first_seq, at, text)

    def rejoined(self, followed: list[str]) -> None:
        """Listening (again, or for the first time): ask for the text of what is followed here."""
        for session_id in followed:
            self._asked.pop(session_id, None)
            self.following(session_id)

    def _want(self, session_id: str) -> None:
        self._wanted[session_id] = time.monotonic()
        step = self._steps.get(session_id)
        if step is not None:
            step.sent = 0  # the asker may have missed what went out: from the step's start
            self._kick()

    def _arrived(self, session_id: str, first_seq: int, at: int, text: str) -> None:
        heard = self._heard.get(session_id)
        if heard is None or first_seq > heard.first_seq:
            heard = self._heard[session_id] = _Heard(first_seq, at)
        elif first_seq < heard.first_seq:
            return  # an earlier step's late text
        if heard.upto < 0 or at > heard.upto:
            heard.upto = -1  # a gap: the rest of the step comes with its entry
            return
        text = text[heard.upto - at :]
        if not text:
            return
        heard.upto += len(text)
        self.following(session_id)  # still followed: keep the text coming
        self._deliver(session_id, first_seq, text)

    def _fresh(self, session_id: str) -> bool:
        heard = self._wanted.get(session_id)
        return heard is not None and time.monotonic() - heard < WANT_TTL

    # Sending.

    def _kick(self) -> None:
        if not self._dsn:
            return
        self._due.set()
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._sending(self._dsn))

    def take(self) -> list[str]:
        """Every payload due now: wants, then the new text of each step somebody wants."""
        self._prune()
        found = [
            _json({"v": _VERSION, "o": self.origin, "k": "w", "s": session_id})
            for session_id in sorted(self._wants_out)
        ]
        self._wants_out.clear()
        for session_id, step in self._steps.items():
            if step.sent >= step.size or not self._fresh(session_id):
                continue
            head = {"v": _VERSION, "o": self.origin, "k": "d", "s": session_id}
            head["n"] = step.first_seq
            found.extend(payloads_of(head, step.sent, step.text()[step.sent :]))
            step.sent = step.size
        return found

    def _prune(self) -> None:
        now = time.monotonic()
        if now - self._pruned < WANT_TTL:
            return
        self._pruned = now
        for table in (self._wanted, self._asked):
            for session_id in [s for s, t in table.items() if now - t >= WANT_TTL]:
                del table[session_id]
        for session_id in [s for s in self._heard if not self._followed(s)]:
            del self._heard[session_id]

    async def _sending(self, dsn: str) -> None:
        conn: Any = None
        try:
            while True:
                try:
                    await asyncio.wait_for(self._due.wait(), IDLE)
                except TimeoutError:  # nothing to send for a while: the connection goes
                    await _closed(conn)
                    conn = None
                    if not self._due.is_set():
                        return  # no await since the look: a kick now starts a new sender
                    continue
                self._due.clear()
                payloads = self.take()
                if payloads:
                    conn = await self._send(dsn, conn, payloads)
                await asyncio.sleep(INTERVAL)
        finally:
            await _closed(conn)

    async def _send(self, dsn: str, conn: Any, payloads: list[str]) -> Any:
        """One statement notifying every payload in order; the connection (``None``: failed)."""
        import psycopg

        try:
            if conn is None or conn.closed:
                conn = await psycopg.AsyncConnection.connect(
                    dsn, autocommit=True, connect_timeout=5
                )
            await conn.execute(
                "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) AS p", (LIVE_CHANNEL, payloads)
            )
            self.sent += len(payloads)
            self.statements += 1
            return conn
        except Exception as exc:  # a hint lost: followers get the text from the log
            _log.debug("live text not sent: %s", exc)
            await _closed(conn)
            return None

    async def close(self) -> None:
        """Stop sending (what is still unsent is dropped)."""
        sender, self._sender = self._sender, None
        if sender is not None:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender


async def _closed(conn: Any) -> None:
    """Close ``conn`` (if any), whatever state it is in."""
    if conn is not None:
        with contextlib.suppress(Exception):
            await conn.close()
