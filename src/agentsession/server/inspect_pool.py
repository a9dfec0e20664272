"""Inspection in another process: ``InspectPool`` answers ``/context``, ``/report``, export, cost.

Why: rebuilding a long session's requests is pure Python. On a worker thread it shares the
interpreter lock with the event loop, so every other session of the process slows down while
it runs (4-6× at 10,000 entries). A child process has an interpreter of its own.

How: the parent checks the caller and opens the session for what only it has (the tools,
model, context components: ``inspection.inputs.InspectionInputs``), then hands those plain
values and where the store lives to a child, which opens its own read-only store, reads the
log, rebuilds and answers the response body. A failure in the child becomes there the JSON
error the parent would have sent (``wire.error_body``), so only a status and a body cross. A
large body (a report or an export: tens of megabytes) crosses as a file (``spooled_body``) that
the parent streams on in chunks: nothing of the session's size is received, decoded or copied
on the event loop.

The pool is small (``workers``), started with the first long inspection (on a worker thread:
starting a process and the pool's threads waits for them to run, which on a busy machine is
long), with the "spawn" method: never fork a process that runs threads and an event loop. Its
children run at a lower CPU priority (``NICENESS`` below the serving process's) from the
moment the parent sees them started, since their imports would otherwise run at full priority,
before their initializer.
So on a machine with few cores an inspection, which a person waits for once, yields to the
turns of every other session, which people wait for all the time. Not ``SCHED_IDLE``: under
load that starves an inspection for as long as anything else wants the CPU. The serving
process itself only opens the session (its state and current window, as a prompt does) to
preview the next request; the whole log is read and decoded in the child. Kept in the parent's
thread path: a store another process cannot open (in memory, or any other kind), a session
shorter than ``smallest`` entries (starting work in a child costs more than it saves), and
inputs that do not pickle (an application's own token counter, say). At shutdown pending work
is cancelled and running children are stopped: they only read.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Literal

from starlette.responses import JSONResponse

from .._frozen import frozen
from ..codec import canonical_texts_held, encode
from ..config import ModelPrice
from ..errors import AgentSessionError, UsageError
from ..inspection.inputs import InspectionInputs, inspect_records
from ..inspection.report import REPORT_POLICY, render_report
from ..inspection.views import Inspection
from ..ledger import LEDGER_KINDS, charges_of, cost_fields, summarize
from ..log import Record
from ..store.base import SessionInfo, Store
from ..store.postgres import PostgresStore
from ..store.session_file import render_session_file
from ..store.sqlite import SQLiteStore
from .spooled_body import INLINE, SpooledBody, spool, spool_file
from .wire import error_body, status_of

__all__ = [
    "DEFAULT_SMALLEST",
    "EXPORT_MEDIA",
    "NICENESS",
    "InspectPool",
    "InspectionStoppedError",
    "Kind",
    "context_json",
    "export_headers",
    "report_headers",
]

#: Log entries from which a session is inspected in another process.
DEFAULT_SMALLEST = 2000

#: The media type of an exported session file.
EXPORT_MEDIA = "application/x-ndjson"

#: How much less CPU priority the children take than the serving process (``os.nice``).
NICENESS = 10
#: The lowest priority a process can take (the highest niceness).
_LOWEST = 19

Kind = Literal["context", "report", "export", "cost"]


class InspectionStoppedError(AgentSessionError):
    """The process inspecting the session ended before it answered (500; try again)."""


def context_json(inspection: Inspection) -> dict[str, Any]:
    """The body of ``GET /sessions/{id}/context``: the next request, annotated."""
    if inspection.next_request is None:
        raise UsageError(f"cannot preview the next request: {inspection.next_error}")
    return {"session_id": inspection.session_id, "context": encode(inspection.next_request)}


def report_headers() -> dict[str, str]:
    """The headers of the HTML report (it runs only its own script)."""
    return {"Content-Security-Policy": REPORT_POLICY}


def export_headers(session_id: str) -> dict[str, str]:
    """The headers of an exported session file (a download named after the session)."""
    return {"Content-Disposition": f'attachment; filename="{session_id}.jsonl"'}


@frozen
class _Where:
    """Where a child opens the store: a SQLite file or a PostgreSQL URL (never sent out)."""

    kind: Literal["sqlite", "postgres"]
    location: str


@frozen
class _Job:
    """One inspection for a child: what to answer, for which session, from what."""

    kind: Kind
    where: _Where
    info: SessionInfo
    spool: str
    inline: int
    inputs: InspectionInputs | None = None
    generated: str = ""
    version: str = ""
    prices: Mapping[str, ModelPrice] | None = None


def _where(store: Store) -> _Where | None:
    """Where another process finds ``store``; ``None`` when it cannot (memory, other kinds).

    Exact types only: a subclass may keep state a fresh instance would not have.
    """
    if type(store) is SQLiteStore:
        return _Where("sqlite", str(store.path))
    if type(store) is PostgresStore:
        return _Where("postgres", store.dsn)
    return None


class InspectPool:
    """A few child processes that answer long inspections (module doc); one per app."""

    def __init__(
        self,
        store: Store,
        *,
        workers: int = 1,
        smallest: int = DEFAULT_SMALLEST,
        inline: int = INLINE,
    ):
        """Inspect ``store``'s sessions of ``smallest`` entries or more in ``workers`` children.

        ``workers`` 0: never in another process. Bodies larger than ``inline`` bytes come back
        through a file and are streamed (``spooled_body``).
        """
        self._inline = inline
        self._where = _where(store) if workers > 0 else None
        self._workers = workers
        self._smallest = smallest
        self._executor: ProcessPoolExecutor | None = None
        self._niceness = _children_niceness()
        self._lowered: set[int] = set()
        self._closed = False
        self._running = 0
        #: Inspections children answered (an error included), since the app started.
        self.answered = 0

    def takes(self, info: SessionInfo) -> bool:
        """Whether an inspection of ``info``'s session goes to a child process."""
        return self._where is not None and not self._closed and info.next_seq >= self._smallest

    async def answer(
        self,
        kind: Kind,
        info: SessionInfo,
        *,
        inputs: InspectionInputs | None = None,
        generated: str = "",
        version: str = "",
        prices: Mapping[str, ModelPrice] | None = None,
    ) -> tuple[int, bytes | SpooledBody] | None:
        """The status and body a child answered; ``None``: answer here (the job cannot go).

        A large body comes as a ``SpooledBody`` to stream (``spooled_body.body_response``).

        Raises:
            InspectionStoppedError: The child ended before it answered.
        """
        if self._where is None or self._closed:
            return None
        path = spool_file()
        try:
            job = _Job(
                kind, self._where, info, path, self._inline, inputs, generated, version, prices
            )
            try:
                blob = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, TypeError, AttributeError):
                return None  # an application's own value that does not pickle: the thread path
            status, body = await self._run(blob)
            return status, (body if isinstance(body, bytes) else SpooledBody.open(path, body))
        finally:
            with contextlib.suppress(OSError):  # already opened and removed, as it should be
                os.unlink(path)

    async def _run(self, blob: bytes) -> tuple[int, bytes | int]:
        """The child's answer to the pickled job ``blob``: a status and the body or its size."""
        executor = self._start()
        self._running += 1
        try:
            # Off the loop: the first job starts the child process and the pool's threads.
            future = await asyncio.to_thread(executor.submit, _serve, blob)
            self._lower(executor)
            found: tuple[int, bytes | int] = await asyncio.wrap_future(future)
        except BrokenProcessPool:
            if self._executor is executor:
                self._executor = None  # the next inspection starts new children
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
            raise InspectionStoppedError(
                "the process inspecting the session ended before it answered; try again"
            ) from None
        finally:
            self._running -= 1
        self.answered += 1
        return found

    @property
    def running(self) -> int:
        """Inspections sent to a child and not yet answered."""
        return self._running

    @property
    def workers(self) -> int:
        """How many child processes inspect at most (0: none, every inspection here)."""
        return self._workers

    def _start(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=self._workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_yield_cpu,
                initargs=(self._niceness,),
            )
        return self._executor

    def _lower(self, executor: ProcessPoolExecutor) -> None:
        """Lower the priority of children the executor has just started, before their imports.

        Their initializer lowers it too, but only once the imports are done.
        """
        if self._niceness is None:
            return
        processes: dict[int, Any] = getattr(executor, "_processes", None) or {}
        for pid in set(processes) - self._lowered:
            self._lowered.add(pid)
            with contextlib.suppress(OSError):  # already gone: the pool reports it
                os.setpriority(os.PRIO_PROCESS, pid, self._niceness)

    async def close(self) -> None:
        """Cancel what waits, stop what runs (it only reads), and wait for the children."""
        self._closed = True
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if self._running:
            # The executor offers no way to stop a running call (before Python 3.14): its
            # processes are stopped here; it finds them gone and winds down with the rest.
            processes: dict[int, multiprocessing.process.BaseProcess] = (
                getattr(executor, "_processes", None) or {}
            )
            for process in list(processes.values()):
                process.terminate()
        await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)


