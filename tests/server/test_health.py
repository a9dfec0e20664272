"""Health and readiness: ``/healthz`` answers while the process runs; ``/readyz`` says whether
the store can serve, with a reason that names no address, user, password or path; ``serve``
refuses to start on a database it cannot reach."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from .harness import Server, serve_cli


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _dead_dsn() -> str:
    return f"postgresql://dbuser:s3cret-pw@127.0.0.1:{_closed_port()}/agents"


def test_healthz_and_readyz_on_a_working_store(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "db.sqlite"), tmp_path)
    try:
        health = server.client.get("/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        ready = server.client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
    finally:
        server.stop()


def test_readyz_names_the_problem_but_no_connection_details(tmp_path: Path) -> None:
    dsn = _dead_dsn()
    server = Server(dsn, tmp_path, "--postgres")
    try:
        assert server.client.get("/healthz").status_code == 200  # the process itself is fine
        ready = server.client.get("/readyz")
        assert ready.status_code == 503
        body = ready.json()
        assert body["status"] == "not_ready" and "not running" in body["reason"]
        for secret in ("s3cret-pw", "dbuser", "127.0.0.1", dsn.rsplit(":", 1)[1]):
            assert secret not in ready.text
    finally:
        server.stop()


def test_serve_refuses_to_start_on_a_database_it_cannot_reach(tmp_path: Path) -> None:
    dsn = _dead_dsn()
    command = [sys.executable, "-m", "agentsession", "--db", dsn, "--model", "scripted:demo"]
    command += ["serve", "--port", str(_closed_port())]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    assert "cannot serve" in done.stderr and "not running" in done.stderr
    assert "serving on" not in done.stdout + done.stderr
    for secret in ("s3cret-pw", "127.0.0.1"):
        assert secret not in done.stdout + done.stderr


def test_the_access_log_is_json_lines_without_tokens_prompts_or_ids(tmp_path: Path) -> None:
    token, prompt = "access-log-token-0123456789", "the secret prompt words"
    argv = ("--db", str(tmp_path / "a.db"), "--model", "scripted:demo", "serve", "--token", token)
    with serve_cli(tmp_path, *argv) as served:
        auth = {"Authorization": f"Bearer {token}", "X-Request-ID": "trace-42"}
        created = served.client.post("/sessions", json={}, headers=auth)
        assert created.headers["x-request-id"] == "trace-42"
        sid = created.json()["id"]
        turn = served.client.post(f"/sessions/{sid}/prompt", json={"text": prompt}, headers=auth)
        assert turn.status_code == 200
        assert served.client.get(f"/sessions/{sid}").status_code == 401  # no token
    lines = [json.loads(line) for line in served.stdout.splitlines() if line.startswith("{")]
    routes = [(line["method"], line["route"], line["status"]) for line in lines]
    assert ("POST", "/sessions", 201) in routes
    assert ("POST", "/sessions/{id}/prompt", 200) in routes
    assert ("GET", "/sessions/{id}", 401) in routes
    for line in lines:
        assert set(line) >= {"request_id", "route", "status", "duration_ms", "owner", "ts"}
        assert line["kind"] == "access" and line["schema_version"] == 1
        assert isinstance(line["duration_ms"], float | int) and line["duration_ms"] >= 0
    owners = {line["owner"] for line in lines if line["route"] == "/sessions/{id}/prompt"}
    assert len(owners) == 1 and None not in owners  # a digest, the same for one token
    assert {line["request_id"] for line in lines if line["route"] == "/sessions"} == {"trace-42"}
    for secret in (token, prompt, sid, "secret"):
        assert secret not in served.stdout


def test_log_level_warning_leaves_the_access_log_out(tmp_path: Path) -> None:
    argv = ("--db", str(tmp_path / "w.db"), "--model", "scripted:demo", "serve")
    with serve_cli(tmp_path, *argv, "--log-level", "warning") as served:
        assert served.client.get("/healthz").json() == {"status": "ok"}
    assert not [line for line in served.stdout.splitlines() if line.startswith("{")]
