"""A reopen's reads on one snapshot: fetched in one round trip by a fresh store's first call.

A fresh process reopening a session asks its store a dozen small questions in turn — the
session row, its state entries, the lease, the last dispatch and the log since it, the newest
epoch, its view's rows, the user-turn count — each one a round trip to the server. When the
store's first call is ``get_session``, its blocking connection sends, in one pipeline (one round
trip, one read-only ``REPEATABLE READ`` transaction: one snapshot), the schema version and what
answers those questions for the session: its row, its lease, the newest entry of every kind it
holds with the kept count (``kind_counts``, schema 5), every entry of its rare kinds, the last
``TAIL`` entries of its log and the kept texts its newest epoch refers to. The reads that follow
are answered from it (``Snapshot``) when it holds the whole answer; any other is read as before.

Served from one snapshot, the reopen's reads agree with each other (separate statements would
each see their own moment). Rows are decoded only when a read asks for them. The snapshot is
dropped at the store's first use of its pool (every write, every lease change) and after
``FRESH_FOR`` seconds, so a read served from it is never older than that, and a read whose
bounds lie past the snapshot's end (a log another process has since grown) is read afresh.
Such a read is no staler than a read whose caller was slow to use it; an append still compares
the log's next seq under its row lock, so a stale view can never lose or repeat an entry.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from ..log import Record
from ._postgres_presence import ALIVE
from ._sql import LEASE_OF, SELECT_SESSION, postgres
from .base import decode_row, refs_of

__all__ = ["BEGIN", "FRESH_FOR", "TAIL", "Miss", "Snapshot", "assemble", "statements", "take"]

#: How many of the log's newest entries the snapshot holds (a window's view and the step
#: since the last dispatch lie there in every session this package writes).
TAIL = 256
#: Kinds with at most this many entries are held whole (the state kinds, checkpoints).
RARE = 32
#: Seconds a snapshot answers reads: a reopen's reads follow each other within milliseconds.
FRESH_FOR = 1.0

#: The snapshot's transaction: one snapshot of the database for every statement.
BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
_CLOCK = "extract(epoch from clock_timestamp())::double precision"
_VERSION = "SELECT coalesce(max(version), 0) FROM schema_migrations"
_LEASE = postgres(LEASE_OF).replace("%s", f"{_CLOCK} AND {ALIVE}", 1)
#: Per kind the session holds: its kept count and its newest entry (one index descent each).
_NEWEST = (
    "SELECT c.kind, c.entries, e.seq, e.version, e.data FROM kind_counts c"
    " LEFT JOIN LATERAL (SELECT seq, version, data FROM entries"
    "  WHERE session_id = c.session_id AND kind = c.kind ORDER BY seq DESC LIMIT 1) e ON true"
    " WHERE c.session_id = %s"
)
#: Every entry of the session's rare kinds (the limit keeps it one kind-index range per kind).
_RARE = (
    "SELECT e.seq, c.kind, e.version, e.data FROM kind_counts c"
    " CROSS JOIN LATERAL (SELECT seq, version, data FROM entries"
    f"  WHERE session_id = c.session_id AND kind = c.kind ORDER BY seq LIMIT {RARE}) e"
    f" WHERE c.session_id = %s AND c.entries <= {RARE}"
)
#: The newest entries, newest first: a backward walk of the primary key that the limit keeps
#: cheap in the planner's eyes too (a bound computed in the statement is planned as a third of
#: the table, and then compiled: milliseconds).
_TAIL = (
    "SELECT seq, kind, version, data FROM entries WHERE session_id = %s"
    f" ORDER BY seq DESC LIMIT {TAIL}"
)
#: The kept texts the newest epoch names (a reference is a digest: one found in the row is it).
_TEXTS = (
    "SELECT ref, text FROM texts WHERE session_id = %s AND strpos((SELECT data FROM entries"
    "  WHERE session_id = %s AND kind = 'epoch' ORDER BY seq DESC LIMIT 1), ref) > 0"
)

#: A stored row as read: (seq, kind, version, data).
Row = tuple[Any, ...]


class Miss(Exception):
    """The snapshot does not hold the whole answer: read it from the server."""


class Snapshot:
    """One session's reopen reads, answered from what one transaction read (see the module)."""

    def __init__(
        self,
        session_id: str,
        version: int,
        session: Row,
        lease: Row | None,
        kinds: list[Row],
        rare: list[Row],
        tail: list[Row],
        texts: list[Row],
    ) -> None:
        self.session_id, self.version = session_id, version
        self.session, self.lease = session, lease
        self.next_seq = int(session[5])
        self._counts = {str(kind): int(n) for kind, n, *_ in kinds}
        # A kind whose newest row was not found (never, with the kept counts) is not answered.
        self._newest = {str(k): None if s is None else (s, k, v, d) for k, _, s, v, d in kinds}
        self._rare, self._tail = sorted(rare, key=lambda row: int(row[0])), tail[::-1]
        # Every entry from the oldest one read on is held (all of them: a short log).
        self._tail_start = int(self._tail[0][0]) if len(tail) == TAIL else 0
        self._texts = {str(ref): str(text) for ref, text in texts}
        self._taken = time.monotonic()

    def fresh(self) -> bool:
        """Whether it may still answer reads (see ``FRESH_FOR``)."""
        return time.monotonic() - self._taken < FRESH_FOR

    def _records(self, rows: list[Row]) -> list[Record]:
        refs = refs_of(rows)
        if any(ref not in self._texts for ref in refs):
            raise Miss
        texts = self._texts if refs else None
        return [decode_row(self.session_id, s, k, v, d, texts) for s, k, v, d in rows]

    def _end(self, end: int | None) -> float:
        if end is None:
            return math.inf  # every entry the snapshot saw, as the statement would read them
        if end > self.next_seq:
            raise Miss  # the caller knows a longer log than this snapshot
        return max(end, 0)

    def read(self, start: int, end: int | None, kinds: Sequence[str] | None) -> list[Record]:
        """``read`` from the snapshot; ``Miss`` when it does not hold every wanted entry."""
        stop, first = self._end(end), max(start, 0)
        wanted = None if kinds is None else set(kinds)
        if first >= self._tail_start:
            rows = self._tail
        elif wanted is not None and all(self._counts.get(k, 0) <= RARE for k in wanted):
            rows = self._rare
        else:
            raise Miss
        return self._records(
            [r for r in rows if first <= r[0] < stop and (wanted is None or r[1] in wanted)]
        )

    def last(self, kinds: Sequence[str]) -> Record | None:
        """``last`` from the snapshot (every kind's newest entry is held)."""
        found: Row | None = None
        for kind in kinds:
            if kind not in self._newest:
                continue  # the session holds no entry of it
            row = self._newest[kind]
            if row is None:
                raise Miss
            if found is None or row[0] > found[0]:
                found = row
        return None if found is None else self._records([found])[0]

    def count(self, kinds: Sequence[str], end: int) -> int:
        """Entries of ``kinds`` before ``end``: the kept counts less those from ``end`` on."""
        stop, wanted = self._end(end), set(kinds)
        if stop < self._tail_start:
            raise Miss
        later = sum(1 for r in self._tail if r[0] >= stop and r[1] in wanted)
        return sum(self._counts.get(kind, 0) for kind in wanted) - later


