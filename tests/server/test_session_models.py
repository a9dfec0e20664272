"""A model per server session: chosen at ``POST /sessions`` from what the server offers, shown
by ``GET``, changed while idle by ``PATCH`` (409 during a turn) and recorded as the library
records a switch; an unknown model is a 400 that says so."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

import agentsession as ags
from agentsession.errors import UnknownModelError
from agentsession.log import ModelSwitched

from ..held import Gated
from .harness import Server, frames, serve_cli

PDF = ags.Skill(name="pdf", description="Read PDF files.", instructions="Read PDFs carefully.")


class Offered:
    """The server's configured models: a name resolves to a model made once."""

    def __init__(self) -> None:
        self.made: dict[str, ags.ScriptedModel] = {}

    def __call__(self, spec: str) -> ags.Model:
        if spec not in ("small", "large"):
            raise UnknownModelError(f"unknown model {spec!r}; see: agentsession models")
        model = self.made.get(spec) or ags.ScriptedModel([f"{spec} says hi"] * 4, name=spec)
        self.made[spec] = model
        return model


def _app(tmp_path: Path, default: ags.Model, offered: Offered) -> tuple[ags.Runtime, object]:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=default,
        project_dir=tmp_path,
        skills=[PDF],
        config=ags.Config(titles=False),
    )
    return runtime, ags.server.create_app(runtime, models=offered)


async def test_a_session_talks_to_the_model_it_was_created_with(tmp_path: Path) -> None:
    offered = Offered()
    runtime, app = _app(tmp_path, ags.ScriptedModel(["default says hi"], name="base"), offered)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        body = {"model": "small", "preset": "read-only", "skills": ["pdf"]}
        created = await client.post("/sessions", json=body)
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        shown = (await client.get(f"/sessions/{sid}")).json()
        answer = await client.post(f"/sessions/{sid}/prompt", json={"text": "hello"})
        plain = (await client.post("/sessions", json={})).json()
        unknown = await client.post("/sessions", json={"model": "nosuch"})
        listed = (await client.get("/sessions")).json()
        bad_skill = await client.post("/sessions", json={"skills": ["nosuch"]})
    await runtime.close()
    assert shown["model"] == "small" and shown["preset"] == "read-only"
    assert shown["skills"] == ["pdf"] and shown["workspace"] is None
    assert answer.status_code == 200 and "small says hi" in answer.text
    assert offered.made["small"].requests, "the session's requests went to its own model"
    # The default skill selection applies to a prompt that names none.
    first = ags.request.text_of(offered.made["small"].requests[0].messages[0].content)
    assert '<skill name="pdf"' in first
    assert plain["model"] == "base" and plain["skills"] == []
    assert unknown.status_code == 400 and "nosuch" in unknown.json()["error"]["message"]
    assert len(listed["sessions"]) == 2, "a refused model creates no session"
    assert bad_skill.status_code == 400 and "nosuch" in bad_skill.text


async def test_patch_switches_the_model_while_idle_and_refuses_during_a_turn(
    tmp_path: Path,
) -> None:
    offered = Offered()
    default = Gated("base")
    runtime, app = _app(tmp_path, default, offered)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        turn = asyncio.create_task(client.post(f"/sessions/{sid}/prompt", json={"text": "a"}))
        await default.entered.wait()
        busy = await client.patch(f"/sessions/{sid}", json={"model": "large"})
        default.release.set()
        assert (await turn).status_code == 200
        unknown = await client.patch(f"/sessions/{sid}", json={"model": "huge"})
        changed = await client.patch(f"/sessions/{sid}", json={"model": "large"})
        shown = (await client.get(f"/sessions/{sid}")).json()
        after = await client.post(f"/sessions/{sid}/prompt", json={"text": "b"})
    log = [r.entry for r in await runtime.store.read(sid, 0)]
    await runtime.close()
    assert busy.status_code == 409 and busy.json()["error"]["retryable"] is True
    assert unknown.status_code == 400 and "huge" in unknown.json()["error"]["message"]
    assert changed.status_code == 200 and changed.json()["model"] == "large"
    assert shown["model"] == "large"
    assert "large says hi" in after.text
    switches = [(e.previous, e.model) for e in log if isinstance(e, ModelSwitched)]
    assert switches == [("base", "large")]  # recorded once, as session.switch_model records it


async def test_a_server_without_a_resolver_offers_its_own_model_only(tmp_path: Path) -> None:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel(["hi"], name="only"),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        same = await client.post("/sessions", json={"model": "only"})
        other = await client.post("/sessions", json={"model": "gpt-x"})
    await runtime.close()
    assert same.status_code == 201 and same.json()["model"] == "only"
    assert other.status_code == 400
    assert "offers only 'only'" in other.json()["error"]["message"]


