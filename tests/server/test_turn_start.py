"""What a turn's start waits for before its first event: the reads it needs, asked at once, and
nothing else — no housekeeping, no second read of the same settings, no read of the session's
row after opening it (the turn's first seq is the one the open read).

Each test holds one part back until another has happened (an event, never a timer): a start
that waited for the held part, or asked its reads one after another, would never answer, and
the generous bound around it fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import agentsession as ags
from agentsession.server.cancels import Cancels
from agentsession.server.models import SessionSettings, Settings
from agentsession.server.owners import Owners

#: A bound for a start that never comes, not a measure of time.
NEVER = 120.0


def _runtime(tmp_path: Path, replies: list[str] | ags.ScriptedModel, **given: Any) -> ags.Runtime:
    model = replies if isinstance(replies, ags.ScriptedModel) else ags.ScriptedModel(replies)
    given.setdefault("store", ags.SQLiteStore(tmp_path / "db.sqlite"))
    return ags.Runtime(model=model, project_dir=tmp_path, config=ags.Config(titles=False), **given)


@contextlib.asynccontextmanager
async def _served(
    runtime: ags.Runtime, **options: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    """A client of ``create_app(runtime, **options)``, and the app."""
    app = ags.server.create_app(runtime, **options)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client, app


async def _created(client: httpx.AsyncClient, **body: Any) -> str:
    return str((await client.post("/sessions", json=body)).json()["id"])


async def _prompt(client: httpx.AsyncClient, sid: str, text: str) -> httpx.Response:
    """A prompt that must answer: a start waiting on something held never does."""
    return await asyncio.wait_for(
        client.post(f"/sessions/{sid}/prompt", json={"text": text}), NEVER
    )


async def test_a_turn_answers_while_dropping_old_cancel_requests_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    released = asyncio.Event()
    cleared: list[tuple[str, int | None]] = []
    clear = Cancels.clear

    async def held_clear(self: Cancels, session_id: str, before: int | None = None) -> None:
        if before is not None:  # the start's housekeeping: requests for earlier turns
            cleared.append((session_id, before))
            await released.wait()
        await clear(self, session_id, before)

    monkeypatch.setattr(Cancels, "clear", held_clear)
    runtime = _runtime(tmp_path, ["first", "second"])
    async with _served(runtime) as (client, _):
        sid = await _created(client)
        first = await _prompt(client, sid, "hi")
        second = await _prompt(client, sid, "again")
        released.set()
    await runtime.close()
    assert first.status_code == second.status_code == 200
    assert "first" in first.text and "second" in second.text
    # Each turn still dropped the requests older than its first seq.
    assert [s for s, _ in cleared] == [sid, sid]
    assert cleared[0][1] is not None and cleared[1][1] is not None
    assert cleared[0][1] < cleared[1][1]


async def test_a_prompt_reads_its_settings_once_beside_its_owner_and_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gating = False
    owner_asked = asyncio.Event()
    settings_reads: list[str] = []
    get_settings, get_owner = SessionSettings.get, Owners.get

    async def settings_after_owner(self: SessionSettings, session_id: str) -> Settings:
        if gating:
            settings_reads.append(session_id)
            await owner_asked.wait()  # answered only once the owner was asked too
        return await get_settings(self, session_id)

    async def owner(self: Owners, session_id: str) -> str | None:
        if gating:
            owner_asked.set()
        return await get_owner(self, session_id)

    monkeypatch.setattr(SessionSettings, "get", settings_after_owner)
    monkeypatch.setattr(Owners, "get", owner)
    pdf = ags.Skill(name="pdf", description="Read PDF files.", instructions="Read PDFs.")
    model = ags.ScriptedModel(["done"])
    runtime = _runtime(tmp_path, model, skills=[pdf])
    async with _served(runtime, workspaces=tmp_path / "spaces") as (client, _):
        sid = await _created(client, skills=["pdf"])
        gating = True
        answer = await _prompt(client, sid, "read a.pdf")
    await runtime.close()
    assert answer.status_code == 200, answer.text
    assert settings_reads == [sid]  # once, not once for the skills and again for the model
    # The session's default skills, from that one read, are selected for the prompt.
    first_user = model.requests[0].messages[0]
    assert '<skill name="pdf"' in ags.request.text_of(first_user.content)


async def test_old_cancel_requests_are_dropped_only_after_the_turns_first_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The housekeeping takes no pooled connection while the start needs one: it begins once
    the turn's admission is in the log (what the first event carries)."""
    seen: list[tuple[int, int]] = []
    clear = Cancels.clear
    runtime = _runtime(tmp_path, ["first"])

    async def noting_clear(self: Cancels, session_id: str, before: int | None = None) -> None:
        if before is not None:
            seen.append((before, (await runtime.store.get_session(session_id)).next_seq))
        await clear(self, session_id, before)

    monkeypatch.setattr(Cancels, "clear", noting_clear)
    async with _served(runtime) as (client, _):
        sid = await _created(client)
        answer = await _prompt(client, sid, "hi")
    await runtime.close()
    assert answer.status_code == 200
    [(before, log_end)] = seen
    assert log_end > before  # the turn's first entries were committed before the clearing


