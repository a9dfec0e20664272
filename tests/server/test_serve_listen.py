"""``serve`` binds its port before it says it serves: a port in use is one clear error, and with
``--json`` the URL to open is a ``serving`` object on standard output, not a line of prose."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from .harness import TIMEOUT


def _serve(tmp_path: Path, *options: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "agentsession", "--db", str(tmp_path / "t.db")]
    command += ["--model", "scripted:demo", "serve", *options]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )


def test_a_port_in_use_is_one_clear_error_and_no_url(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for extra in ((), ("--json",), ("--workers", "2")):
            process = _serve(tmp_path, "--port", port, *extra)
            out, err = process.communicate(timeout=120)
            assert process.returncode == 1, (extra, out, err)
            line = f"cannot listen on 127.0.0.1:{port}: address already in use"
            assert f"error: {line}" in err and "--port" in err
            assert "Traceback" not in err and "ERROR:" not in err
            assert "token=" not in out + err and "serving on" not in err  # nothing was served
            if extra == ("--json",):
                error = json.loads(out)
                assert error["kind"] == "error" and line in error["message"]


def test_json_says_where_it_serves_as_an_object(tmp_path: Path) -> None:
    process = _serve(tmp_path, "--json", "--port", "0")
    try:
        assert process.stdout is not None
        serving = json.loads(process.stdout.readline())
        assert serving["kind"] == "serving" and serving["schema_version"] == 1
        url, opened = serving["url"], serving["open"]
        assert not url.endswith(":0") and opened.startswith(f"{url}/?token=")
        token = opened.partition("?token=")[2]
        with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
            # the URL was printed after the port was listening: the first request is answered
            assert client.get("/healthz").status_code == 200
            answer = client.get("/sessions", headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 200
    finally:
        process.terminate()
        out, err = process.communicate(timeout=120)
    assert "open the web UI" not in out and "Traceback" not in err
    # Every later line of the JSON stream names its kind and version too: the access lines.
    rest = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert {line["kind"] for line in rest} == {"access"}, rest
    assert all(line["schema_version"] == 1 for line in rest)
    assert {line["route"] for line in rest} >= {"/healthz", "/sessions"}
