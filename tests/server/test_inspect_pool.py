"""Long inspections answered in a child process (``server.inspect_pool``).

Through a child, ``/context``, ``/report``, export and ``/cost`` answer what the serving
process itself answers; a failure there is the same JSON error; the caller is checked before
any child works; what cannot go to a child stays here; the children are gone once the app has
shut down.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import re
import signal
import sqlite3
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

import agentsession as ags
from agentsession.log import Record, UserEntry
from agentsession.server.inspect_pool import NICENESS, InspectPool
from agentsession.store.base import ViewRows

from ..benchmark_modules import load_benchmarks

ROUTES = ("context", "report", "export", "cost")


_lookup = load_benchmarks("_lookup")
lookup = _lookup.lookup
replies = _lookup.lookup_replies(lambda text: text, "Found it.")


def _runtime(db: Path | str, tmp_path: Path, **options: Any) -> ags.Runtime:
    """A runtime on the SQLite file ``db``, or on PostgreSQL when ``db`` is a DSN."""
    store = ags.SQLiteStore(db) if isinstance(db, Path) else ags.PostgresStore(db)
    return ags.Runtime(
        store=store,
        model=ags.ScriptedModel(replies),
        tools=[lookup],
        project_dir=tmp_path,
        config=ags.Config(titles=False, max_transcript_messages=8),
        **options,
    )


async def _long_session(db: Path | str, tmp_path: Path, turns: int = 6) -> str:
    """A session whose window has moved on (its first entries are read at no reopen)."""
    runtime = _runtime(db, tmp_path)
    session = await runtime.create_session()
    for n in range(turns):
        await session.prompt(f"question {n}")
    await runtime.close()
    return session.id


@pytest.fixture(autouse=True)
def _spool_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the serving process makes the files children write large bodies to."""
    folder = tmp_path / "spool"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@contextlib.asynccontextmanager
async def _served(
    db: Path | str,
    tmp_path: Path,
    runtime_options: dict[str, Any] | None = None,
    inline: int | None = None,
    **options: Any,
) -> AsyncIterator[tuple[httpx.AsyncClient, InspectPool]]:
    """An app on ``db``; with ``inline``, a pool whose children spool bodies above it."""
    runtime = _runtime(db, tmp_path, **(runtime_options or {}))
    app = ags.server.create_app(runtime, **options)
    if inline is not None:
        app.state.server.inspections = InspectPool(runtime.store, smallest=0, inline=inline)
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": "Bearer alice-token-0123456789"} if "tokens" in options else {}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=headers) as c,
    ):
        yield c, app.state.server.inspections
    await runtime.close()


IN_A_CHILD: dict[str, Any] = {"inspect_from": 0}
HERE: dict[str, Any] = {"inspect_workers": 0}


async def _answers(client: httpx.AsyncClient, session_id: str) -> dict[str, httpx.Response]:
    return {route: await client.get(f"/sessions/{session_id}/{route}") for route in ROUTES}


