"""The real ``mcp-server-git`` on a temporary repository: its annotations meet the presets."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.providers.scripted import Reply

from .wire import assert_every_format_declares, installed

pytest.importorskip("mcp_server_git")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("one\n", encoding="utf-8")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    (path / "a.txt").write_text("two\n", encoding="utf-8")
    return path


def stage(repo: Path, name: str) -> None:
    subprocess.run(["git", "-C", str(repo), "add", name], check=True)


def staged(repo: Path) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(repo), "diff", "--cached", "--name-only"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def git_runtime(
    make_runtime: Callable[..., ags.Runtime], repo: Path, replies: list[Reply], preset: str
) -> tuple[ags.Runtime, ags.ScriptedModel]:
    model = ags.ScriptedModel(replies)
    server = ags.MCPServer.stdio("git", installed("mcp-server-git"), ["--repository", str(repo)])
    config = ags.Config(retry_base_delay=0, permission_preset=preset)
    return make_runtime(model=model, mcp_servers=[server], config=config), model


async def test_read_tools_run_and_write_tools_are_refused_under_read_only(
    make_runtime: Callable[..., ags.Runtime], repo: Path
) -> None:
    calls = [
        ags.ToolCall("mcp__git__git_status", {"repo_path": str(repo)}),
        ags.ToolCall("mcp__git__git_add", {"repo_path": str(repo), "files": ["a.txt"]}),
    ]
    runtime, model = git_runtime(make_runtime, repo, [calls, "done"], "read-only")
    session = await runtime.create_session()

    await session.prompt("What is the state of the repository?")

    for spec in model.requests[0].tools:  # every schema passes every wire format as it is
        assert_every_format_declares(model.requests[0], spec)

    status, add = model.requests[1].messages[-2:]
    assert isinstance(status, ags.ToolResultMessage) and isinstance(add, ags.ToolResultMessage)
    assert not status.is_error and "a.txt" in status.content
    assert add.is_error
    assert "Permission denied by preset 'read-only'" in add.content
    assert "mcp__git__git_add writes files" in add.content
    assert staged(repo) == []  # nothing reached the repository


async def test_a_destructive_tool_asks_for_approval_under_workspace_write(
    make_runtime: Callable[..., ags.Runtime], repo: Path
) -> None:
    calls = [
        ags.ToolCall("mcp__git__git_add", {"repo_path": str(repo), "files": ["a.txt"]}),
        ags.ToolCall("mcp__git__git_reset", {"repo_path": str(repo)}),
    ]
    runtime, _ = git_runtime(make_runtime, repo, [calls, "reset done"], "workspace-write")
    session = await runtime.create_session()

    paused = await session.prompt("Stage a.txt, then unstage everything.")

    assert paused.stop_reason == "approval_required"
    (approval,) = paused.approvals
    assert approval.name == "mcp__git__git_reset"
    assert "destructive" in approval.reason
    # git_add (not destructive, a write inside the project) ran; git_reset waits
    assert staged(repo) == ["a.txt"]


async def test_an_approved_destructive_tool_runs_on_resume(
    make_runtime: Callable[..., ags.Runtime], repo: Path
) -> None:
    calls = [ags.ToolCall("mcp__git__git_reset", {"repo_path": str(repo)})]
    runtime, model = git_runtime(make_runtime, repo, [calls, "reset done"], "workspace-write")
    session = await runtime.create_session()
    stage(repo, "a.txt")
    paused = await session.prompt("Unstage everything.")
    (approval,) = paused.approvals

    await session.approve(approval.call_id)
    finished = await session.retry()

    assert finished.text == "reset done"
    reset = model.requests[-1].messages[-1]
    assert isinstance(reset, ags.ToolResultMessage) and not reset.is_error, reset
    assert staged(repo) == []


async def test_a_waiting_call_resumes_in_a_runtime_whose_servers_are_not_started_yet(
    make_runtime: Callable[..., ags.Runtime], repo: Path
) -> None:
    calls = [ags.ToolCall("mcp__git__git_reset", {"repo_path": str(repo)})]
    first, _ = git_runtime(make_runtime, repo, [calls], "workspace-write")
    session = await first.create_session()
    stage(repo, "a.txt")
    (approval,) = (await session.prompt("Unstage everything.")).approvals
    await first.close()

    # A new runtime (as a new process would build it): its git server has not started yet.
    second, model = git_runtime(make_runtime, repo, ["reset after reopening"], "workspace-write")
    reopened = await second.open_session(session.id)
    await reopened.approve(approval.call_id)
    finished = await reopened.retry()
    assert finished.text == "reset after reopening"
    result = model.requests[-1].messages[-1]
    assert isinstance(result, ags.ToolResultMessage) and not result.is_error, result
    assert staged(repo) == []
