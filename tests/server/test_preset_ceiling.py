"""A server's clients choose a session's permission preset only under the operator's ceiling.

``POST /sessions`` and ``PATCH /sessions/{id}`` take a ``preset``; the server lets a client name
its default preset and those within it, plus the ones ``create_app(allow_presets=…)`` (``serve
--allow-preset``) adds. Anything else is 403 naming the allowed presets, and nothing is stored.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import agentsession as ags

from .harness import JSON, serve_cli

NET = {"read": "allow", "network": "allow"}  # weaker than workspace-write in writing, not in net
CAREFUL = {"read": "ask"}  # within every built-in preset but read-only's read


def _runtime(tmp_path: Path, default: str, presets: Mapping[str, Any] | None = None) -> ags.Runtime:
    config = ags.Config(titles=False, permission_preset=default, permission_presets=presets or {})
    return ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel(["ok"]),
        project_dir=tmp_path,
        config=config,
    )


@asynccontextmanager
async def _client(runtime: ags.Runtime, **options: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = ags.server.create_app(runtime, **options)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client


async def _log(runtime: ags.Runtime, sid: str) -> list[object]:
    return [record.entry for record in await runtime.store.read(sid, 0)]


async def test_a_preset_above_the_ceiling_is_403_and_nothing_is_stored(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, "workspace-write")
    async with _client(runtime) as client:
        refused = await client.post("/sessions", json={"preset": "full-access", "title": "x"})
        assert refused.status_code == 403, refused.text
        assert (await client.get("/sessions")).json()["sessions"] == []  # no session created
        sid = (await client.post("/sessions", json={"title": "Mine"})).json()["id"]
        before = await _log(runtime, sid)
        patched = await client.patch(f"/sessions/{sid}", json={"preset": "full-access"})
        # Refused as a whole: the title beside the preset is not changed either.
        both_fields = {"title": "New", "preset": "full-access"}
        both = await client.patch(f"/sessions/{sid}", json=both_fields)
        shown = (await client.get(f"/sessions/{sid}")).json()
    after = await _log(runtime, sid)
    await runtime.close()
    for answer in (refused, patched, both):
        assert answer.status_code == 403, answer.text
        error = answer.json()["error"]
        assert error["type"] == "PresetNotAllowedError" and error["retryable"] is False
        assert error["allowed_presets"] == ["read-only", "workspace-write"]
        assert "'full-access'" in error["message"]
        assert "read-only, workspace-write" in error["message"]
    assert after == before
    assert shown["preset"] == "workspace-write" and shown["title"] == "Mine"


async def test_the_default_preset_and_weaker_ones_are_allowed(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, "workspace-write")
    async with _client(runtime) as client:
        weaker = await client.post("/sessions", json={"preset": "read-only"})
        same = await client.post("/sessions", json={"preset": "workspace-write"})
        sid = same.json()["id"]
        lowered = await client.patch(f"/sessions/{sid}", json={"preset": "read-only"})
        raised = await client.patch(f"/sessions/{sid}", json={"preset": "workspace-write"})
        unknown = await client.post("/sessions", json={"preset": "no-such-preset"})
    log = await _log(runtime, sid)
    await runtime.close()
    assert weaker.status_code == 201 and weaker.json()["preset"] == "read-only"
    assert same.status_code == 201 and same.json()["preset"] == "workspace-write"
    assert lowered.status_code == 200 and lowered.json()["preset"] == "read-only"
    assert raised.status_code == 200 and raised.json()["preset"] == "workspace-write"
    assert unknown.status_code == 400 and "no-such-preset" in unknown.text  # unknown stays 400
    changes = [e for e in log if isinstance(e, ags.log.PermissionChanged)]
    assert [(c.preset, c.previous) for c in changes] == [
        ("read-only", "workspace-write"),
        ("workspace-write", "read-only"),
    ]


async def test_the_operator_may_allow_a_stronger_preset(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, "read-only")
    async with _client(runtime, allow_presets=["full-access"]) as client:
        created = await client.post("/sessions", json={"preset": "full-access"})
        sid = (await client.post("/sessions", json={})).json()["id"]
        patched = await client.patch(f"/sessions/{sid}", json={"preset": "full-access"})
        # Allowing full-access allows only it: workspace-write is still above read-only.
        between = await client.patch(f"/sessions/{sid}", json={"preset": "workspace-write"})
    await runtime.close()
    assert created.status_code == 201 and created.json()["preset"] == "full-access"
    assert patched.status_code == 200 and patched.json()["preset"] == "full-access"
    assert between.status_code == 403
    assert between.json()["error"]["allowed_presets"] == ["full-access", "read-only"]


async def test_a_config_preset_is_judged_by_its_rules(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, "workspace-write", {"net": NET, "careful": CAREFUL})
    async with _client(runtime) as client:
        net = await client.post("/sessions", json={"preset": "net"})
        careful = await client.post("/sessions", json={"preset": "careful"})
    await runtime.close()
    assert net.status_code == 403  # network allowed where workspace-write denies it
    assert careful.status_code == 201 and careful.json()["preset"] == "careful"
    assert net.json()["error"]["allowed_presets"] == ["careful", "read-only", "workspace-write"]


async def test_an_unknown_allowed_preset_is_a_usage_error(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, "read-only")
    with pytest.raises(ags.UsageError, match="no-such-preset"):
        ags.server.create_app(runtime, allow_presets=["no-such-preset"])
    await runtime.close()


async def test_a_session_made_stronger_before_keeps_its_preset_and_imports_start_low(
    tmp_path: Path,
) -> None:
    runtime = _runtime(tmp_path, "read-only")
    older = await runtime.create_session()  # made by the library, before any server ran
    older.set_permission_preset("full-access")
    await older.prompt("hello")
    await older.close()
    async with _client(runtime) as client:
        shown = (await client.get(f"/sessions/{older.id}")).json()
        renamed = await client.patch(f"/sessions/{older.id}", json={"title": "Old"})
        exported = await client.get(f"/sessions/{older.id}/export")
        imported = await client.post(
            "/sessions/import?copy=1", content=exported.content, headers=JSON
        )
        copy = (await client.get(f"/sessions/{imported.json()['id']}")).json()
        lowered = await client.patch(f"/sessions/{older.id}", json={"preset": "read-only"})
        back = await client.patch(f"/sessions/{older.id}", json={"preset": "full-access"})
    await runtime.close()
    assert shown["preset"] == "full-access"  # history is not rewritten
    assert renamed.status_code == 200 and renamed.json()["preset"] == "full-access"
    assert imported.status_code == 201 and copy["preset"] == "read-only"  # the server's default
    assert lowered.status_code == 200 and lowered.json()["preset"] == "read-only"
    assert back.status_code == 403  # once lowered, a client cannot raise it again


def test_serve_passes_allow_preset_through_its_command_line(tmp_path: Path) -> None:
    base = ("--db", str(tmp_path / "a.db"), "--model", "scripted:demo", "serve")
    with serve_cli(tmp_path, *base, "--workspaces", "spaces") as served:
        refused = served.client.post("/sessions", json={"preset": "full-access"})
        allowed = served.client.post("/sessions", json={"preset": "read-only"})
    assert refused.status_code == 403 and refused.json()["error"]["allowed_presets"] == [
        "read-only"
    ]
    assert allowed.status_code == 201
    with serve_cli(
        tmp_path, *base, "--workspaces", "spaces", "--allow-preset", "full-access"
    ) as served:
        created = served.client.post("/sessions", json={"preset": "full-access"})
    assert created.status_code == 201 and created.json()["preset"] == "full-access"


def test_serve_refuses_an_unknown_allow_preset(tmp_path: Path) -> None:
    import subprocess
    import sys

    command = [sys.executable, "-m", "agentsession", "--db", str(tmp_path / "a.db")]
    command += ["--model", "scripted:demo", "serve", "--allow-preset", "nosuch", "--port", "9"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "unknown permission preset 'nosuch'" in done.stderr
    assert "serving on" not in done.stdout + done.stderr


def test_the_real_parser_passes_allow_preset_and_tells_what_serve_q_does() -> None:
    from agentsession.cli.app import build_parser
    from agentsession.cli.serve_options import SERVE_QUIET

    parser = build_parser()
    args = parser.parse_args(
        ["serve", "--allow-preset", "full-access", "--allow-preset", "careful", "-q"]
    )
    assert args.allow_preset == ["full-access", "careful"] and args.quiet is True
    assert parser.parse_args(["serve"]).allow_preset == []
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    serve_help = " ".join(sub.choices["serve"].format_help().split())
    run_help = " ".join(sub.choices["run"].format_help().split())
    assert (
        " ".join(SERVE_QUIET.split()) in serve_help and "print the replies only" not in serve_help
    )
    assert "print the replies only" in run_help  # the other commands keep their meaning
    assert "--allow-preset NAME" in serve_help and "the ceiling" in serve_help


def test_serve_q_leaves_out_the_status_lines(tmp_path: Path) -> None:
    base = ("--db", str(tmp_path / "a.db"), "--model", "scripted:demo", "serve")
    with serve_cli(tmp_path, *base) as loud:
        assert loud.client.get("/healthz").status_code == 200
    with serve_cli(tmp_path, *base, "-q") as quiet:
        assert quiet.client.get("/healthz").status_code == 200  # the token URL was printed
    assert "serving on" in loud.stderr
    assert "serving on" not in quiet.stderr


def test_every_worker_of_serve_workers_holds_the_same_ceiling(tmp_path: Path) -> None:
    argv = ("--db", str(tmp_path / "w.db"), "--model", "scripted:demo", "serve", "--workers", "2")
    with serve_cli(tmp_path, *argv, "--allow-preset", "full-access") as served:
        # A new connection each time, so the workers sharing the port each take some.
        close = {"Connection": "close"}
        answers = [
            served.client.post("/sessions", json={"preset": p}, headers=close).status_code
            for p in ("full-access", "workspace-write") * 3
        ]
    assert answers == [201, 403] * 3
