"""Bearer tokens: kept hashed, one owner per token, a token sees only its own sessions; the
command line refuses a non-loopback address without a token; ``serve`` itself runs a session."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentsession.server.auth import Tokens, hash_token, is_loopback

from ..paced_demo import PACED
from ..store import pg
from .harness import TIMEOUT, Server, frames, printed_url

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Server]:
    # Bob's token is configured by its hash only: the server never sees his secret written down.
    server = Server(
        str(tmp_path / "db.sqlite"), tmp_path, "--token", ALICE, "--token", hash_token(BOB)
    )
    yield server
    server.stop()


def _as(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def test_a_token_sees_only_its_own_sessions(guarded: Server) -> None:
    _owners_scenario(guarded)


@pytest.mark.postgres
def test_owners_hold_across_processes_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    tokens = ("--postgres", "--token", ALICE, "--token", BOB)
    first, second = Server(pg_dsn, tmp_path, *tokens), Server(pg_dsn, tmp_path, *tokens)
    try:
        _owners_scenario(first)
        theirs = first.client.post("/sessions", json={}, headers=_as(BOB)).json()["id"]
        assert second.client.get(f"/sessions/{theirs}", headers=_as(ALICE)).status_code == 404
        assert second.client.get(f"/sessions/{theirs}", headers=_as(BOB)).status_code == 200
        owners = pg.run(pg_dsn, "SELECT count(DISTINCT owner) FROM agentsession_owners")
        assert owners[0][0] == 2  # kept in PostgreSQL, where every process reads them
    finally:
        first.stop()
        second.stop()


def _owners_scenario(server: Server) -> None:
    client = server.client
    assert client.get("/sessions").status_code == 401
    assert client.post("/sessions", json={}).status_code == 401
    wrong = client.get("/sessions", headers=_as("not-a-known-token-at-all"))
    assert wrong.status_code == 401 and wrong.json()["error"]["type"] == "NotAuthorizedError"
    mine = client.post("/sessions", json={}, headers=_as(ALICE)).json()["id"]
    theirs = client.post("/sessions", json={}, headers=_as(BOB)).json()["id"]
    listed = client.get("/sessions", headers=_as(ALICE)).json()
    assert [s["id"] for s in listed["sessions"]] == [mine]
    for path in ("", "/events?after=5", "/export", "/report", "/approvals"):
        assert client.get(f"/sessions/{theirs}{path}", headers=_as(ALICE)).status_code == 404
    for path in ("/prompt", "/cancel", "/retry", "/fork"):
        refused = client.post(f"/sessions/{theirs}{path}", json={"text": "x"}, headers=_as(ALICE))
        assert refused.status_code == 404
    assert client.delete(f"/sessions/{theirs}", headers=_as(ALICE)).status_code == 404
    answered = client.post(f"/sessions/{mine}/prompt", json={"text": "a b"}, headers=_as(ALICE))
    assert list(frames(iter(answered.text.splitlines())))[-1].data["result"]["text"] == "answer: 2"
    # Bob still has his session, untouched; the fork of Alice's session is Alice's.
    assert client.get(f"/sessions/{theirs}", headers=_as(BOB)).json()["entries"] == 0
    fork = client.post(f"/sessions/{mine}/fork", json={}, headers=_as(ALICE)).json()["id"]
    assert client.get(f"/sessions/{fork}", headers=_as(BOB)).status_code == 404
    assert client.get(f"/sessions/{fork}", headers=_as(ALICE)).status_code == 200


def test_tokens_are_kept_as_hashes_and_compared_whole() -> None:
    tokens = Tokens.of([ALICE, hash_token(BOB)])
    assert ALICE not in repr(tokens) and BOB not in repr(tokens)
    assert tokens.owner(f"Bearer {ALICE}") is not None
    assert tokens.owner(f"Bearer {BOB}") not in (None, tokens.owner(f"Bearer {ALICE}"))
    assert tokens.owner(f"Bearer {ALICE[:-1]}") is None
    assert tokens.owner(f"Basic {ALICE}") is None
    assert tokens.owner(None) is None
    with pytest.raises(ValueError, match="16 characters"):
        Tokens.of(["short"])
    # The run's token (what serve makes without --token) is accepted and names no owner.
    run = Tokens.of([], open_tokens=["run-token-0123456789"])
    assert run.required and run.is_open("Bearer run-token-0123456789")
    assert run.owner("Bearer run-token-0123456789") is None
    assert not run.is_open("Bearer run-token-012345678") and not run.is_open(None)
    assert not tokens.is_open(f"Bearer {ALICE}")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5"])
def test_serve_refuses_a_non_loopback_address_without_a_token(tmp_path: Path, host: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentsession",
            "--db",
            str(tmp_path / "x.db"),
            "--model",
            "scripted:demo",
            "serve",
            "--host",
            host,
            "--port",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "--token" in done.stderr and "refusing" in done.stderr
    assert not (tmp_path / "x.db").exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_serve_command_runs_a_session_with_the_demo_model(tmp_path: Path) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            str(PACED),  # the demo model, paced by the tests' own script
            "0.01",
            "--db",
            str(tmp_path / "s.db"),
            "--model",
            "scripted:demo",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    stopped = False
    try:
        url, token = printed_url(process)
        assert url == f"http://127.0.0.1:{port}/"
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT, headers=_as(token)
        )
        for _ in range(1200):
            try:
                client.get("/openapi.json")
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(0.1)
        sid = client.post("/sessions", json={}).json()["id"]
        answer = client.post(f"/sessions/{sid}/prompt", json={"text": "one two three four"})
        got = list(frames(iter(answer.text.splitlines())))
        assert got[-1].event == "turn_finished" and "**4**" in got[-1].data["result"]["text"]
        assert [f.id for f in got if f.id is not None] == list(range(8))
        # An open events stream never ends by itself, but it does when the server stops.
        with client.stream("GET", f"/sessions/{sid}/events?after=5") as events:
            lines = events.iter_lines()
            first = next(frames(lines))
            assert first.id == 6
            process.terminate()
            stopped = True
            rest = list(frames(lines))
            assert [f.id for f in rest if f.id is not None] == [7]
            assert rest[-1].event == "turn_finished"  # the follower sees the turn end too
        client.close()
    finally:
        # One SIGTERM only: a second one after the server restored its signal handlers, while
        # it closes the runtime, would end it by the signal itself.
        if not stopped:
            process.terminate()
        process.communicate(timeout=120)
    assert process.returncode == 0


def test_serve_with_two_workers_answers_and_stops_cleanly(tmp_path: Path) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentsession",
            "--db",
            str(tmp_path / "w.db"),
            "--model",
            "scripted:demo",
            "serve",
            "--port",
            str(port),
            "--workers",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        _, token = printed_url(process)
        for _ in range(1200):
            try:
                with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT) as c:
                    c.get("/openapi.json")
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(0.1)
        answers = []
        for n in range(4):  # a fresh connection each time: the workers share the port
            with httpx.Client(
                base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT, headers=_as(token)
            ) as c:
                sid = c.post("/sessions", json={}).json()["id"]
                text = " ".join(["word"] * (n + 1))
                got = list(
                    frames(
                        iter(
                            c.post(f"/sessions/{sid}/prompt", json={"text": text}).text.splitlines()
                        )
                    )
                )
                answers.append(got[-1].data["result"]["text"])
        assert [f"**{n + 1}**" in a for n, a in enumerate(answers)] == [True] * 4
    finally:
        process.terminate()
        process.communicate(timeout=120)
    assert process.returncode == 0
