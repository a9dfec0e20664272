"""The server trusts no browser: Host, Origin and Content-Type are checked before any route,
responses may not be framed, ``serve`` always wants a token unless told ``--no-auth``, imports
get new ids, and half-sent requests and idle crowds cannot hold the server.

Each refusal is shown changing nothing, beside a control where the same request passes because
the user allowed it (``--allowed-host``, ``--no-auth``, the server's own origin, a JSON body).
"""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("starlette", reason="the server extra is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")

from agentsession.server.guard import Guard, host_allowed

from ..server.harness import TIMEOUT, Server, frames, printed_url
from ..server.openapi_check import check_response

ALICE = "alice-token-0123456789"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(str(tmp_path / "db.sqlite"), tmp_path, "--allowed-host", "agents.example")
    yield running
    running.stop()


def _count(server: Server) -> int:
    return len(server.client.get("/sessions").json()["sessions"])


def _refused(response: httpx.Response, status: int, kind: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == kind and error["message"]


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        None,
    ],
)
def test_a_state_changing_request_without_a_json_body_is_refused_415(
    server: Server, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    client = httpx.Client(base_url=server.url, timeout=TIMEOUT, headers=headers)
    with client:
        refused = client.post("/sessions", content=b'{"title": "x"}')
        _refused(refused, 415, "UnsupportedMediaTypeError")
        said = repr(content_type) if content_type else "none"
        assert refused.json()["error"]["message"].endswith(f"(it said {said})")
        assert _count(server) == 0
    created = server.client.post("/sessions", json={"title": "x"})  # the control: JSON declared
    assert created.status_code == 201 and _count(server) == 1


def test_each_state_changing_route_refuses_text_plain(server: Server) -> None:
    sid = server.client.post("/sessions", json={}).json()["id"]
    plain = {"Content-Type": "text/plain"}
    attempts = [
        ("POST", f"/sessions/{sid}/prompt", b'{"text": "a b"}'),
        ("POST", f"/sessions/{sid}/resume", b"{}"),
        ("POST", f"/sessions/{sid}/retry", b"{}"),
        ("POST", f"/sessions/{sid}/cancel", b""),
        ("POST", f"/sessions/{sid}/fork", b"{}"),
        ("POST", f"/sessions/{sid}/approvals/call_1", b'{"approved": true}'),
        ("PATCH", f"/sessions/{sid}", b'{"title": "renamed"}'),
        ("DELETE", f"/sessions/{sid}", b""),
        ("POST", "/sessions/import", b""),
    ]
    for method, path, body in attempts:
        answer = server.client.request(method, path, content=body, headers=plain)
        _refused(answer, 415, "UnsupportedMediaTypeError")
    info = server.client.get(f"/sessions/{sid}").json()
    assert info["entries"] == 0 and info["title"] is None and _count(server) == 1
    # A DELETE without any body needs no type (no page can send one without asking first).
    bare = httpx.Client(base_url=server.url, timeout=TIMEOUT)
    with bare:
        assert bare.delete(f"/sessions/{sid}").status_code == 204


@pytest.mark.parametrize(
    "origin", ["http://127.0.0.1:9", "null", "http://evil.example", "https://127.0.0.1"]
)
def test_a_page_of_another_origin_is_refused_403(server: Server, origin: str) -> None:
    answer = server.client.post("/sessions", json={}, headers={"Origin": origin})
    _refused(answer, 403, "ForbiddenRequestError")
    _refused(
        server.client.get("/sessions", headers={"Origin": origin}), 403, "ForbiddenRequestError"
    )
    assert _count(server) == 0
    own = server.client.post("/sessions", json={}, headers={"Origin": server.url})  # the control
    assert own.status_code == 201 and _count(server) == 1


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:80", "192.0.2.7", "localhost.evil.example"]
)
def test_a_host_name_not_served_is_refused_403(server: Server, host: str) -> None:
    # What a page on a rebound DNS name sends: its own name, with the server's address.
    answer = server.client.post("/sessions", json={}, headers={"Host": host})
    _refused(answer, 403, "ForbiddenRequestError")
    _refused(server.client.get("/", headers={"Host": host}), 403, "ForbiddenRequestError")
    assert _count(server) == 0


def test_health_probes_answer_whatever_the_host(server: Server) -> None:
    """A load balancer's probe (Caddy's ``health_uri``, a cloud balancer's, an orchestrator's)
    names the process by its address, not by the public name: refused, it took every process
    out of rotation. The probes say nothing a page could misuse; every other route still
    refuses that host."""
    for host in ("10.0.0.11:8000", "evil.example"):
        assert server.client.get("/healthz", headers={"Host": host}).json() == {"status": "ok"}
        assert server.client.get("/readyz", headers={"Host": host}).status_code == 200
        _refused(
            server.client.get("/sessions", headers={"Host": host}), 403, "ForbiddenRequestError"
        )
    probe = server.client.post("/healthz", json={}, headers={"Host": "evil.example"})
    _refused(probe, 403, "ForbiddenRequestError")


