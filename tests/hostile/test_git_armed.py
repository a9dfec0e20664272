"""Git cannot be armed by writing files.

Before this change three ways turned a write under ``workspace-write`` into code that git runs
later, outside any sandbox: an embedded bare repository (``tools/HEAD`` + ``tools/config`` with
``core.fsmonitor`` and ``core.worktree=..``) written without asking; a hook rewritten in the
folder ``core.hooksPath`` names (``.githooks/``, ``.husky/``); ``.git/config`` changed by an
approved command inside the sandbox. Now a folder is a git directory by its content and protected
like ``.git/``, the hooks folder is protected, and the sandbox mounts ``.git/``, ``.mcp.json`` and
``.agentsession/`` read-only unless the user approves that call to change them. Each attack gets
through where the user approves it: the control that shows the test can fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.permissions import FULL_ACCESS, WORKSPACE_WRITE, decide
from agentsession.tools.builtin import write_file

from ..scenario import make_project
from .commands import needs_bwrap, run_approved

Make = Callable[..., ags.Runtime]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=folder, capture_output=True, text=True, timeout=60, check=False
    )


def bare_repository(marker: Path) -> dict[str, str]:
    """The files of an embedded bare repository whose fsmonitor touches ``marker``."""
    return {
        "tools/objects/.keep": "",
        "tools/refs/.keep": "",
        "tools/config": (
            f'[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch {marker}; false"\n'
        ),
        "tools/HEAD": "ref: refs/heads/main\n",
    }


ORDERS = [
    ["tools/HEAD", "tools/config", "tools/objects/.keep", "tools/refs/.keep"],
    ["tools/objects/.keep", "tools/refs/.keep", "tools/config", "tools/HEAD"],
    ["tools/config", "tools/HEAD", "tools/refs/.keep", "tools/objects/.keep"],
]


@pytest.mark.parametrize("order", ORDERS)
def test_an_embedded_bare_repository_cannot_be_completed_without_an_approval_naming_it(
    project: Path, order: Sequence[str]
) -> None:
    files = bare_repository(project / "marker")
    asked = []
    for path in order:
        decision = decide(WORKSPACE_WRITE, write_file, {"path": path, "content": ""}, project)
        if decision.kind == "ask":
            asked.append(path)
            assert "tools/ is protected: it is a git directory" in decision.reason
            continue
        target = project / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(files[path])
    assert asked, "some write must complete the repository"
    full = decide(FULL_ACCESS, write_file, {"path": asked[0], "content": ""}, project)
    assert full.kind == "ask"  # under every preset, as .git/


async def write_all(
    make_runtime: Make, project: Path, files: dict[str, str], approve: bool
) -> None:
    """A session whose model writes ``files`` in one step; every question answered ``approve``."""
    calls = [ags.ToolCall("write_file", {"path": p, "content": c}) for p, c in files.items()]
    runtime = make_runtime(
        model=ags.ScriptedModel([calls, "done"]), project_dir=project, tools=ags.builtin_tools()
    )
    session = await runtime.create_session()
    result = await session.prompt("set up the tools folder")
    while result.stop_reason == "approval_required":
        for request in result.approvals:
            if approve:
                await session.approve(request.call_id)
            else:
                await session.deny(request.call_id)
        result = await session.retry()
    assert result.text == "done"


@needs_git
@pytest.mark.parametrize("approve", [False, True], ids=["holds", "control-approved"])
async def test_the_embedded_repository_attack(
    make_runtime: Make, project: Path, tmp_path: Path, approve: bool
) -> None:
    marker = tmp_path / f"fsmonitor-ran-{uuid.uuid4().hex}"
    await write_all(make_runtime, project, bare_repository(marker), approve)
    git(project, "--git-dir=tools", "status")
    assert marker.exists() is approve


def linked_repository(marker: Path) -> dict[str, str]:
    """A git directory without ``config``, ``objects`` or ``refs`` of its own: ``tools/HEAD`` and
    ``tools/commondir`` naming ``shared/``, whose config (no ``HEAD`` there) runs ``marker``.

    Git takes ``objects/``, ``refs/`` and the config from the folder ``commondir`` names, as in a
    linked worktree's git directory; ``git branch`` in ``tools/`` on a terminal then runs the
    pager of ``shared/config``, and with a work tree its ``core.fsmonitor``.
    """
    run = f'"touch {marker}; false"'
    return {
        "shared/config": f"[core]\n\tpager = {run}\n\tfsmonitor = {run}\n",
        "shared/objects/.keep": "",
        "shared/refs/.keep": "",
        "tools/HEAD": "ref: refs/heads/main\n",
        "tools/commondir": "../shared\n",
    }


@pytest.mark.parametrize("last", ["tools/HEAD", "tools/commondir"])
def test_a_git_directory_completed_by_commondir_asks(project: Path, last: str) -> None:
    files = linked_repository(project / "marker")
    for path in [p for p in files if p != last]:
        decided = decide(WORKSPACE_WRITE, write_file, {"path": path, "content": ""}, project)
        assert decided.kind == "allow"  # shared/ has no HEAD: not a git directory itself
        target = project / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(files[path])
    decision = decide(WORKSPACE_WRITE, write_file, {"path": last, "content": ""}, project)
    assert decision.kind == "ask"
    assert "tools/ is protected: it is a git directory" in decision.reason


@needs_git
@pytest.mark.parametrize("approve", [False, True], ids=["holds", "control-approved"])
async def test_the_linked_git_directory_attack(
    make_runtime: Make, project: Path, tmp_path: Path, approve: bool
) -> None:
    marker = tmp_path / f"fsmonitor-ran-{uuid.uuid4().hex}"
    await write_all(make_runtime, project, linked_repository(marker), approve)
    git(project / "tools", f"--work-tree={project}", "status")
    assert marker.exists() is approve


def hooked(project: Path, hooks_path: str, hook: str) -> Path:
    """A repository whose ``core.hooksPath`` is ``hooks_path`` with an executable ``hook``."""
    shutil.rmtree(project / ".git")
    git(project, "init", "-q")
    git(project, "config", "core.hooksPath", hooks_path)
    git(project, "config", "user.email", "t@example.invalid")
    git(project, "config", "user.name", "t")
    script = project / hook
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    return script


@needs_git
@pytest.mark.parametrize(
    ("hooks_path", "hook"),
    [(".githooks", ".githooks/pre-commit"), (".husky/_", ".husky/pre-commit")],
)
def test_the_hooks_folder_is_protected(project: Path, hooks_path: str, hook: str) -> None:
    hooked(project, hooks_path, hook)
    decision = decide(WORKSPACE_WRITE, write_file, {"path": hook, "content": "x"}, project)
    assert decision.kind == "ask"
    assert "core.hooksPath" in decision.reason
    plain = decide(WORKSPACE_WRITE, write_file, {"path": "src/x.py", "content": "x"}, project)
    assert plain.kind == "allow"


@needs_git
@pytest.mark.parametrize("approve", [False, True], ids=["holds", "control-approved"])
async def test_the_hooks_path_attack(
    make_runtime: Make, project: Path, tmp_path: Path, approve: bool
) -> None:
    marker = tmp_path / f"hook-ran-{uuid.uuid4().hex}"
    hooked(project, ".githooks", ".githooks/pre-commit")
    payload = {".githooks/pre-commit": f"#!/bin/sh\ntouch {marker}\n"}
    await write_all(make_runtime, project, payload, approve)
    (project / "a.txt").write_text("a")
    git(project, "add", "a.txt")
    git(project, "commit", "-qm", "x")
    assert marker.exists() is approve


@pytest.mark.parametrize(
    "path",
    [".GIT/hooks/pre-commit", ".Git/config", ".MCP.JSON", ".AgentSession/x", ".g\u200cit/config"],
)
def test_protected_names_are_compared_as_a_case_insensitive_file_system_would(
    project: Path, path: str
) -> None:
    decision = decide(WORKSPACE_WRITE, write_file, {"path": path, "content": "x"}, project)
    assert decision.kind == "ask", path
    assert "protected" in decision.reason


def test_an_oserror_resolving_a_path_is_a_refusal(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swapped(path: object, *args: object, **kwargs: object) -> str:
        raise OSError(40, "Too many levels of symbolic links")

    monkeypatch.setattr(os.path, "realpath", swapped)
    decision = decide(WORKSPACE_WRITE, write_file, {"path": "a/b.txt", "content": "x"}, project)
    monkeypatch.undo()
    assert decision.kind == "deny"
    assert "could not be resolved" in decision.reason


# -- inside the sandbox ------------------------------------------------------------------------

SET_FSMONITOR = (
    "git config core.fsmonitor 'touch /tmp/owned'; echo '{}' > .mcp.json; echo status=$?"
)


@needs_git
@needs_bwrap
async def test_git_config_and_mcp_json_are_read_only_inside_the_sandbox(
    make_runtime: Make, project: Path
) -> None:
    git(project, "init", "-q")
    (project / ".mcp.json").write_text('{"mcpServers": {}}')
    before = (project / ".git" / "config").read_text()
    ran = await run_approved(make_runtime, project, SET_FSMONITOR)
    assert "Read-only file system" in ran.text or "could not lock" in ran.text
    assert (project / ".git" / "config").read_text() == before
    assert (project / ".mcp.json").read_text() == '{"mcpServers": {}}'
    (question,) = ran.questions
    assert ".git" not in question  # an ordinary approval: nothing protected was asked for


@needs_git
@needs_bwrap
async def test_control_a_command_approved_to_write_them_can(
    make_runtime: Make, project: Path
) -> None:
    git(project, "init", "-q")
    ran = await run_approved(
        make_runtime, project, SET_FSMONITOR, arguments={"write_protected": True}
    )
    (question,) = ran.questions
    assert "writable" in question and ".git" in question
    assert "fsmonitor" in (project / ".git" / "config").read_text()


@needs_git
async def test_control_full_access_changes_them_unasked(make_runtime: Make, project: Path) -> None:
    git(project, "init", "-q")
    ran = await run_approved(make_runtime, project, SET_FSMONITOR, preset="full-access")
    assert ran.questions == ()
    assert "fsmonitor" in (project / ".git" / "config").read_text()


def test_a_command_prefix_approved_always_on_the_command_line_never_covers_write_protected() -> (
    None
):
    from agentsession.cli.approvals import CommandRules

    rules = CommandRules(["git commit"])
    plain = ags.ApprovalRequest("c1", "run_command", {"command": "git commit -m x"}, "asks")
    assert rules.match(plain) == "git commit"
    arguments = {"command": "git commit -m x", "write_protected": True}
    widened = ags.ApprovalRequest("c2", "run_command", arguments, "asks")
    assert rules.match(widened) is None


@needs_git
@needs_bwrap
async def test_git_commit_in_the_sandbox_needs_the_protected_paths_writable(
    make_runtime: Make, project: Path
) -> None:
    hooked(project, ".githooks", ".githooks/pre-commit")
    (project / "a.txt").write_text("a")
    commit = "git add a.txt && git commit -qm sandboxed && echo committed"
    refused = await run_approved(make_runtime, project, commit)
    assert "committed" not in refused.text
    assert git(project, "log", "--oneline").returncode != 0  # no commit yet
    ran = await run_approved(make_runtime, project, commit, arguments={"write_protected": True})
    (question,) = ran.questions
    assert ".git" in question and ".githooks" in question
    assert "committed" in ran.text
    assert "sandboxed" in git(project, "log", "--oneline").stdout


REPLACE_HOOKS = (
    "mv tools moved; mkdir -p tools/hooks && printf '#!/bin/sh\\ntouch {marker}\\n' >"
    " tools/hooks/pre-commit && chmod +x tools/hooks/pre-commit && echo replaced"
)


@needs_git
@pytest.mark.parametrize(
    "preset", [pytest.param("workspace-write", marks=needs_bwrap), "full-access"]
)
async def test_a_nested_hooks_folder_cannot_be_replaced_by_moving_its_parent(
    make_runtime: Make, project: Path, tmp_path: Path, preset: str
) -> None:
    # The read-only mount over tools/hooks moved along with tools/ when tools/ was renamed, and
    # a fresh, writable tools/hooks took its place: the next git commit ran its hook.
    hooked(project, "tools/hooks", "tools/hooks/pre-commit")
    marker = tmp_path / f"hook-ran-{uuid.uuid4().hex}"
    ran = await run_approved(make_runtime, project, REPLACE_HOOKS.format(marker=marker), preset)
    (project / "a.txt").write_text("a")
    git(project, "add", "a.txt")
    git(project, "commit", "-qm", "after")
    if preset == "full-access":  # the control: unsandboxed, the same command arms the hook
        assert "replaced" in ran.text
        assert marker.exists()
    else:
        assert "replaced" not in ran.text
        assert not marker.exists()
        assert (project / "tools" / "hooks" / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"


def including(project: Path) -> None:
    """A repository whose config includes a file of the work tree, as some projects set up."""
    shutil.rmtree(project / ".git")
    git(project, "init", "-q")
    git(project, "config", "include.path", "../.gitconfig.project")


@needs_git
@pytest.mark.parametrize("approve", [False, True], ids=["holds", "control-approved"])
async def test_a_config_file_the_repository_includes_is_protected(
    make_runtime: Make, project: Path, tmp_path: Path, approve: bool
) -> None:
    # Before, `.gitconfig.project` was an ordinary file: written unasked with core.fsmonitor, the
    # next git status ran it.
    including(project)
    decision = decide(WORKSPACE_WRITE, write_file, {"path": ".gitconfig.project"}, project)
    assert decision.kind == "ask" and "include" in decision.reason
    marker = tmp_path / f"fsmonitor-ran-{uuid.uuid4().hex}"
    armed = f'[core]\n\tfsmonitor = "touch {marker}; false"\n'
    await write_all(make_runtime, project, {".gitconfig.project": armed}, approve)
    git(project, "status")
    assert marker.exists() is approve


@needs_git
@needs_bwrap
async def test_a_config_file_the_repository_includes_is_read_only_in_the_sandbox(
    make_runtime: Make, project: Path
) -> None:
    including(project)
    (project / ".gitconfig.project").write_text("[user]\n\tname = t\n")
    ran = await run_approved(
        make_runtime, project, "echo '[core] fsmonitor = x' >> .gitconfig.project; echo done"
    )
    assert "Read-only file system" in ran.text
    assert (project / ".gitconfig.project").read_text() == "[user]\n\tname = t\n"
