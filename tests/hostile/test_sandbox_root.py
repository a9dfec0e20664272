"""The sandbox holds as root: always a user namespace and no capabilities.

bubblewrap used to be tried first without ``--unshare-user``; as root that works, and the command
kept every capability — it remounted ``/`` writable, read the agent's ``/proc/PID/environ`` and
``nsenter``-ed its namespaces. Now a sandboxed command has no capability, cannot remount ``/``,
cannot see another process's environment or enter its namespaces; the same commands under
``full-access`` (unsandboxed, as the user allowed) are the controls. Where no user namespace can
be made, nothing is called a sandbox: ``sandbox="bwrap"`` fails when the runtime is made, and
``"auto"`` asks before each command, saying it runs UNSANDBOXED.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentsession as ags

from ..scenario import make_project
from .commands import Make, needs_bwrap, run_approved

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="the control needs root (CI runs as root)")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def agent() -> Iterator[tuple[int, str]]:
    """A process standing for the agent: its environment holds a key (pid, key)."""
    key = f"sk-agent-{uuid.uuid4().hex}"
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": key},
    )
    try:
        yield process.pid, key
    finally:
        process.kill()
        process.wait()


CAPABILITIES = "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status"


def effective(text: str) -> int:
    (line,) = [line for line in text.splitlines() if line.startswith("CapEff:")]
    return int(line.split()[1], 16)


@needs_bwrap
async def test_a_sandboxed_command_has_no_capability(make_runtime: Make, project: Path) -> None:
    ran = await run_approved(make_runtime, project, CAPABILITIES)
    for line in ran.text.splitlines():
        if line.startswith("Cap"):
            assert int(line.split()[1], 16) == 0, line


@AS_ROOT
async def test_control_as_root_an_unsandboxed_command_keeps_its_capabilities(
    make_runtime: Make, project: Path
) -> None:
    ran = await run_approved(make_runtime, project, CAPABILITIES, preset="full-access")
    assert effective(ran.text) != 0


@needs_bwrap
async def test_a_sandboxed_command_cannot_remount_the_root_writable(
    make_runtime: Make, project: Path
) -> None:
    marker = Path("/") / f"agentsession-remount-{uuid.uuid4().hex}"
    ran = await run_approved(
        make_runtime, project, f"mount -o remount,rw / && touch {marker}; echo status=$?"
    )
    assert not marker.exists()
    assert "status=0" not in ran.text


@needs_bwrap
async def test_a_sandboxed_command_cannot_read_the_agents_environment(
    make_runtime: Make, project: Path, agent: tuple[int, str]
) -> None:
    pid, key = agent
    ran = await run_approved(
        make_runtime,
        project,
        f"cat /proc/{pid}/environ; cat /proc/[0-9]*/environ; ls /proc | grep -c '^[0-9]'",
    )
    assert key not in ran.text


@AS_ROOT
async def test_control_unsandboxed_the_agents_environment_is_readable(
    make_runtime: Make, project: Path, agent: tuple[int, str]
) -> None:
    pid, key = agent
    ran = await run_approved(
        make_runtime, project, f"cat /proc/{pid}/environ", preset="full-access"
    )
    assert key in ran.text


NSENTER = pytest.mark.skipif(shutil.which("nsenter") is None, reason="nsenter is not installed")


@needs_bwrap
@NSENTER
async def test_a_sandboxed_command_cannot_enter_the_agents_namespaces(
    make_runtime: Make, project: Path, agent: tuple[int, str]
) -> None:
    pid, _ = agent
    ran = await run_approved(
        make_runtime, project, f"nsenter -t {pid} -m -n true && echo entered; echo status=$?"
    )
    assert "entered" not in ran.text


@AS_ROOT
@NSENTER
async def test_control_unsandboxed_root_enters_them(
    make_runtime: Make, project: Path, agent: tuple[int, str]
) -> None:
    pid, _ = agent
    ran = await run_approved(
        make_runtime, project, f"nsenter -t {pid} -m -n true && echo entered", preset="full-access"
    )
    assert "entered" in ran.text


# -- where no user namespace can be made ------------------------------------------------------


def no_user_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``bwrap`` first on ``PATH`` that refuses ``--unshare-user``, as in a container that
    forbids user namespaces (as root it still runs without one: the old fallback)."""
    folder = tmp_path / f"bin-{uuid.uuid4().hex}"
    folder.mkdir()
    fake = folder / "bwrap"
    real = shutil.which("bwrap") or "/bin/false"
    fake.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = --unshare-user ] && '
        '{ echo "bwrap: No permissions to create new namespace" >&2; exit 1; }; done\n'
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return fake