async def test_a_turn_start_reads_no_session_row_after_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn's first seq is the session's own ``next_seq``: the open read it."""
    runtime = _runtime(tmp_path, ["first", "second"])
    store = runtime.store
    rows_read: list[str] = []
    get_session = store.get_session
    opened = False

    async def noting(session_id: str) -> ags.SessionInfo:
        if opened:
            rows_read.append(session_id)
        return await get_session(session_id)

    monkeypatch.setattr(store, "get_session", noting)

    async with _served(runtime) as (client, app):
        turns = app.state.server.turns
        open_session = turns._open

        async def open_then_note(session_id: str) -> ags.Session:
            nonlocal opened
            session: ags.Session = await open_session(session_id)
            opened = True
            return session

        monkeypatch.setattr(turns, "_open", open_then_note)
        sid = await _created(client)
        first = await _prompt(client, sid, "hi")
        log_end = (await get_session(sid)).next_seq
        opened = False
        second = await client.post(f"/sessions/{sid}/retry", json={})
    await runtime.close()
    assert first.status_code == 200
    assert second.status_code == 400  # nothing to retry: the point is what it read first
    assert rows_read == []
    assert log_end > 0


async def test_a_prompt_after_the_logs_last_seq_runs_once_and_never_on_a_moved_log(
    tmp_path: Path,
) -> None:
    """``after``: admitted only while the log still ends at that seq — what a client whose
    stream broke before it showed its prompt sends, so the prompt can never run twice."""
    model = ags.ScriptedModel(["first", "second"])
    runtime = _runtime(tmp_path, model)
    async with _served(runtime) as (client, _):
        made = (await client.post("/sessions", json={})).json()
        sid, end = made["id"], made["entries"] - 1
        first = await client.post(f"/sessions/{sid}/prompt", json={"text": "hi", "after": end})
        moved = await client.post(f"/sessions/{sid}/prompt", json={"text": "hi", "after": end})
        entries = (await client.get(f"/sessions/{sid}")).json()["entries"]
        bad = [
            await client.post(f"/sessions/{sid}/prompt", json={"text": "hi", "after": value})
            for value in ("3", True, -2)
        ]
        second = await client.post(
            f"/sessions/{sid}/prompt", json={"text": "again", "after": entries - 1}
        )
    await runtime.close()
    assert first.status_code == 200 and "first" in first.text
    assert moved.status_code == 409, moved.text
    assert moved.json()["error"]["type"] == "LogMovedError"
    assert moved.json()["error"]["retryable"] is False
    # It shows the log after ``after``: the prompt is there, answered — nothing to send again.
    shown = moved.json()["error"]["entries"]
    assert [e["seq"] for e in shown] == list(range(end + 1, entries))
    users = [e["entry"]["content"] for e in shown if e["kind"] == "user"]
    assert users == ["hi"]
    assert shown[-1]["kind"] == "assistant" and shown[-1]["entry"]["content"] == "first"
    assert [b.status_code for b in bad] == [400, 400, 400]
    assert second.status_code == 200 and "second" in second.text
    assert len(model.requests) == 2  # the refused ones never reached the model


class _WrittenBeforeTheLease(ags.SQLiteStore):
    """Another process's prompt lands between a turn's open and its lease, once."""

    sneak: str | None = None

    async def acquire_lease(self, session_id: str, owner: str, ttl: float = 30.0) -> bool:
        if self.sneak == session_id:
            self.sneak = None
            end = (await self.get_session(session_id)).next_seq
            await self.append(session_id, end, [ags.log.UserEntry("from elsewhere")])
        return await super().acquire_lease(session_id, owner, ttl)


async def test_a_prompt_after_a_seq_is_refused_when_the_log_moves_after_the_open(
    tmp_path: Path,
) -> None:
    store = _WrittenBeforeTheLease(tmp_path / "db.sqlite")
    model = ags.ScriptedModel(["never"])
    runtime = _runtime(tmp_path, model, store=store)
    async with _served(runtime) as (client, _):
        made = (await client.post("/sessions", json={})).json()
        sid = made["id"]
        store.sneak = sid
        answer = await client.post(
            f"/sessions/{sid}/prompt", json={"text": "mine", "after": made["entries"] - 1}
        )
    log = await store.read(sid)
    await runtime.close()
    assert answer.status_code == 409, answer.text  # the admission's expected seq refused it
    texts = [r.entry.content for r in log if isinstance(r.entry, ags.log.UserEntry)]
    assert texts == ["from elsewhere"]
    assert model.requests == []