def _same(response: httpx.Response) -> tuple[int, str, bytes]:
    # The report names the minute it was made; the two may fall in different minutes.
    body = re.sub(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d", b"(stamp)", response.content)
    return response.status_code, response.headers["content-type"], body


async def test_a_child_answers_what_this_process_answers(tmp_path: Path) -> None:
    await _same_answers(tmp_path / "db.sqlite", tmp_path)


async def test_a_child_answers_what_this_process_answers_on_postgres(
    pg_dsn: str, tmp_path: Path
) -> None:
    await _same_answers(pg_dsn, tmp_path)


async def _same_answers(db: Path | str, tmp_path: Path) -> None:
    session_id = await _long_session(db, tmp_path)
    async with _served(db, tmp_path, **HERE) as (client, pool):
        here = await _answers(client, session_id)
        assert pool.answered == 0
    async with _served(db, tmp_path, **IN_A_CHILD) as (client, pool):
        there = await _answers(client, session_id)
        assert pool.answered == 4
    # Every body through a file, streamed in chunks: the same bytes and lengths again.
    async with _served(db, tmp_path, inline=0) as (client, pool):
        spooled = await _answers(client, session_id)
        assert pool.answered == 4
    for route in ROUTES:
        assert here[route].status_code == 200, here[route].text
        assert _same(there[route]) == _same(here[route]), route
        assert _same(spooled[route]) == _same(here[route]), route
        length = spooled[route].headers["content-length"]
        assert int(length) == len(spooled[route].content) == len(there[route].content), route
    assert list((tmp_path / "spool").iterdir()) == []  # each file removed once opened
    assert there["report"].headers["content-security-policy"]
    assert there["export"].headers["content-disposition"] == (
        f'attachment; filename="{session_id}.jsonl"'
    )
    assert there["context"].json()["context"]["messages"]


def _corrupt(db: Path, session_id: str, seq: int) -> None:
    conn = sqlite3.connect(db)
    try:
        with conn:
            changed = conn.execute(
                'UPDATE entries SET data = \'{"content": "broken\' WHERE seq = ? AND'
                " session_key = (SELECT session_key FROM sessions WHERE session_id = ?)",
                (seq, session_id),
            ).rowcount
        assert changed == 1
    finally:
        conn.close()


async def test_a_failure_in_the_child_is_the_error_this_process_sends(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    session_id = await _long_session(db, tmp_path)
    store = ags.SQLiteStore(db, read_only=True)
    first_user = next(r.seq for r in await store.read(session_id) if isinstance(r.entry, UserEntry))
    await store.close()
    _corrupt(db, session_id, first_user)  # read by an inspection, not by opening the session
    async with _served(db, tmp_path, **HERE) as (client, _):
        here = await client.get(f"/sessions/{session_id}/context")
    async with _served(db, tmp_path, **IN_A_CHILD) as (client, pool):
        there = await client.get(f"/sessions/{session_id}/context")
        assert pool.answered == 1
    async with _served(db, tmp_path, inline=0) as (client, pool):
        spooled = await client.get(f"/sessions/{session_id}/report")
        assert pool.answered == 1
    assert here.status_code == there.status_code == spooled.status_code == 503
    assert there.json() == here.json() == spooled.json()
    assert spooled.headers["content-type"] == "application/json"
    assert there.json()["error"]["type"] == "CorruptEntryError"
    assert there.json()["error"]["retryable"] is True
    assert str(tmp_path) not in there.text


async def test_a_store_the_child_cannot_open_is_a_store_error_without_its_path(
    tmp_path: Path,
) -> None:
    db = tmp_path / "db.sqlite"
    session_id = await _long_session(db, tmp_path)
    async with _served(db, tmp_path, **IN_A_CHILD) as (client, pool):
        assert (await client.get(f"/sessions/{session_id}")).status_code == 200
        db.rename(tmp_path / "moved.sqlite")  # this process keeps its open connection
        answer = await client.get(f"/sessions/{session_id}/report")
        assert pool.answered == 1
    assert answer.status_code == 503
    assert answer.json()["error"]["type"] == "StoreError"
    assert "db.sqlite" not in answer.text and str(tmp_path) not in answer.text


async def test_the_caller_is_checked_before_any_child_works(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    session_id = await _long_session(db, tmp_path)  # made with no token: no owner
    tokens: dict[str, Any] = {"tokens": ["alice-token-0123456789"]}
    async with _served(db, tmp_path, **IN_A_CHILD, **tokens) as (client, pool):
        refused = [await client.get(f"/sessions/{session_id}/{r}") for r in ROUTES]
        assert pool.answered == 0
        assert multiprocessing.active_children() == []
    assert {r.status_code for r in refused} == {404}


class _LocalCounter:
    """A token counter of the application's own, which another process cannot take."""

    def count(self, text: str) -> int:
        return len(text) // 3 + 1


async def test_what_cannot_go_to_a_child_is_answered_here(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    session_id = await _long_session(db, tmp_path)

    class Counter(_LocalCounter):  # defined in a function: it does not pickle
        pass

    options = {"token_counter": Counter()}
    async with _served(db, tmp_path, options, **IN_A_CHILD) as (client, pool):
        context = await client.get(f"/sessions/{session_id}/context")
        export = await client.get(f"/sessions/{session_id}/export")
        assert pool.answered == 1  # the export needs no counter (an estimate does pickle)
    assert context.status_code == 200 and export.status_code == 200
    runtime = ags.Runtime(store=ags.MemoryStore(), model=ags.ScriptedModel([]))
    in_memory = InspectPool(runtime.store, smallest=0)
    info = await runtime.store.get_session((await runtime.create_session()).id)
    assert not in_memory.takes(info)
    assert await in_memory.answer("export", info) is None
    await in_memory.close()
    await runtime.close()


async def test_the_children_are_gone_when_the_app_has_shut_down(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    session_id = await _long_session(db, tmp_path)
    store = ags.SQLiteStore(db, read_only=True)
    info = await store.get_session(session_id)
    await store.close()
    async with _served(db, tmp_path, **IN_A_CHILD) as (client, pool):
        assert pool.takes(info)
        assert (await client.get(f"/sessions/{session_id}/context")).status_code == 200
        assert multiprocessing.active_children() != []
    assert multiprocessing.active_children() == []
    assert not pool.takes(info)
    assert await pool.answer("export", info) is None


async def test_the_children_run_at_a_lower_priority_than_the_server(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    session_id = await _long_session(db, tmp_path)
    async with _served(db, tmp_path, **IN_A_CHILD) as (client, _):
        assert (await client.get(f"/sessions/{session_id}/export")).status_code == 200
        (child,) = multiprocessing.active_children()
        lowered = os.getpriority(os.PRIO_PROCESS, child.pid or 0)
    # Lowered once (by the parent and again by the child's initializer: to the same level).
    assert lowered == min(19, os.getpriority(os.PRIO_PROCESS, 0) + NICENESS)


async def test_a_child_that_dies_is_a_json_error_and_the_next_inspection_starts_anew(
    tmp_path: Path,
) -> None:
    db = tmp_path / "db.sqlite"
    session_id = await _long_session(db, tmp_path)
    async with _served(db, tmp_path, **IN_A_CHILD) as (client, pool):
        assert (await client.get(f"/sessions/{session_id}/cost")).status_code == 200
        (child,) = multiprocessing.active_children()
        os.kill(child.pid or 0, signal.SIGKILL)
        await asyncio.to_thread(child.join, 60)
        failed = await client.get(f"/sessions/{session_id}/cost")
        again = await client.get(f"/sessions/{session_id}/cost")
        assert pool.answered == 2
    assert failed.status_code == 500
    assert failed.json()["error"]["type"] == "InspectionStoppedError"
    assert again.status_code == 200 and again.json()["session_id"] == session_id
    assert multiprocessing.active_children() == []
    assert list((tmp_path / "spool").iterdir()) == []  # nor a file the dead child had


async def test_other_sessions_are_served_while_a_child_inspects(tmp_path: Path) -> None:
    """The serving process only waits for the child: with the child held, others are answered.

    The child is stopped (SIGSTOP) before the inspection reaches it, so the inspection cannot
    end while the other session's prompt runs, however fast or slow the machine is.
    """
    db = tmp_path / "db.sqlite"
    session_id = await _long_session(db, tmp_path)
    async with _served(db, tmp_path, inline=0) as (client, pool):
        other = (await client.post("/sessions", json={})).json()["id"]
        assert (await client.get(f"/sessions/{session_id}/cost")).status_code == 200
        (child,) = multiprocessing.active_children()
        os.kill(child.pid or 0, signal.SIGSTOP)
        try:
            inspecting = asyncio.create_task(client.get(f"/sessions/{session_id}/report"))
            while pool.running == 0 and not inspecting.done():  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # until the job is on its way to the stopped child
            answered = await client.post(f"/sessions/{other}/prompt", json={"text": "hi"})
            shown = await client.get(f"/sessions/{other}")
            assert not inspecting.done() and pool.running == 1
        finally:
            os.kill(child.pid or 0, signal.SIGCONT)
        report = await inspecting
    assert answered.status_code == 200 and shown.status_code == 200
    assert report.status_code == 200 and "<html" in report.text
    assert pool.answered == 2


class _CountingSQLite(ags.SQLiteStore):
    """The real SQLite store, counting by kind the entries its reads decode (every read path)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.decoded: Counter[str] = Counter()

    def _read_now(self, *args: Any, **kwargs: Any) -> list[Record]:
        found = super()._read_now(*args, **kwargs)
        self.decoded.update(r.entry.kind for r in found)
        return found

    def _last_now(self, *args: Any, **kwargs: Any) -> Record | None:
        found = super()._last_now(*args, **kwargs)
        self.decoded.update([found.entry.kind] if found is not None else [])
        return found

    async def _read_view(self, *args: Any, **kwargs: Any) -> ViewRows:
        epoch, records, dispatch = await super()._read_view(*args, **kwargs)
        found: Sequence[Record | None] = [epoch, *records, dispatch]
        self.decoded.update(r.entry.kind for r in found if r is not None)
        return epoch, records, dispatch


async def _decoded_here(db: Path, tmp_path: Path, session_id: str, route: str) -> Counter[str]:
    """What the serving process decoded to answer ``route`` through a child process.

    The app serves a runtime on the counting store; its inspections go to a pool over a plain
    store of the same file (a subclass never goes to a child: its own state would not follow).
    """
    store = _CountingSQLite(db)
    runtime = ags.Runtime(
        store=store,
        model=ags.ScriptedModel(replies),
        tools=[lookup],
        project_dir=tmp_path,
        config=ags.Config(titles=False, max_transcript_messages=8),
    )
    app = ags.server.create_app(runtime)
    pool = app.state.server.inspections = InspectPool(ags.SQLiteStore(db), smallest=0)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://localhost") as client,
    ):
        assert (await client.get(f"/sessions/{session_id}")).status_code == 200
        store.decoded.clear()
        answer = await client.get(f"/sessions/{session_id}/{route}")
        assert answer.status_code == 200, answer.text
        assert pool.answered == 1
        decoded = store.decoded.copy()
    await pool.close()
    await runtime.close()
    return decoded


async def test_the_serving_process_decodes_only_the_current_window_when_a_child_inspects(
    tmp_path: Path,
) -> None:
    short_db, long_db = tmp_path / "short.sqlite", tmp_path / "long.sqlite"
    short_id = await _long_session(short_db, tmp_path, turns=6)
    long_id = await _long_session(long_db, tmp_path, turns=30)
    async with _served(long_db, tmp_path, **HERE) as (client, _):
        entries = (await client.get(f"/sessions/{long_id}/export")).text.count("\n") - 1
    for route in ("context", "report"):
        short = await _decoded_here(short_db, tmp_path, short_id, route)
        long = await _decoded_here(long_db, tmp_path, long_id, route)
        # The whole log is read in the child: here, what a prompt reads too (the state, the
        # current window), the same for five times the turns, and never a checkpoint.
        assert sum(long.values()) == sum(short.values()) < entries // 4, (route, long)
        assert long["system_prompt_checkpoint"] == 0, route