def statements(session_id: str) -> list[tuple[str, tuple[str, ...]]]:
    """The snapshot's statements for ``session_id``, in the order ``assemble`` takes their rows."""
    sid = (session_id,)
    return [
        (_VERSION, ()),
        (postgres(SELECT_SESSION), sid),
        (_LEASE, sid),
        (_NEWEST, sid),
        (_RARE, sid),
        (_TAIL, sid),
        (_TEXTS, (session_id, session_id)),
    ]


def assemble(session_id: str, results: list[list[Row]]) -> Snapshot | int:
    """The snapshot from the rows of ``statements``; the schema version alone without a row."""
    version_row, session, lease, kinds, rare, tail, texts = results
    version = int(version_row[0][0])
    if not session:
        return version
    lease_row = lease[0] if lease else None
    return Snapshot(session_id, version, session[0], lease_row, kinds, rare, tail, texts)


def take(conn: psycopg.Connection[Any], session_id: str) -> Snapshot | int:
    """The session's snapshot, or the schema version alone when the session has no row.

    Raises ``psycopg.Error`` when the schema cannot answer (no ``schema_migrations``, no
    ``kind_counts``: an unmigrated or older database); the connection is then back to idle.
    """
    try:
        with conn.pipeline():
            conn.execute(BEGIN)
            cursors = [conn.execute(query, params) for query, params in statements(session_id)]
            conn.execute("COMMIT")
    except psycopg.Error:
        if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.execute("ROLLBACK")
        raise
    return assemble(session_id, [c.fetchall() for c in cursors])