def test_loopback_names_and_allowed_hosts_are_served(server: Server) -> None:
    port = server.url.rsplit(":", 1)[1]
    hosts = [
        "localhost",
        f"localhost:{port}",
        "app.localhost",
        "127.0.0.1",
        "[::1]:1",
        "agents.example",
    ]
    for n, host in enumerate(hosts, start=1):
        assert server.client.post("/sessions", json={}, headers={"Host": host}).status_code == 201
        assert _count(server) == n
    # Its origin is the server's own when it matches the Host it was sent to.
    own = {"Host": "agents.example:8443", "Origin": "https://agents.example:8443"}
    assert server.client.post("/sessions", json={}, headers=own).status_code == 201


def test_every_response_forbids_framing_and_inline_code(server: Server) -> None:
    sid = server.client.post("/sessions", json={}).json()["id"]
    server.client.post(f"/sessions/{sid}/prompt", json={"text": "a b"})
    answers = {
        "page": server.client.get("/"),
        "json": server.client.get("/sessions"),
        "report": server.client.get(f"/sessions/{sid}/report"),
        "error": server.client.get("/sessions/nope"),
        "refused": server.client.post(
            "/sessions", content=b"{}", headers={"Content-Type": "text/plain"}
        ),
    }
    for name, answer in answers.items():
        assert answer.headers["x-frame-options"] == "DENY", name
        policy = answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy, name
    for name in ("page", "report"):
        policy = answers[name].headers["content-security-policy"]
        # The page's scripts are files of the server's own ('self'); the report's by hash.
        assert re.search(r"script-src (?:'self' )?'sha256-[A-Za-z0-9+/=]+'", policy), policy
        assert "'unsafe-inline'" not in answers[name].text
    assert "default-src 'none'" in answers["json"].headers["content-security-policy"]


