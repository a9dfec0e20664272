"""The crash soak's worker process, and the zygote that forks one per run.

A worker drives scripted sessions with tools (``common.planned_reply``, ``common.side_tool``) in
a real process that the soak SIGKILLs at a random moment. Each run starts from whatever the last
one left: it opens the sessions in order, finishes an unfinished turn with ``retry()`` (the
recovery: a dead holder's lease is void, the step is closed truthfully or re-sent) and runs the
remaining prompts. What it knows to be durable it notes at once, in ``notes.jsonl`` (one
``write`` per line on an ``O_APPEND`` descriptor, so a killed process leaves whole lines):

- ``{"s": id, "seq": n, "fp": [...]}`` — every append the store acknowledged: its first seq and
  the fingerprints of its entries (the store's definition of committed);
- ``{"s": id, "step": [first, last], "what": ...}`` — every ``StepCommitted`` event;
- ``{"invalid": ...}`` — a request the model received that a wire format refuses (the scripted
  model lowers and validates every request in all four formats);
- ``{"recover": id}`` / ``{"recovered": id}`` — an unfinished turn found and finished.

``index.jsonl`` maps each planned session number to its id, written right after creation;
``done.jsonl`` lists the sessions whose last prompt was answered (later runs skip them).

Starting Python and importing the package costs more than a run between kills, so the soak runs
a zygote: one process that imports everything once, then forks a fresh worker process per run
on request (``{"op": "run", ...}`` → ``{"pid": ...}``; ``{"op": "wait", ...}`` reaps it and says
how it ended). Each worker is an ordinary process with its own pid (its lease owner), killed
with a real SIGKILL; the zygote itself never opens a store or an event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import agentsession as ags
from agentsession.log import LogEntry, Record
from agentsession.request import AssistantMessage

from ..store.wrappers import DelegatingStore
from .common import fingerprint, invalid_formats, plan_prompt, planned_reply, side_tool

LEASE_TTL = 2.0


def config() -> ags.Config:
    """The configuration every soak process uses (the checker rebuilds requests with it)."""
    return ags.Config(retry_base_delay=0, titles=False, environment=(), lease_ttl=LEASE_TTL)


class Notes:
    """Appends whole JSON lines to a file, one ``write`` each.

    A write longer than a page can still be cut short by SIGKILL, so a process starts by ending
    a line its killed predecessor left unterminated; readers skip such a torn line. A torn note
    acknowledges nothing: its process died before the note was whole.
    """

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        size = os.fstat(self._fd).st_size
        if size and os.pread(self._fd, 1, size - 1) != b"\n":
            os.write(self._fd, b"\n")

    def write(self, **fields: Any) -> None:
        os.write(self._fd, (json.dumps(fields) + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)


def parse_note(line: str | bytes) -> dict[str, Any] | None:
    """One note, or ``None`` for a line a killed process tore (see ``Notes``)."""
    try:
        note = json.loads(line)
    except ValueError:
        return None
    return note if isinstance(note, dict) else None


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The whole JSON lines of a notes file (torn ones skipped, see ``Notes``)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    return [note for line in text.splitlines() if line and (note := parse_note(line)) is not None]


class NotingStore(DelegatingStore):
    """Notes every append the store acknowledged, before the caller sees it."""

    def __init__(self, inner: ags.Store, notes: Notes) -> None:
        super().__init__(inner)
        self.notes = notes

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        records = await super().append(session_id, expected_seq, entries)
        self.notes.write(s=session_id, seq=expected_seq, fp=[fingerprint(e) for e in entries])
        return records


def open_store(db: str, postgres: bool) -> ags.Store:
    """``db`` is a PostgreSQL DSN or a SQLite file's path."""
    if postgres:
        return ags.PostgresStore(db, pool_size=2)
    if not Path(db).is_absolute():
        raise ValueError(f"a relative database path depends on the working folder: {db}")
    return ags.SQLiteStore(db)


def phase(side: Path) -> str:
    """A context fact that changes as work gets done: mid-conversation updates in the log."""
    try:
        runs = side.read_bytes().count(b"\n")
    except FileNotFoundError:
        runs = 0
    return f"Work phase {runs // 5}."


def unfinished(messages: Sequence[ags.Message]) -> bool:
    """Whether the last turn lacks its final text answer."""
    if not messages:
        return False
    last = messages[-1]
    return not (isinstance(last, AssistantMessage) and not last.tool_calls)


async def work(job: dict[str, Any]) -> None:
    """One worker run: continue every planned session to its last prompt."""
    folder = Path(job["folder"])
    side = folder / "side.txt"
    notes = Notes(folder / "notes.jsonl")
    index_file = Notes(folder / "index.jsonl")
    rng = random.Random(job["seed"])

    def reply(request: ags.Request) -> str | list[ags.ToolCall]:
        refused = invalid_formats(request)
        if refused:
            notes.write(invalid=refused)
        time.sleep(rng.uniform(0, job["pause"]))  # a model takes a moment: kills land here too
        return planned_reply(request, job["name"])

    runtime = ags.Runtime(
        store=NotingStore(open_store(job["db"], job["postgres"]), notes),
        model=ags.ScriptedModel(reply),
        tools=[side_tool(side)],
        components=[ags.ContextComponent("app.phase", lambda: phase(side))],
        project_dir=folder / "project",
        config=config(),
    )
    index = {int(n["n"]): str(n["s"]) for n in read_lines(folder / "index.jsonl")}
    complete = {int(n["done"]) for n in read_lines(folder / "done.jsonl")}
    done_file = Notes(folder / "done.jsonl")
    try:
        for number in range(job["sessions"]):
            if number in complete:
                continue
            if number in index:
                session = await runtime.open_session(index[number])
            else:
                session = await runtime.create_session()
                index_file.write(n=number, s=session.id)
            if unfinished(session.messages):
                notes.write(recover=session.id)
                await session.retry()
                notes.write(recovered=session.id)
            done = sum(m.role == "user" for m in session.messages)
            for k in range(done, job["prompts"]):
                async for event in session.stream(plan_prompt(f"s{number}", k)):
                    if isinstance(event, ags.StepCommitted):
                        step = [event.first_seq, event.last_seq]
                        notes.write(s=session.id, step=step, what=event.what)
            done_file.write(done=number)
    finally:
        await runtime.close()
        for file in (notes, index_file, done_file):
            file.close()


def _child(job: dict[str, Any]) -> None:
    """In the forked process: run one job, never return to the zygote's loop."""
    code = 0
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        err = os.open(job["err"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(err, 2)
        asyncio.run(work(job))
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG if timeout else 0)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)


def zygote() -> None:
    """Serve run/wait requests on stdin/stdout until stdin closes."""
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        request = json.loads(line)
        if request["op"] == "run":
            pid = os.fork()
            if pid == 0:
                _child(request["job"])
            answer: dict[str, Any] = {"pid": pid}
        else:
            answer = {"code": _wait(int(request["pid"]), float(request["timeout"]))}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    zygote()
