"""Where a turn's start spends its seconds on a server process of ``server_load.py``.

For each ``prompt``/``retry`` request, from its arrival until the turn's first event (the
response's start), every store call and every statement on the server's own table made for that
session is written to one file shared by the server processes, one line each
(``session stage start end``, wall-clock seconds; ``O_APPEND``: whole lines). The stages are
told apart by a context variable the request sets, which the turn's task inherits; once the
response has started nothing more is written for it. ``loop`` lines give the event loop's
lag: how late a 0.1 s sleep woke, the worst of each second.

``read_stages`` reads them back per session; ``server_load.py`` uses it for the turns the kill
broke.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TURN = re.compile(r"^/sessions/([0-9a-f]+)/(prompt|retry)$")


@dataclass
class _Request:
    sid: str
    active: bool = True


_CURRENT: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "stages_request", default=None
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
App = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


class Stages:
    """Notes one process's turn starts, stage by stage, to ``path``."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lag: asyncio.Task[None] | None = None

    def note(self, sid: str, stage: str, start: float, end: float) -> None:
        line = f"{sid} {stage} {start:.6f} {end:.6f}\n".encode()
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def _noting(self, stage: str, start: float) -> None:
        request = _CURRENT.get()
        if request is not None and request.active:
            self.note(request.sid, stage, start, time.time())

    def asgi(self, app: App) -> App:
        """``app``, noting each turn request's arrival and its response's start."""

        async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
            if self._lag is None:
                self._lag = asyncio.create_task(self._loop_lag())
            found = _TURN.match(scope.get("path", "")) if scope["type"] == "http" else None
            if found is None:
                await app(scope, receive, send)
                return
            request = _Request(found.group(1))
            _CURRENT.set(request)
            arrived = time.time()
            self.note(request.sid, f"arrive:{found.group(2)}", arrived, arrived)

            async def sending(message: Message) -> None:
                if message["type"] == "http.response.start" and request.active:
                    request.active = False
                    self.note(request.sid, f"start:{message['status']}", arrived, time.time())
                await send(message)

            await app(scope, receive, sending)

        return wrapped

    async def _loop_lag(self) -> None:
        worst, since = 0.0, time.monotonic()
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.1)
            worst = max(worst, time.monotonic() - before - 0.1)
            if time.monotonic() - since >= 1.0:
                wall = time.time()
                self.note("-", "loop", wall - worst, wall)
                worst, since = 0.0, time.monotonic()

    def watch_store(self, store: Any) -> None:
        """Note the store's calls and its pool waits, and the server's side-table statements."""
        for name, _ in inspect.getmembers(type(store), inspect.iscoroutinefunction):
            if not name.startswith("_") and name not in {"close"}:
                setattr(store, name, self._timed(name, getattr(store, name)))
        paths = store.fast_paths
        if paths.take_lease is not None:  # the lease taken with the log's end, one round trip
            taken = self._timed("acquire_lease", paths.take_lease)
            store.fast_paths = dataclasses.replace(paths, take_lease=taken)
        pooled = store._connection

        @contextlib.asynccontextmanager
        async def connection(action: str, *, write: bool = False) -> AsyncIterator[Any]:
            asked = time.time()
            async with pooled(action, write=write) as conn:
                self._noting("pool-wait", asked)
                yield conn

        store._connection = connection
        from agentsession.server import side_table

        side = side_table.SideTable.sql

        async def statement(table: Any, query: str, params: tuple[Any, ...]) -> Any:
            began = time.time()
            try:
                return await side(table, query, params)
            finally:
                self._noting("side:" + query.split()[0].lower(), began)

        side_table.SideTable.sql = statement  # type: ignore[method-assign]
        gate = side_table._gate

        @contextlib.asynccontextmanager
        async def gated() -> AsyncIterator[None]:
            asked = time.time()
            async with gate():
                self._noting("side-gate", asked)
                yield

        side_table._gate = gated  # type: ignore[assignment]

    def _timed(self, name: str, call: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        @functools.wraps(call)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.time()
            try:
                return await call(*args, **kwargs)
            finally:
                self._noting("store:" + name, began)

        return timed


def read_stages(
    path: Path, after: float
) -> tuple[dict[str, list[tuple[str, float, float]]], list[tuple[float, float]]]:
    """Per session, its noted stages from wall-clock ``after`` on; the loop lags (time, lag)."""
    per: dict[str, list[tuple[str, float, float]]] = {}
    lags: list[tuple[float, float]] = []
    lines = path.read_text().splitlines() if path.exists() else []
    for line in lines:
        sid, stage, start, end = line.split()
        if float(end) < after:
            continue
        if sid == "-":
            lags.append((float(end), float(end) - float(start)))
        else:
            per.setdefault(sid, []).append((stage, float(start), float(end)))
    return per, lags


def takeover_stages(
    stages: dict[str, list[tuple[str, float, float]]], sid: str, asked: float, killed: float
) -> dict[str, Any]:
    """The stages of the request that took ``sid`` over (seconds after the kill ``killed``).

    From the first request for the session that arrived after its client asked (``asked``
    seconds after the kill), to the first response that started with 200: per stage, the sum
    of its durations and count; ``timeline``: each stage's start and duration.
    """
    noted = sorted(
        (s for s in stages.get(sid, []) if s[2] >= killed + asked - 0.05), key=lambda s: s[1]
    )
    arrivals = [s for s in noted if s[0].startswith("arrive:")]
    if not arrivals:
        return {}
    first = arrivals[0][1]
    ended = next((s[2] for s in noted if s[0] == "start:200"), None)
    within = [
        s for s in noted if s[1] >= first - 0.001 and (ended is None or s[2] <= ended + 0.001)
    ]
    totals: dict[str, list[float]] = {}
    for stage, start, end in within:
        if stage.startswith(("store:", "side", "pool")):
            total = totals.setdefault(stage, [0.0, 0])
            total[0] += end - start
            total[1] += 1
    return {
        "arrived": round(first - killed, 2),
        "started": round(ended - killed, 2) if ended is not None else None,
        "stages": {
            k: [round(v[0], 2), int(v[1])]
            for k, v in sorted(totals.items(), key=lambda kv: -kv[1][0])
        },
        "timeline": [
            [stage, round(start - killed, 3), round(end - start, 3)] for stage, start, end in within
        ],
    }
