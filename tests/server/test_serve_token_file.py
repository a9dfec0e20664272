"""``serve --token-file`` and ``AGENTSESSION_TOKEN``: tokens kept off the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .harness import free_port, serve_cli

FILE_TOKEN, ENV_TOKEN = "file-token-0123456789abcdef", "env-token-0123456789abcdef"


def test_tokens_from_a_file_and_the_environment_are_accepted(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# the team's token\n{FILE_TOKEN}\n\n")
    tokens.chmod(0o600)
    argv = ("--db", str(tmp_path / "t.db"), "--model", "scripted:demo", "serve")
    env = {"AGENTSESSION_TOKEN": ENV_TOKEN}
    with serve_cli(tmp_path, *argv, "--token-file", str(tokens), env=env) as served:
        client = served.client
        for token in (FILE_TOKEN, ENV_TOKEN):
            answer = client.get("/sessions", headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 200, token
        assert client.get("/sessions").status_code == 401
        wrong = client.get("/sessions", headers={"Authorization": "Bearer # the team's token"})
        assert wrong.status_code == 401  # a comment is no token
    assert "?token=" not in served.stdout  # no token was made for the run
    assert "may be read by other users" not in served.stderr
    for token in (FILE_TOKEN, ENV_TOKEN):
        assert token not in served.stdout + served.stderr


def _serve(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agentsession", "--db", str(tmp_path / "t.db")]
    command += ["--model", "scripted:demo", "serve", "--port", str(free_port()), *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_a_missing_or_empty_token_file_stops_serve_with_a_clear_message(tmp_path: Path) -> None:
    missing = _serve(tmp_path, "--token-file", str(tmp_path / "nope"))
    assert missing.returncode != 0
    assert "--token-file" in missing.stderr and "cannot read it" in missing.stderr
    empty = tmp_path / "empty"
    empty.write_text("# nothing yet\n")
    refused = _serve(tmp_path, "--token-file", str(empty))
    assert refused.returncode != 0 and "holds no token" in refused.stderr


def test_a_token_file_others_may_read_is_said_so(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.write_text("short\n")  # too short: serve stops after the warning, before listening
    shared.chmod(0o644)
    done = _serve(tmp_path, "--token-file", str(shared))
    assert "may be read by other users" in done.stderr and "chmod 600" in done.stderr
    assert done.returncode != 0 and "16 characters" in done.stderr