def test_an_import_gets_a_new_id_unless_its_owner_imports_it(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "owned.db"), tmp_path, "--token", ALICE)
    alice = {"Authorization": f"Bearer {ALICE}"}
    try:
        sid = server.client.post("/sessions", json={}, headers=alice).json()["id"]
        exported = server.client.get(f"/sessions/{sid}/export", headers=alice).content
        # Her own session's file keeps its id: it is the same session, which still exists.
        again = server.client.post("/sessions/import", content=exported, headers=alice)
        _refused(again, 409, "ConflictError")
        copy = server.client.post("/sessions/import?copy=1", content=exported, headers=alice)
        assert copy.status_code == 201 and copy.json()["id"] != sid
        # A file naming a session she does not own (here: one that never existed) gets a new id.
        foreign = exported.replace(sid.encode(), b"f" * 32, 1)
        imported = server.client.post("/sessions/import", content=foreign, headers=alice)
        assert imported.status_code == 201 and imported.json()["id"] not in (sid, "f" * 32)
    finally:
        server.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _serve(tmp_path: Path, *options: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    port = _free_port()
    command = [sys.executable, "-m", "agentsession", "--db", str(tmp_path / "serve.db")]
    command += ["--model", "scripted:demo", "serve", "--port", str(port), *options]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        yield process, f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.communicate(timeout=120)


def _ready(client: httpx.Client, process: subprocess.Popen[str]) -> None:
    for _ in range(1200):
        try:
            client.get("/openapi.json")
            return
        except httpx.TransportError:
            assert process.poll() is None, process.communicate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(0.1)
    raise AssertionError("serve never answered")


def test_serve_without_token_makes_one_and_prints_its_url(tmp_path: Path) -> None:
    with _serve(tmp_path) as (process, url):
        printed, token = printed_url(process)
        assert printed == url + "/" and len(token) >= 32
        with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
            _ready(client, process)
            _refused(client.post("/sessions", json={}), 401, "NotAuthorizedError")
            _refused(client.get("/sessions"), 401, "NotAuthorizedError")
            bearer = {"Authorization": f"Bearer {token}"}
            assert len(client.get("/sessions", headers=bearer).json()["sessions"]) == 0
            assert client.post("/sessions", json={}, headers=bearer).status_code == 201
            # A token is no pass for a page of another origin or another host name.
            evil = {**bearer, "Origin": "http://evil.example"}
            _refused(client.post("/sessions", json={}, headers=evil), 403, "ForbiddenRequestError")
            rebound = {**bearer, "Host": "evil.example"}
            _refused(
                client.post("/sessions", json={}, headers=rebound), 403, "ForbiddenRequestError"
            )
            assert len(client.get("/sessions", headers=bearer).json()["sessions"]) == 1


def test_control_no_auth_serves_without_a_token_and_still_checks_pages(tmp_path: Path) -> None:
    with _serve(tmp_path, "--no-auth", "--allowed-host", "agents.example") as (process, url):
        with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
            _ready(client, process)
            assert client.post("/sessions", json={}).status_code == 201  # no token needed
            assert (
                client.post("/sessions", json={}, headers={"Host": "agents.example"}).status_code
                == 201
            )
            _refused(
                client.post("/sessions", json={}, headers={"Origin": "null"}),
                403,
                "ForbiddenRequestError",
            )
            _refused(
                client.post("/sessions", json={}, headers={"Host": "evil.example"}),
                403,
                "ForbiddenRequestError",
            )
            _refused(
                client.post("/sessions", content=b"{}", headers={"Content-Type": "text/plain"}),
                415,
                "UnsupportedMediaTypeError",
            )
            assert len(client.get("/sessions").json()["sessions"]) == 2
        process.terminate()
        out, err = process.communicate(timeout=120)
    assert "?token=" not in out + err
    assert "WARNING: --no-auth" in err and "approve" in err


@pytest.mark.parametrize(
    "options", [["--host", "0.0.0.0", "--no-auth"], ["--no-auth", "--token", ALICE]]
)
def test_no_auth_is_for_loopback_only(tmp_path: Path, options: list[str]) -> None:
    command = [sys.executable, "-m", "agentsession", "--db", str(tmp_path / "x.db")]
    done = subprocess.run(
        [*command, "--model", "scripted:demo", "serve", "--port", "1", *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0 and not (tmp_path / "x.db").exists()
    assert "refusing" in done.stderr or "contradict" in done.stderr
    if "0.0.0.0" in options:  # the error names the option the user gave
        assert "with --no-auth" in done.stderr


def _half_sent(url: str) -> socket.socket:
    """A connection that sent half a request head and then nothing."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=120)
    sock.sendall(b"GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
    return sock


def test_half_sent_request_heads_are_closed_and_running_requests_are_not(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "h.db"), tmp_path, "--head-timeout", "1")
    try:
        sid = server.client.post("/sessions", json={}).json()["id"]
        with server.client.stream(
            "POST", f"/sessions/{sid}/prompt", json={"text": "wait g1"}
        ) as turn:
            lines = turn.iter_lines()
            next(frames(lines))  # the turn runs: its request head came whole long ago
            sock = _half_sent(server.url)
            assert sock.recv(1024) == b""  # closed by the server once its deadline passed
            sock.close()
            (tmp_path / "g1").touch()  # the turn, older than that deadline, still runs to its end
            assert [f for f in frames(lines)][-1].data["result"]["text"] == "answer: gate g1 open"
    finally:
        server.stop()


def test_control_without_the_deadline_a_half_sent_head_is_held(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "c.db"), tmp_path)
    try:
        sock = _half_sent(server.url)
        sock.settimeout(3)
        with pytest.raises(TimeoutError):
            sock.recv(1024)  # plain uvicorn holds it (this is what the deadline ends)
        sock.close()
    finally:
        server.stop()


def test_connections_beyond_the_cap_are_answered_503(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "m.db"), tmp_path, "--max-connections", "3")
    idle = []
    try:
        for _ in range(3):
            idle.append(_half_sent(server.url))
        with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
            refused = client.get("/sessions")
            assert refused.status_code == 503
            check_response(refused, read=True)  # uvicorn's own answer, as the document says
        for sock in idle:
            sock.close()
        for _ in range(600):  # the server notices the closed connections; then it answers
            with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
                if client.get("/sessions").status_code == 200:
                    break
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.process.wait(0.1)  # a bounded pause between tries, not a measurement
        else:
            raise AssertionError("the server never answered again")
    finally:
        server.stop()


def test_serve_serves_the_address_it_listens_on_but_not_a_wildcard() -> None:
    import argparse

    from agentsession.cli.serve import _allowed_hosts

    def named(host: str) -> list[str]:
        return _allowed_hosts(argparse.Namespace(host=host, allowed_host=["agents.example"]))

    assert named("192.0.2.7") == ["agents.example", "192.0.2.7"]
    assert named("0.0.0.0") == named("::") == ["agents.example"]
    assert named("my-host.example") == ["agents.example"]  # a name is given with --allowed-host
    guard = Guard(app=None, allowed_hosts=named("2001:db8::1"))  # type: ignore[arg-type]
    assert host_allowed("[2001:db8::1]:8000", guard.allowed)
    assert not host_allowed("[2001:db8::2]:8000", guard.allowed)


def test_an_allowed_host_given_with_its_port_is_served() -> None:
    # `--allowed-host box.lan:8000` named nothing the Host check could ever match: every request
    # by that name was refused 403 saying only the --allowed-host names are served.
    guard = Guard(app=None, allowed_hosts=["box.lan:8000", "[2001:db8::1]:8000"])  # type: ignore[arg-type]
    assert host_allowed("box.lan:8000", guard.allowed)
    assert host_allowed("[2001:db8::1]:8000", guard.allowed)
    assert not host_allowed("evil.example:8000", guard.allowed)