@pytest.fixture(name="no_user_namespace")
def _no_user_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return no_user_namespace(tmp_path, monkeypatch)


def test_sandbox_bwrap_without_a_user_namespace_fails_when_the_runtime_is_made(
    no_user_namespace: Path, project: Path
) -> None:
    with pytest.raises(ags.UsageError, match="user namespace") as raised:
        ags.Runtime(
            model=ags.ScriptedModel([]),
            store=ags.MemoryStore(),
            project_dir=project,
            config=ags.Config(sandbox="bwrap"),
        )
    # It is installed: the advice is about namespaces, not installing it.
    assert "Allow user namespaces" in str(raised.value)
    assert "apt-get install" not in str(raised.value)


async def test_auto_without_a_user_namespace_says_so_and_asks_before_each_command(
    no_user_namespace: Path, make_runtime: Make, project: Path
) -> None:
    # A preset that would run commands unasked in a sandbox: without one, each still asks.
    quick = {"read": "allow", "write_project": "allow", "execute": "allow"}
    ran = await run_approved(make_runtime, project, "echo ran", "quick", presets={"quick": quick})
    (question,) = ran.questions
    assert "UNSANDBOXED" in question
    assert "ran" in ran.text
    runtime = make_runtime(
        project_dir=project,
        tools=ags.builtin_tools(),
        config=ags.Config(retry_base_delay=0, permission_presets={"quick": quick}),
    )
    session = await runtime.create_session()
    text = dict((await session.preview_request("hi")).system)["core.permissions"]
    assert "not sandboxed here" in text and "UNSANDBOXED" in text
    assert "Commands run in a sandbox" not in text


async def test_an_always_answering_the_unsandboxed_question_covers_later_commands(
    no_user_namespace: Path, make_runtime: Make, project: Path
) -> None:
    calls = [[ags.ToolCall("run_command", {"command": f"echo {n} >> ran.txt"})] for n in (1, 2)]
    model = ags.ScriptedModel([calls[0], "ok", calls[1], "ok"])
    runtime = make_runtime(model=model, project_dir=project, tools=ags.builtin_tools())
    session = await runtime.create_session()
    first = await session.prompt("one")
    (asked,) = first.approvals
    assert "UNSANDBOXED" in asked.reason
    await session.approve(asked.call_id, always=True)  # answered knowing it runs unsandboxed
    assert (await session.retry()).text == "ok"
    assert (await session.prompt("two")).text == "ok"
    assert (project / "ran.txt").read_text() == "1\n2\n"


@needs_bwrap
async def test_an_always_given_where_commands_were_sandboxed_does_not_cover_them_unsandboxed(
    make_runtime: Make, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = [[ags.ToolCall("run_command", {"command": f"echo {n} >> ran.txt"})] for n in (1, 2)]
    runtime = make_runtime(
        model=ags.ScriptedModel([calls[0], "ok"]), project_dir=project, tools=ags.builtin_tools()
    )
    session = await runtime.create_session()
    (asked,) = (await session.prompt("one")).approvals
    assert "UNSANDBOXED" not in asked.reason
    await session.approve(asked.call_id, always=True)
    assert (await session.retry()).text == "ok"
    # The same session reopened where no user namespace can be made.
    no_user_namespace(tmp_path, monkeypatch)
    elsewhere = make_runtime(
        model=ags.ScriptedModel([calls[1], "ok"]), project_dir=project, tools=ags.builtin_tools()
    )
    reopened = await elsewhere.open_session(session.id)
    second = await reopened.prompt("two")
    (again,) = second.approvals
    assert "UNSANDBOXED" in again.reason
    assert (project / "ran.txt").read_text() == "1\n"
