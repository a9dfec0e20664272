"""A log written before usage was checked on arrival may hold any figure a server sent: negative,
beyond float range, cached above input. Every reader of it — ``cost()``, ``show``, ``report``,
``cost`` and the server's ``/cost`` ``/report`` ``/context`` ``/request`` — answers with sane,
non-negative money and no error from outside the package.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

import agentsession as ags
from agentsession.providers import ModelDone

from .cli_inprocess import cli_here

NAME = "anthropic:claude-opus-4-8"  # a priced model: every figure becomes money
RAW = ags.Usage(
    input_tokens=10**400,
    output_tokens=-4_000_000_000,
    cached_input_tokens=10**401,
    cache_write_tokens=-3,
    cache_write_long_tokens=7,
)


class OldClient(ags.ScriptedModel):
    """Stands in for a client of before the check: its reply's usage is stored as reported."""

    async def stream(self, request: ags.Request) -> AsyncIterator[ags.providers.ModelEvent]:
        async for event in super().stream(request):
            if isinstance(event, ModelDone):
                object.__setattr__(event, "usage", RAW)  # what the check now stops
            yield event


async def old_log(db: Path, tmp_path: Path) -> str:
    model = OldClient(
        ["first answer", "second answer"],
        name=NAME,
        profile=ags.ModelProfile(provider="anthropic", reports_usage=True),
    )
    async with ags.Runtime(
        store=ags.SQLiteStore(db),
        model=model,
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    ) as runtime:
        session = await runtime.create_session()
        await session.prompt("one")
        await session.prompt("two")
        return session.id


def _sane(summary: ags.CostSummary) -> None:
    assert summary.requests == 2 and summary.estimated == 2
    assert summary.total_usd is not None and summary.uncached_usd is not None
    assert 0 <= summary.total_usd < 1e6 and 0 <= summary.uncached_usd < 1e6


async def test_library_and_server_read_an_old_log_with_absurd_usage(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid = await old_log(db, tmp_path)
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=ags.ScriptedModel([], name=NAME),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    session = await runtime.open_session(sid)
    _sane(session.cost())
    preview = await session.preview_cost("three")
    assert preview.input_usd is not None and preview.input_usd >= 0
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        for route in ("cost", "report", "context", "request", "request?step=2"):
            answer = await client.get(f"/sessions/{sid}/{route}")
            assert answer.status_code == 200, (route, answer.text)
        body = (await client.get(f"/sessions/{sid}/cost")).json()
    await runtime.close()
    assert body["total_usd"] >= 0 and body["estimated"] == 2


def test_command_line_reads_an_old_log_with_absurd_usage(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid = asyncio.run(old_log(db, tmp_path))
    cost = cli_here(tmp_path, "--db", str(db), "cost", sid, "--json")
    assert cost.code == 0, cost.err
    (row,) = [json.loads(line) for line in cost.out.splitlines()]
    assert row["total_usd"] >= 0 and row["estimated"] == 2
    for args in (("show", sid), ("report", sid, "-o", str(tmp_path / "r.html")), ("cost", sid)):
        outcome = cli_here(tmp_path, "--db", str(db), *args)
        assert outcome.code == 0, (args, outcome.err)
        assert "Error" not in outcome.err and "Traceback" not in outcome.err


class AbsurdCount(ags.ScriptedModel):
    """A provider whose token-count endpoint answers a figure beyond any window."""

    async def count_input_tokens(self, request: ags.Request, controls: object = None) -> int:
        return 10**400


async def test_an_absurd_token_count_is_not_priced(tmp_path: Path) -> None:
    model = AbsurdCount(["one"], name=NAME, profile=ags.ModelProfile(provider="anthropic"))
    async with ags.Runtime(store=ags.MemoryStore(), model=model, project_dir=tmp_path) as rt:
        session = await rt.create_session()
        estimate = await session.preview_cost("hello")
    assert estimate.input_usd is not None and 0 <= estimate.input_usd < 1
    assert "no count" in estimate.reason
