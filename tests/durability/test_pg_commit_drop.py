"""PostgreSQL: a session's commit is cut by killing its backend (``pg_terminate_backend``).

The commit is caught in the middle, where the server is really working on it, then the backend
is terminated:

- ``before``: a deferred constraint trigger on ``entries`` runs at ``COMMIT`` and waits for an
  advisory lock the test holds. Killed there, the transaction is rolled back: nothing of it.
- ``after``: the server is told to wait for a synchronous standby that does not exist, so a
  commit, already durable in the local WAL, waits for it. Killed there, the transaction has
  happened, and the client only sees its connection die — the answer is lost.

Either way the session sees a ``StoreError``, the log holds the batch whole or not at all, the
store reconnects, and the session continues (``flush()``, ``retry()``) to exactly the clean
run's end. Every append of the script is cut once, each way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.log import LogEntry, Record

from ..store import pg
from .script import Faults, When, assert_same_as_clean, run_script

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg")

HOLD_KEY = 4242
GHOST = "agentsession_no_such_standby"


def application(dsn: str) -> str:
    """The application name ``pg.schema`` gave this test's connections."""
    return str(psycopg.conninfo.conninfo_to_dict(dsn)["application_name"])


async def run(dsn: str, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
    return await asyncio.to_thread(pg.run, dsn, sql, params)


async def backend_waiting(dsn: str, wait_event: str) -> int:
    """The pid of this test's backend waiting on ``wait_event`` (polls for up to 10 s)."""
    for _ in range(1000):
        rows = await run(
            dsn,
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s"
            " AND pid <> pg_backend_pid() AND wait_event = %s",
            (application(dsn), wait_event),
        )
        if rows:
            return int(rows[0][0])
        await asyncio.sleep(0.01)
    raise AssertionError(f"no backend of this test waited on {wait_event}")


async def commit_waits_for_standby(dsn: str) -> bool:
    """Whether a commit now waits for the (missing) synchronous standby; a probe, cancelled."""
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    try:
        # Only a transaction that wrote WAL before its commit record waits for a standby.
        probe = asyncio.create_task(conn.execute("INSERT INTO sync_probe VALUES (1)"))
        pid = conn.info.backend_pid
        for _ in range(50):
            rows = await run(dsn, "SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (pid,))
            if rows and rows[0][0] == "SyncRep":
                await run(dsn, "SELECT pg_cancel_backend(%s)", (pid,))
                with contextlib.suppress(psycopg.Error):
                    await probe
                return True
            if probe.done():
                await probe
                return False
            await asyncio.sleep(0.01)
        raise AssertionError("the probe neither committed nor waited")
    finally:
        await conn.close()


async def set_standby(dsn: str, names: str | None, *, wait: bool = True) -> None:
    """Set (or reset) ``synchronous_standby_names``; ``wait`` until commits obey it."""
    if names is None:
        await run(dsn, "ALTER SYSTEM RESET synchronous_standby_names")
    else:
        await run(dsn, f"ALTER SYSTEM SET synchronous_standby_names = '{names}'")
    await run(dsn, "SELECT pg_reload_conf()")
    if not wait:
        return
    for _ in range(200):
        if await commit_waits_for_standby(dsn) == (names is not None):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the server did not take the new synchronous_standby_names")


async def why_no_standby_trick(dsn: str) -> str | None:
    """Why commits cannot be held after they happened here (``None``: they can).

    It changes a server-wide setting for a moment, so it runs only on the throwaway cluster
    ``make test`` starts, never on a server of the user's own.
    """
    rows = await run(dsn, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    if not rows or not rows[0][0]:
        return "needs a superuser"
    folder = str((await run(dsn, "SHOW data_directory"))[0][0])
    if "/agentsession-pg." not in folder:
        return "runs only on the throwaway cluster .ci/with-postgres starts"
    return None


class CommitCutter(Faults):
    """Cuts the appends numbered in ``cuts`` (among all writes) in the middle of their commit."""

    def __init__(self, inner: ags.Store, cuts: Mapping[int, When], side: Path, *, dsn: str) -> None:
        super().__init__(inner, {}, side)
        self.cuts = dict(cuts)
        self.dsn = dsn

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        number = self.writes + 1
        when = self.cuts.get(number)
        if when is None:
            return await super().append(session_id, expected_seq, entries)
        self.failed.append((number, "append"))
        async with self._held(when):
            write = asyncio.create_task(super().append(session_id, expected_seq, entries))
            pid = await backend_waiting(self.dsn, "advisory" if when == "before" else "SyncRep")
            await run(self.dsn, "SELECT pg_terminate_backend(%s)", (pid,))
            with pytest.raises(ags.StoreError) as caught:
                await write
            assert isinstance(caught.value.__cause__, psycopg.OperationalError)
            raise caught.value

    @contextlib.asynccontextmanager
    async def _held(self, when: When) -> AsyncIterator[None]:
        """Commits wait in the middle while the block runs (before or after they happen)."""
        if when == "after":
            try:
                await set_standby(self.dsn, GHOST)
                yield
            finally:
                await set_standby(self.dsn, None)
            return
        await run(
            self.dsn,
            "CREATE CONSTRAINT TRIGGER hold AFTER INSERT ON entries DEFERRABLE INITIALLY"
            " DEFERRED FOR EACH ROW EXECUTE FUNCTION hold_commit()",
        )
        holder = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        try:
            await holder.execute("SELECT pg_advisory_lock(%s)", (HOLD_KEY,))
            yield
        finally:
            await holder.close()
            await run(self.dsn, "DROP TRIGGER hold ON entries")


@pytest.mark.parametrize("when", ["before", "after"])
async def test_a_backend_killed_in_the_middle_of_each_commit(
    pg_dsn: str, tmp_path: Path, when: When
) -> None:
    store = ags.PostgresStore(pg_dsn)
    try:
        await store.list_sessions()  # creates the schema
        if when == "after" and (reason := await why_no_standby_trick(pg_dsn)) is not None:
            pytest.skip(f"a commit cannot be held after it happened: {reason}")
        await run(pg_dsn, "CREATE TABLE sync_probe (n integer)")
        await run(
            pg_dsn,
            "CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            f" PERFORM pg_advisory_lock({HOLD_KEY}); PERFORM pg_advisory_unlock({HOLD_KEY});"
            " RETURN NULL; END $$",
        )
        for name in ["clean", "count", *(f"cut-{n}" for n in range(1, 100))]:
            (tmp_path / name).mkdir()
        clean = await run_script(store, tmp_path / "clean", {})
        numbers = await append_numbers(store, tmp_path / "count")
        assert len(numbers) >= 12
        admissions = 0
        for n in numbers:
            outcome = await run_script(
                store,
                tmp_path / f"cut-{n}",
                {n: when},
                wrapper=lambda inner, cuts, side: CommitCutter(inner, cuts, side, dsn=pg_dsn),
            )
            label = f"write {n} cut {when} its commit"
            assert outcome.failed == [(n, "append")], label
            assert_same_as_clean(outcome, clean, label)
            admissions += outcome.points == ["admission"]
        assert admissions >= 4
    finally:
        if when == "after":  # whatever happened, commits must not wait for a standby
            await set_standby(pg_dsn, None, wait=False)
        await store.close()


async def append_numbers(store: ags.Store, folder: Path) -> list[int]:
    """The numbers (among all writes) of the script's appends, from a clean run."""
    seen: list[NumberingFaults] = []

    def counting(inner: ags.Store, faults: Mapping[int, When], side: Path) -> Faults:
        made = NumberingFaults(inner, faults, side)
        seen.append(made)
        return made

    await run_script(store, folder, {}, wrapper=counting)
    return seen[0].append_numbers


class NumberingFaults(Faults):
    """Notes the write number of every append."""

    def __init__(self, inner: ags.Store, faults: Mapping[int, When], side: Path) -> None:
        super().__init__(inner, faults, side)
        self.append_numbers: list[int] = []

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        self.append_numbers.append(self.writes + 1)
        return await super().append(session_id, expected_seq, entries)