def _children_niceness() -> int | None:
    """The niceness of the children: ``NICENESS`` above this process's; ``None``: no such OS."""
    if not hasattr(os, "setpriority"):
        return None
    return min(_LOWEST, os.getpriority(os.PRIO_PROCESS, 0) + NICENESS)


def _yield_cpu(niceness: int | None) -> None:
    """In a new child: take the lower CPU priority the parent chose (where the OS has one)."""
    if niceness is not None:
        with contextlib.suppress(OSError):  # never below what the parent already set
            os.setpriority(os.PRIO_PROCESS, 0, max(niceness, os.getpriority(os.PRIO_PROCESS, 0)))


def _serve(blob: bytes) -> tuple[int, bytes | int]:
    """In the child: the status and body of one job (a failure as its JSON error).

    A large body is written to the job's spool file and only its size answered.
    """
    job: _Job = pickle.loads(blob)
    try:
        status, body = 200, asyncio.run(_body(job))
    except Exception as exc:  # every failure becomes the error body the parent would send
        status, body = status_of(exc), bytes(JSONResponse(error_body(exc)).body)
    size = spool(body, job.spool, job.inline)
    return status, body if size is None else size


async def _body(job: _Job) -> bytes:
    if job.kind == "cost":
        assert job.prices is not None, "a cost job carries the prices"
        # What ``session.cost()`` sums for a session just opened: its whole ledger.
        charges = charges_of(await _read(job.where, job.info, kinds=LEDGER_KINDS))
        summary = summarize(charges, job.prices)
        return bytes(JSONResponse({"session_id": job.info.id, **cost_fields(summary)}).body)
    records = await _read(job.where, job.info)
    if job.kind == "export":
        return render_session_file(job.info, [r.entry for r in records]).encode()
    assert job.inputs is not None, "an inspection job carries its inputs"
    if job.kind == "context":
        return bytes(JSONResponse(context_json(inspect_records(job.inputs, records))).body)
    with canonical_texts_held():  # the report asks again for the texts its inspection made
        inspection = inspect_records(job.inputs, records)
        return render_report(inspection, generated=job.generated, version=job.version).encode()


async def _read(
    where: _Where, info: SessionInfo, kinds: tuple[str, ...] | None = None
) -> list[Record]:
    """The session's log up to ``info.next_seq``, through a store of the child's own."""
    store: Store
    if where.kind == "sqlite":
        store = SQLiteStore(where.location, read_only=True)
    else:
        store = PostgresStore(where.location, read_only=True, pool_size=1)
    try:
        if kinds is None:
            return await store.read(info.id, 0, info.next_seq)
        return await store.read(info.id, 0, info.next_seq, kinds=list(kinds))
    finally:
        await store.close()
