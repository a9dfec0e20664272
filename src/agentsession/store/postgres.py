"""PostgreSQL: one database shared by many worker processes on many machines.

- psycopg 3 in async mode with a ``psycopg_pool.AsyncConnectionPool`` (made by the first
  call that needs it, in the caller's event loop; a store serves one event loop). Connections
  are checked when taken from the pool, so a connection the server dropped is replaced;
- the schema and its migrations are the SQLite store's (``migrations.py``, PostgreSQL dialect),
  applied at the first call under a transaction-scoped advisory lock, so processes starting
  together migrate once; every table is keyed by ``session_id`` first and shards unchanged;
- every write is one transaction. An append locks its session row (``SELECT … FOR UPDATE``)
  before comparing the row's ``next_seq`` with the expected seq, so concurrent writers to one
  session queue on that row and every loser gets ``ConflictError`` with nothing written;
- the synchronous reads of ``ReadsNow``/``FindsNow`` run on one blocking connection of the
  store's own (``_postgres_now``), which also migrates; until the pool's first use the async
  reads run there too, and a reopen's reads are one round trip (``_postgres_snapshot``);
- ``last()`` is one statement (one snapshot): a descent of the kind index per wanted kind; the
  baseline texts an epoch refers to (kept once per session in ``texts``) are read after it;
- leases are rows whose expiry is judged by the server's clock (``clock_timestamp()``), so
  workers on machines with skewed clocks still agree, and a dead holder's lease is void at once
  (``_postgres_presence``);
- every driver failure is a ``StoreError`` naming the server (never its password), chained
  with ``from``. A connection lost during ``COMMIT`` leaves it unknown whether the transaction
  committed: the caller re-reads the log (``get_session``) before writing again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from ..errors import SessionNotFoundError, StoreError
from ..log import LogEntry, Record, now
from ._postgres_leases import LeaseOps
from ._postgres_view import ViewRead
from ._sql import (
    COPY_ENTRIES,
    COPY_TEXTS,
    COUNT_MESSAGES,
    DELETE_SESSION,
    INSERT_SESSION,
    LAST_MODEL_ROWS,
    LIST_SESSIONS,
    LIST_SESSIONS_AFTER,
    LIST_SESSIONS_FIRST,
    SELECT_SESSION,
    SESSION_EXISTS,
    SET_COUNTERS,
    SET_TITLE,
    UPDATE_AFTER_APPEND,
    page_params,
    session_row,
)
from ._sql import (
    postgres as sql_postgres,
)
from .base import (
    Batch,
    SessionInfo,
    check_fork,
    check_info,
    conflict,
    decode_row,
    encode_batch,
    exists,
    info_from_row,
    kinds_list,
    newest_model,
    storable,
)
from .fast import FastPaths

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg_pool import AsyncConnectionPool

    from ._postgres import (
        LAST_ENTRY,
        describe,
        insert_entries,
        kept_texts,
        new_pool,
        range_query,
    )
    from ._postgres_now import NowReader
    from ._postgres_presence import Presence
    from ._postgres_reopen import Reopening
    from ._postgres_snapshot import Miss
except ImportError:  # pragma: no cover - the optional extra is not installed
    _DRIVER = False
else:
    _DRIVER = True

__all__ = ["PostgresStore"]


class PostgresStore(LeaseOps, ViewRead):
    """Sessions in PostgreSQL for many workers (the ``postgres`` extra); methods as ``Store``'s.

    Args:
        dsn: A libpq connection string or ``postgresql://`` URL. Nothing connects until the
            first call, which opens the pool and migrates the schema.
        read_only: Read-only transactions; the schema is never changed (an older one is refused).
        pool_size: The most connections this store opens.
        timeout: Seconds a call waits for a connection.
    """

    def __init__(
        self,
        dsn: str,
        *,
        read_only: bool = False,
        pool_size: int = 10,
        timeout: float = 30.0,
    ) -> None:
        """Prepare the store; the first call connects."""
        if not _DRIVER:
            raise StoreError(
                "PostgresStore needs psycopg 3 and psycopg_pool: install agentsession[postgres]"
            )
        self.dsn = dsn
        self.read_only = read_only
        self._name = describe(dsn)
        self._pool_size = max(1, pool_size)
        self._timeout = timeout
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None
        self._opening = asyncio.Lock()
        self._closed = False
        self._prepared = False
        self._pooled = False
        self._now = NowReader(dsn, self._name, timeout, read_only)
        # Reads now on a connection of their own, a reopen's snapshot (``store.fast``).
        reads = (self._read_now, self._count_now, self._last_now, self._read_view)
        # A reopen's reads in one round trip once the pool is in use (``_postgres_reopen``).
        self._reopen = Reopening(self._connection, lambda: self._pooled)
        self.fast_paths = FastPaths(
            *reads,
            count_held=self._count_held,
            list_page=self._list_page,
            statement=self._statement,
            reopening=self._reopen.reopening,
            take_lease=self._take_lease_seeing,
        )
        self._presence = Presence(dsn, read_only)

    def __repr__(self) -> str:
        return f"PostgresStore(<{self._name}>{', read_only=True' if self.read_only else ''})"

    # -- connecting ------------------------------------------------------------------------

    async def _ready(self, reopening: str | None = None) -> None:
        """Connect and check the schema once, on a thread (with a reopen's snapshot)."""
        async with self._opening:
            if self._closed:
                raise StoreError(f"{self._name} is closed")
            if not self._prepared:
                await asyncio.to_thread(self._now.prepare, reopening)
                self._prepared = True

    async def _opened(self) -> AsyncConnectionPool[Any]:
        """The pool, made and opened at the first call that needs it (a write, a later read)."""
        await self._ready()
        async with self._opening:
            if self._closed:
                raise StoreError(f"{self._name} is closed")
            if self._pool is not None:
                return self._pool
            pool = new_pool(self.dsn, self._pool_size, self._timeout, self.read_only)
            try:
                await pool.open()
            except BaseException as exc:  # cancelled too: the pool is not left open
                await pool.close()
                if isinstance(exc, psycopg.Error):
                    raise StoreError(f"cannot open {self._name}: {exc}") from exc
                raise
            self._pool = pool
            return pool

    async def _cold(self, reopening: str | None = None) -> bool:
        """Whether a read runs on the blocking connection (before the pool's first use).

        A fresh process's reopen then needs one connection, not a second one to wait for (and
        its fresh backend's first statements); see docs/decisions.md.
        """
        await self._ready(reopening)
        return not self._pooled and not self._now.busy()

    @contextlib.asynccontextmanager
    async def _connection(
        self, action: str, *, write: bool = False
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection (inside one transaction when ``write``); errors as ``StoreError``."""
        pool = await self._opened()
        self._pooled = True
        self._now.forget()  # from now on reads see the pool's writes, not the reopen's snapshot
        try:
            async with pool.connection() as conn:
                if write:
                    async with conn.transaction():
                        yield conn
                else:
                    yield conn
        except (psycopg.Error, UnicodeError) as exc:  # a value with no UTF-8 form included
            raise StoreError(f"{self._name}: {action} failed: {exc}") from exc

    @staticmethod
    async def _one(
        conn: psycopg.AsyncConnection[Any], query: str, params: Sequence[Any]
    ) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = await (await conn.execute(query, params)).fetchone()
        return row

    async def _row(
        self, conn: psycopg.AsyncConnection[Any], session_id: str, lock: str = ""
    ) -> SessionInfo:
        row = await self._one(conn, sql_postgres(SELECT_SESSION) + lock, (session_id,))
        if row is None:
            raise SessionNotFoundError(session_id)
        return info_from_row(row)

    # -- sessions --------------------------------------------------------------------------

    async def _insert(
        self, conn: psycopg.AsyncConnection[Any], info: SessionInfo, next_seq: int, batch: Batch
    ) -> None:
        try:
            async with conn.transaction():  # a savepoint: the caller's error is ours to name
                await conn.execute(sql_postgres(INSERT_SESSION), session_row(info, next_seq, batch))
        except pg_errors.UniqueViolation as exc:
            raise exists(info.id) from exc

    async def create_session(self, info: SessionInfo, entries: Sequence[LogEntry] = ()) -> None:
        """Create a session holding ``entries`` in one transaction (see ``Store``)."""
        check_info(info)
        batch = encode_batch(entries)
        async with self._connection(f"create session {info.id!r}", write=True) as conn:
            await self._insert(conn, info, len(batch.rows), batch)
            await insert_entries(conn, info.id, 0, batch)

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session's row with its current ``next_seq``; ``SessionNotFoundError`` if none."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        if await self._cold(session_id):  # a reopen: its reads come with the schema check
            return self._now.session(session_id)
        if (snap := self._reopen.served(session_id)) is not None:
            return info_from_row(snap.session)
        async with self._connection(f"read session {session_id!r}") as conn:
            return await self._row(conn, session_id)

    async def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently updated first (ties: newest created, then by id)."""
        async with self._connection("list sessions") as conn:
            rows = await (await conn.execute(LIST_SESSIONS)).fetchall()
        return [info_from_row(row) for row in rows]

    async def _statement(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """One statement of the caller's own, on a pooled connection (``store.fast``)."""
        async with self._connection("a statement of the server's own") as conn:
            cursor = await conn.execute(query, params)
            return list(await cursor.fetchall()) if cursor.description else []

    async def _list_page(self, limit: int, after: tuple[str, str, str] | None) -> list[SessionInfo]:
        """One page of ``list_sessions`` (``store.fast``): that page's rows are all it reads."""
        query = sql_postgres(LIST_SESSIONS_FIRST if after is None else LIST_SESSIONS_AFTER)
        async with self._connection("list sessions") as conn:
            rows = await (await conn.execute(query, page_params(limit, after))).fetchall()
        return [info_from_row(row) for row in rows]

    async def set_title(self, session_id: str, title: str) -> None:
        """Store the session's title (``updated_at`` is left alone: it tracks the log)."""
        check_info(SessionInfo(session_id, "", "", title=title))
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        async with self._connection(f"set the title of session {session_id!r}") as conn:
            cursor = await conn.execute(sql_postgres(SET_TITLE), (title, session_id))
            if cursor.rowcount == 0:
                raise SessionNotFoundError(session_id)

    async def delete_session(self, session_id: str) -> None:
        """Delete the session, its log and its lease in one transaction."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        async with self._connection(f"delete session {session_id!r}", write=True) as conn:
            await self._row(conn, session_id, " FOR UPDATE")
            await conn.execute("DELETE FROM kind_counts WHERE session_id = %s", (session_id,))
            for statement in DELETE_SESSION:
                await conn.execute(sql_postgres(statement), (session_id,))

    async def fork_session(self, source_id: str, info: SessionInfo, upto_seq: int) -> SessionInfo:
        """A copy of the source's log up to ``upto_seq`` as session ``info.id`` (see ``Store``)."""
        check_info(info)
        if not storable(source_id):
            raise SessionNotFoundError(source_id)
        action = f"fork session {source_id!r} as {info.id!r}"
        async with self._connection(action, write=True) as conn:
            # FOR SHARE: no append to the source can slip in while its log is copied.
            source = await self._row(conn, source_id, " FOR SHARE")
            check_fork(source_id, source.next_seq, upto_seq)
            forked = replace(info, file_version=source.file_version)
            await self._insert(conn, forked, upto_seq + 1, Batch([], 0, None))
            await conn.execute(sql_postgres(COPY_ENTRIES), (info.id, source_id, upto_seq))
            await conn.execute(sql_postgres(COPY_TEXTS), (info.id, source_id))
            counted = await self._one(conn, sql_postgres(COUNT_MESSAGES), (info.id,))
            rows = await (await conn.execute(sql_postgres(LAST_MODEL_ROWS), (info.id,))).fetchall()
            model = newest_model(info.id, rows)
            await conn.execute(
                sql_postgres(SET_COUNTERS), (counted[0] if counted else 0, model, info.id)
            )
            return await self._row(conn, info.id)

    # -- the log ---------------------------------------------------------------------------

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        """Append ``entries`` at ``expected_seq``, ``expected_seq + 1``, … in one transaction.

        ``ConflictError`` (nothing written) when the log's next seq is not ``expected_seq``,
        ``SessionNotFoundError`` for an unknown session, ``StoreError`` when the database
        refuses the write; in every failure case no entry of the batch is stored.
        """
        entries = list(entries)
        batch = encode_batch(entries)
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        async with self._connection(f"append to session {session_id!r}", write=True) as conn:
            # The row lock queues concurrent writers of this session behind each other.
            next_seq = (await self._row(conn, session_id, " FOR UPDATE")).next_seq
            if next_seq != expected_seq:
                raise conflict(session_id, next_seq, expected_seq)
            if batch.rows:
                await insert_entries(conn, session_id, expected_seq, batch)
                await conn.execute(
                    sql_postgres(UPDATE_AFTER_APPEND),
                    (
                        expected_seq + len(batch.rows),
                        now(),
                        batch.messages,
                        batch.last_model,
                        session_id,
                    ),
                )
        return [Record(expected_seq + i, entry) for i, entry in enumerate(entries)]

    async def read(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        """Entries with ``start <= seq < end`` (optionally only of ``kinds``), in seq order.

        ``SessionNotFoundError`` for an unknown session; ``CorruptEntryError`` naming the seq
        of the first row that cannot be decoded.
        """
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        if await self._cold():
            return self._now.read(session_id, start, end, kinds)
        if (snap := self._reopen.served(session_id)) is not None:
            with contextlib.suppress(Miss):  # one it does not hold is read from the database
                return snap.read(start, end, kinds)
        query, params = range_query(session_id, start, end, kinds_list(kinds))
        async with self._connection(f"read session {session_id!r}") as conn:
            rows = await (await conn.execute(query, params)).fetchall()
            if not rows:
                await self._require(conn, session_id)
            texts = await kept_texts(conn, session_id, rows)
        return [decode_row(session_id, seq, kind, v, data, texts) for seq, kind, v, data in rows]

    def _read_now(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Record]:
        """``read``, synchronously (see ``ReadsNow``), on the store's blocking connection."""
        return self._now.read(session_id, start, end, kinds)

    def _count_now(self, session_id: str, kinds: Sequence[str], end: int) -> int:
        """How many entries of ``kinds`` lie before ``end``: index counts, nothing decoded."""
        return self._now.count(session_id, kinds, end)

    def _last_now(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """``last``, synchronously (see ``FindsNow``), on the store's blocking connection."""
        return self._now.last(session_id, kinds)

    async def _require(self, conn: psycopg.AsyncConnection[Any], session_id: str) -> None:
        if await self._one(conn, sql_postgres(SESSION_EXISTS), (session_id,)) is None:
            raise SessionNotFoundError(session_id)

    async def last(self, session_id: str, kinds: Sequence[str]) -> Record | None:
        """The newest entry of one of ``kinds``, or ``None``; one index descent per kind."""
        if not storable(session_id):
            raise SessionNotFoundError(session_id)
        if await self._cold():
            return self._now.last(session_id, kinds)
        if (snap := self._reopen.served(session_id)) is not None:
            with contextlib.suppress(Miss):
                return snap.last(kinds)
        wanted = kinds_list(kinds) or []
        async with self._connection(f"read session {session_id!r}") as conn:
            params = {"s": session_id, "k": wanted}
            row = await self._one(conn, LAST_ENTRY, params)  # type: ignore[arg-type]
            if row is None:
                await self._require(conn, session_id)
                return None
            texts = await kept_texts(conn, session_id, [row])
        seq, kind, version, data = row
        return decode_row(session_id, seq, kind, version, data, texts)

    # -- lifetime --------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the pool (idempotent); later calls raise ``StoreError``."""
        async with self._opening:
            self._closed = True
            pool, self._pool = self._pool, None
        self._now.close()
        await self._presence.close()
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
