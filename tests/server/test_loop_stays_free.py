"""Inspecting a session never holds the server's event loop: while the inspection's work is
held on its worker thread, other requests to the same process are answered; and listing
sessions reads one page of rows from the store, however many sessions there are."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import agentsession as ags
import agentsession.inspection.inputs as inspection_inputs
import agentsession.server.inspect_routes as inspect_routes
import agentsession.store.sqlite as sqlite_store
from agentsession.store.base import info_from_row


def _held(work: Callable[..., Any], release: threading.Event, entered: threading.Event) -> Any:
    """``work`` that first waits for ``release`` (on whatever thread runs it)."""

    def held(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        # Bounded, so a loop-blocking regression fails the test instead of hanging it.
        assert release.wait(120), "the held work was never released"
        return work(*args, **kwargs)

    return held


@pytest.mark.parametrize("route", ["context", "report"])
async def test_other_requests_are_answered_while_an_inspection_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    release, entered = threading.Event(), threading.Event()
    target = inspection_inputs if route == "context" else inspect_routes
    name = "inspect_records" if route == "context" else "render_report"
    monkeypatch.setattr(target, name, _held(getattr(target, name), release, entered))
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel(["one", "two", "three"]),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        inspected = (await client.post("/sessions", json={})).json()["id"]
        other = (await client.post("/sessions", json={})).json()["id"]
        assert (await client.post(f"/sessions/{inspected}/prompt", json={"text": "a"})).is_success
        inspecting = asyncio.create_task(client.get(f"/sessions/{inspected}/{route}"))
        await asyncio.to_thread(entered.wait, 120)
        # The inspection's work is held right now; the loop still serves everyone else.
        shown = await client.get(f"/sessions/{other}")
        answered = await client.post(f"/sessions/{other}/prompt", json={"text": "b"})
        assert not inspecting.done()
        release.set()
        done = await inspecting
    await runtime.close()
    assert shown.status_code == 200 and answered.status_code == 200
    assert "two" in answered.text
    assert done.status_code == 200


async def test_listing_reads_one_page_of_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel([]),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime)
    made = [await runtime.create_session() for _ in range(40)]
    for session in made:
        await session.close()
    rows = 0

    def counted(row: Any) -> Any:
        nonlocal rows
        rows += 1
        return info_from_row(row)

    monkeypatch.setattr(sqlite_store, "info_from_row", counted)
    transport = httpx.ASGITransport(app=app)
    seen: list[str] = []
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        first = (await client.get("/sessions", params={"limit": 5})).json()
        assert rows == 6  # the page and one row that says another page follows
        seen += [s["id"] for s in first["sessions"]]
        cursor = first["next_cursor"]
        while cursor:
            page = (await client.get("/sessions", params={"limit": 15, "cursor": cursor})).json()
            seen += [s["id"] for s in page["sessions"]]
            cursor = page["next_cursor"]
        bad = await client.get("/sessions", params={"cursor": "not-a-cursor"})
    await runtime.close()
    assert sorted(seen) == sorted(s.id for s in made), "every session once, none twice"
    assert bad.status_code == 400 and "cursor" in bad.json()["error"]["message"]