def test_serve_offers_the_models_of_its_configuration_file(tmp_path: Path) -> None:
    """``serve`` resolves a client's model name as ``--model`` would: an alias of the
    configuration file, a configured provider's ``NAME:MODEL``; anything else is a 400."""
    folder = tmp_path / "config" / "agentsession"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(
        '[providers.local]\nformat = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "LOCAL_KEY"\n\n[aliases]\nfast = "local:tiny"\n'
    )
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "LOCAL_KEY": "never-sent"}
    argv = ("--db", str(tmp_path / "c.db"), "--model", "scripted:demo", "serve", "--no-auth")
    with serve_cli(tmp_path, *argv, env=env) as served:
        client = served.client
        aliased = client.post("/sessions", json={"model": "fast"})
        provider = client.post("/sessions", json={"model": "local:big"})
        unknown = client.post("/sessions", json={"model": "nowhere:x"})
        typo = client.post("/sessions", json={"model": "fsat"})
        plain = client.post("/sessions", json={})
    assert aliased.status_code == 201 and aliased.json()["model"] == "fast"
    assert provider.status_code == 201 and provider.json()["model"] == "local:big"
    assert unknown.status_code == 400
    # The server's own words: nothing only a command-line user could act on.
    said = unknown.json()["error"]["message"]
    assert said == "model 'nowhere:x' is not offered by this server"
    assert typo.json()["error"]["message"] == (
        "model 'fsat' is not offered by this server; did you mean 'fast'?"
    )
    assert plain.status_code == 201 and plain.json()["model"] == "scripted:demo"


def test_patch_is_refused_while_another_process_runs_a_turn(tmp_path: Path) -> None:
    """Idle means idle on every process: a turn running on one makes a PATCH of the model or
    the preset on another a 409, and the same PATCH succeeds once the turn is over."""
    db = str(tmp_path / "shared.db")
    first, second = Server(db, tmp_path), Server(db, tmp_path)
    try:
        sid = first.client.post("/sessions", json={}).json()["id"]
        with first.client.stream("POST", f"/sessions/{sid}/prompt", json={"text": "wait g"}) as r:
            lines = r.iter_lines()
            for frame in frames(lines):
                if frame.event == "tool_call_started":
                    break
            busy = second.client.patch(f"/sessions/{sid}", json={"preset": "read-only"})
            (tmp_path / "g").touch()
            assert [f.event for f in frames(lines)][-1] == "turn_finished"
        for _ in range(1200):  # the lease goes before turn_finished; a bounded wait all the same
            later = second.client.patch(f"/sessions/{sid}", json={"preset": "read-only"})
            if later.status_code != 409:
                break
    finally:
        first.stop()
        second.stop()
    assert busy.status_code == 409 and busy.json()["error"]["retryable"] is True
    assert later.status_code == 200 and later.json()["preset"] == "read-only"


async def test_a_model_the_server_cannot_call_is_refused_in_the_servers_words(
    tmp_path: Path,
) -> None:
    """A configured model without its key or SDK is the operator's to fix: the client is told
    so, and the variable to set (or the package to install) goes to the server's log only; a
    turn whose model finds no key says the same in its error event."""

    def resolve(spec: str) -> ags.Model:
        if spec == "keyless":
            raise ags.CredentialsError("openai: no API key; set OPENAI_API_KEY")
        raise ags.UsageError("the openai SDK is not installed; pip install 'agentsession[openai]'")

    keyless = ags.ScriptedModel([ags.CredentialsError("openai: no API key; set OPENAI_API_KEY")])
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=keyless,
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime, models=resolve)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        no_key = await client.post("/sessions", json={"model": "keyless"})
        no_sdk = await client.post("/sessions", json={"model": "nosdk"})
        sid = (await client.post("/sessions", json={})).json()["id"]
        turn = await client.post(f"/sessions/{sid}/prompt", json={"text": "hi"})
    await runtime.close()
    for refused in (no_key, no_sdk):
        assert refused.status_code == 400
        message = refused.json()["error"]["message"]
        assert "cannot be called here" in message
        assert "OPENAI_API_KEY" not in message and "pip install" not in message
    errors = [f.data for f in frames(iter(turn.text.splitlines())) if f.event == "error"]
    assert len(errors) == 1, turn.text
    assert "OPENAI_API_KEY" not in json.dumps(errors[0])
    assert "no API key for the session's model" in errors[0]["error"]["message"]
