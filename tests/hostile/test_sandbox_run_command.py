"""run_command in bubblewrap: under workspace-write an approved command cannot write outside the
project, read a provider key, reach a loopback server, or leave a process behind; full-access runs
unsandboxed and says so; Config(sandbox=) picks, and the permissions text tells the model.

The sandbox tests need a working bubblewrap (``make test`` installs it); where it cannot work they
skip, saying why loudly.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.tools.sandbox import probe, reduced_environment

from ..conftest import MakeRuntime
from ..scenario import make_project, tool_results

Make = MakeRuntime
SECRETS = {
    "OPENAI_API_KEY": "sk-test-openai-secret",
    "ANTHROPIC_API_KEY": "sk-ant-test-secret",
    "GITHUB_TOKEN": "ghp-test-secret",
    "MY_SERVICE_SECRET": "hush-test-secret",
}

needs_bwrap = pytest.mark.skipif(
    not probe().works,
    reason=f"!!! RUN_COMMAND'S SANDBOX WAS NOT TESTED !!! {probe().problem}"
    " (make test installs bubblewrap)",
)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


async def run_approved(
    make_runtime: Make,
    project: Path,
    command: str,
    preset: str = "workspace-write",
    sandbox: str = "auto",
) -> str:
    """Run ``command`` through a session under ``preset``, approving it; the result text."""
    model = ags.ScriptedModel([[ags.ToolCall("run_command", {"command": command})], "done"])
    runtime = make_runtime(
        model=model,
        project_dir=project,
        tools=ags.builtin_tools(),
        config=ags.Config(retry_base_delay=0, permission_preset=preset, sandbox=sandbox),
    )
    session = await runtime.create_session()
    result = await session.prompt("run it")
    if result.stop_reason == "approval_required":
        (request,) = result.approvals
        await session.approve(request.call_id)
        result = await session.retry()
    assert result.text == "done"
    (answer,) = tool_results(model.requests[-1])
    return str(answer.content)


@needs_bwrap
async def test_an_approved_command_writes_in_the_project_and_nowhere_else(
    make_runtime: Make, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    elsewhere = Path("/var/tmp") / f"agentsession-sandbox-{uuid.uuid4().hex}"
    try:
        text = await run_approved(
            make_runtime,
            project,
            f"echo in > inside.txt; echo out > {outside}/escaped.txt; echo far > {elsewhere}; "
            "echo done",
        )
        assert (project / "inside.txt").read_text() == "in\n"
        assert not (outside / "escaped.txt").exists()
        assert not elsewhere.exists()
        assert "Read-only file system" in text
    finally:
        elsewhere.unlink(missing_ok=True)


@needs_bwrap
async def test_an_approved_command_sees_no_provider_key(make_runtime: Make, project: Path) -> None:
    text = await run_approved(make_runtime, project, "env; echo HOME=$HOME")
    for value in SECRETS.values():
        assert value not in text
    assert "PATH=" in text


async def test_full_access_runs_unsandboxed_with_the_environment(
    make_runtime: Make, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    text = await run_approved(
        make_runtime, project, f"env; echo out > {outside}/written.txt", preset="full-access"
    )
    assert SECRETS["OPENAI_API_KEY"] in text  # the control: the test can see a key get through
    assert (outside / "written.txt").read_text() == "out\n"


async def test_without_the_sandbox_workspace_write_still_drops_credentials(
    make_runtime: Make, project: Path
) -> None:
    text = await run_approved(make_runtime, project, "env", sandbox="none")
    for value in SECRETS.values():
        assert value not in text
    assert "PATH=" in text


def test_the_environment_allowlist_keeps_no_secret_looking_name() -> None:
    kept = reduced_environment(
        {"PATH": "/bin", "LC_ALL": "C", "LC_API_KEY": "x", "AWS_ACCESS_KEY_ID": "x", **SECRETS}
    )
    assert kept == {"PATH": "/bin", "LC_ALL": "C"}


@pytest.fixture
def loopback() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback TCP server; the list holds what each accepted connection sent."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    got: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                got.append(connection.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], got
    server.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone would not)
    server.close()
    thread.join(timeout=30)


CONNECT = "exec 3<>/dev/tcp/127.0.0.1/{port} && echo hello >&3 && echo connected"


@needs_bwrap
async def test_an_approved_command_cannot_reach_a_loopback_server(
    make_runtime: Make, project: Path, loopback: tuple[int, list[bytes]]
) -> None:
    port, got = loopback
    text = await run_approved(make_runtime, project, CONNECT.format(port=port))
    assert "connected" not in text.replace("not connected", "")
    assert "[exit code: 0]" not in text
    assert got == []


async def test_full_access_reaches_the_same_server(
    make_runtime: Make, project: Path, loopback: tuple[int, list[bytes]]
) -> None:
    port, _ = loopback
    text = await run_approved(
        make_runtime, project, CONNECT.format(port=port), preset="full-access"
    )
    assert "connected" in text  # the control: this server is reachable when allowed


def marked_processes(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def detached(seconds: str) -> str:
    """A command that starts a ``setsid`` child and returns only once the child has its session."""
    return (
        f"setsid sh -c 'echo $$ > child.pid; exec sleep {seconds}' > /dev/null 2>&1 & "
        "while [ ! -s child.pid ]; do :; done; echo started"
    )


@needs_bwrap
async def test_a_setsid_background_child_is_gone_when_the_call_returns(
    make_runtime: Make, project: Path
) -> None:
    seconds = f"{7000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**9}"
    text = await run_approved(make_runtime, project, detached(seconds))
    assert "started" in text
    assert marked_processes(f"sleep\0{seconds}") == []


async def test_the_same_child_outlives_an_unsandboxed_call(
    make_runtime: Make, project: Path
) -> None:
    seconds = f"{8000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**9}"
    await run_approved(
        make_runtime,
        project,
        detached(seconds),
        preset="full-access",
    )
    survivors = marked_processes(f"sleep\0{seconds}")
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert survivors, "the control: a setsid child escapes the process group without a sandbox"


# -- the setting and what the model is told --------------------------------------------------


def test_an_unknown_sandbox_setting_is_refused() -> None:
    with pytest.raises(ags.UsageError, match=r"Config\.sandbox"):
        ags.Config(sandbox="docker")


def test_bwrap_required_but_missing_is_an_error_when_the_runtime_is_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, project: Path
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ags.UsageError, match="bubblewrap"):
        ags.Runtime(
            model=ags.ScriptedModel([]),
            store=ags.MemoryStore(),
            project_dir=project,
            config=ags.Config(sandbox="bwrap"),
        )
    auto = ags.Runtime(
        model=ags.ScriptedModel([]),
        store=ags.MemoryStore(),
        project_dir=project,
        config=ags.Config(sandbox="auto"),
    )
    assert auto.config.sandbox == "auto"


async def permissions_text(make_runtime: Make, project: Path, preset: str, sandbox: str) -> str:
    runtime = make_runtime(
        project_dir=project,
        tools=ags.builtin_tools(),
        config=ags.Config(retry_base_delay=0, permission_preset=preset, sandbox=sandbox),
    )
    session = await runtime.create_session()
    request = await session.preview_request("hi")
    return dict(request.system)["core.permissions"]


@needs_bwrap
async def test_the_permissions_text_says_whether_commands_are_sandboxed(
    make_runtime: Make, project: Path
) -> None:
    sandboxed = await permissions_text(make_runtime, project, "workspace-write", "auto")
    assert "Commands run in a sandbox" in sandboxed and "no network access" in sandboxed
    free = await permissions_text(make_runtime, project, "full-access", "auto")
    assert "Commands run without a sandbox" in free
    plain = await permissions_text(make_runtime, project, "workspace-write", "none")
    assert "not sandboxed here" in plain
    closed = await permissions_text(make_runtime, project, "read-only", "auto")
    assert "Commands" not in closed
