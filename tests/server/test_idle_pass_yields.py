"""``serve`` never answers 409 for its own upkeep: a request that meets the idle pass waits.

The idle pass holds a session's lease for one keep-warm call. In this process a prompt already
waited for it; a preset or model change (``PATCH``) and an input now wait too. Another process's
pass looks, from here, like a lease held by a process whose log shows no step under way: a
prompt or an input waits for that lease to be let go and then runs here. A lease held for a
turn (a step under way in the log) is still a 409 at once. The calls are held by the test, and
the other process's lease is let go by the test once the server has started to wait for it,
so nothing depends on timing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

import agentsession as ags
from agentsession.engine.idle import KEEP_WARM_QUESTION
from agentsession.log import Dispatch, LogEntry, PermissionChanged, SideCall, UserEntry
from agentsession.request import text_of
from agentsession.server import lease_wait
from agentsession.server.idle_pass import tend_stored

from ..held import HeldCall
from .test_idle_pass import PRICE, Clock, _warm_session

ELSEWHERE = "another-machine:4242"
WARM_MARK = KEEP_WARM_QUESTION.split("{", 1)[0]


def _is_keep_warm(request: ags.Request) -> bool:
    last = request.messages[-1].content if request.messages else ""
    return text_of(last).startswith(WARM_MARK)


def _runtime(store: ags.Store, clock: Clock) -> tuple[ags.Runtime, HeldCall]:
    profile = ags.ModelProfile(provider="test", reports_usage=True)
    model = HeldCall(
        lambda r: f"answer {len(r.messages)}", _is_keep_warm, name="test-model", profile=profile
    )
    config = ags.Config(titles=False, prices={"test-model": PRICE}, idle_policy="auto")
    return ags.Runtime(store=store, model=model, clock=clock, config=config), model


def _client(app: object) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://localhost")


async def test_a_preset_change_during_this_process_idle_pass_waits_for_it(
    tmp_path: Path,
) -> None:
    clock = Clock()
    session_id = await _warm_session(ags.SQLiteStore(tmp_path / "db.sqlite"), clock)
    runtime, model = _runtime(ags.SQLiteStore(tmp_path / "db.sqlite"), clock)
    async with runtime:
        app = ags.server.create_app(runtime)
        turns = app.state.server.turns
        async with _client(app) as client:
            tending = asyncio.create_task(tend_stored(runtime, turns, horizon=10**9))
            await model.entered.wait()  # the keep-warm call is in flight, under the lease
            reached = asyncio.Event()
            after_idle_pass = turns.after_idle_pass

            async def noting(sid: str) -> None:
                if sid in turns.tending:
                    reached.set()  # the request waits for the pass, not answers at once
                await after_idle_pass(sid)

            turns.after_idle_pass = noting
            patching = asyncio.create_task(
                client.patch(f"/sessions/{session_id}", json={"preset": "read-only"})
            )
            waiting = asyncio.ensure_future(reached.wait())
            await asyncio.wait({patching, waiting}, timeout=120, return_when="FIRST_COMPLETED")
            waiting.cancel()
            assert reached.is_set() and not patching.done(), patching
            model.go.set()
            assert (await tending)[session_id].action == "kept_warm"
            answer = await patching
            prompt = await client.post(f"/sessions/{session_id}/prompt", json={"text": "back"})
        log = await runtime.store.read(session_id)
    assert answer.status_code == 200, answer.text
    assert answer.json()["preset"] == "read-only"
    assert prompt.status_code == 200
    presets = [e.preset for e in (r.entry for r in log) if isinstance(e, PermissionChanged)]
    changed = [r.seq for r in log if isinstance(r.entry, PermissionChanged)]
    refresh = [r.seq for r in log if isinstance(r.entry, SideCall)]
    assert presets == ["read-only"]
    assert len(refresh) == 1 and refresh[0] < changed[0]


class _LetGo:
    """Lets the other process's lease go the first time the server waits for it."""

    def __init__(self, store: ags.Store, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.waited = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        looked = lease_wait._step_under_way

        async def look(store: ags.Store, session_id: str) -> bool:
            self.waited += 1
            if self.waited == 1:
                assert await self.store.release_lease(self.session_id, ELSEWHERE)
            return await looked(store, session_id)

        monkeypatch.setattr(lease_wait, "_step_under_way", look)


async def _held_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, body: dict[str, str]
) -> tuple[httpx.Response, list[ags.Record], _LetGo]:
    """``path`` posted while another process's idle pass holds the lease (no step under way)."""
    store = ags.SQLiteStore(tmp_path / "db.sqlite")
    runtime = ags.Runtime(
        store=store, model=ags.ScriptedModel(["first", "here"]), project_dir=tmp_path
    )
    app = ags.server.create_app(runtime)
    async with _client(app) as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        assert (await client.post(f"/sessions/{sid}/prompt", json={"text": "hi"})).is_success
        let_go = _LetGo(store, sid)
        let_go.install(monkeypatch)
        assert await store.acquire_lease(sid, ELSEWHERE, 600)
        answer = await client.post(path.format(sid=sid), json=body)
        await app.state.server.turns.close(grace=120)
    log = await store.read(sid)
    await runtime.close()
    return answer, log, let_go


async def test_a_prompt_waits_for_another_process_idle_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer, log, let_go = await _held_elsewhere(
        tmp_path, monkeypatch, "/sessions/{sid}/prompt", {"text": "while it tends"}
    )
    assert answer.status_code == 200, answer.text
    assert "turn_finished" in answer.text and let_go.waited >= 1
    users = [r.entry.content for r in log if isinstance(r.entry, UserEntry)]
    assert users == ["hi", "while it tends"]


async def test_an_input_during_another_process_idle_pass_is_delivered_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer, log, let_go = await _held_elsewhere(
        tmp_path, monkeypatch, "/sessions/{sid}/input", {"text": "queued", "mode": "queue"}
    )
    assert answer.status_code == 202, answer.text
    assert answer.json()["turn"] == "started" and let_go.waited >= 1
    users = [r.entry.content for r in log if isinstance(r.entry, UserEntry)]
    assert users == ["hi", "queued"]  # delivered, not left for a pass that never delivers it


async def test_a_prompt_meeting_a_turn_elsewhere_is_still_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ags.SQLiteStore(tmp_path / "db.sqlite")
    runtime = ags.Runtime(store=store, model=ags.ScriptedModel(["never"]), project_dir=tmp_path)
    app = ags.server.create_app(runtime)
    async with _client(app) as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        # another process admitted a step and waits for its model: a turn runs there
        end = (await store.get_session(sid)).next_seq
        step: list[LogEntry] = [UserEntry("elsewhere"), Dispatch("m", 0, "d1", timestamp="t")]
        await store.append(sid, end, step)
        assert await store.acquire_lease(sid, ELSEWHERE, 600)

        async def no_pause() -> None:
            raise AssertionError("waited for a lease held for a turn")

        monkeypatch.setattr(lease_wait, "_pause", no_pause)
        answer = await client.post(f"/sessions/{sid}/prompt", json={"text": "not now"})
    await runtime.close()
    assert answer.status_code == 409, answer.text  # at once: the log shows the step under way
    assert answer.json()["error"]["type"] == "ConflictError"
