"""Protected paths: a model never changes .git/, .agentsession/, .mcp.json or the user's
agentsession folders through the built-in file tools without an approval of that very call —
under every preset, full-access included, and a standing "always" never covers them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.permissions import FULL_ACCESS, READ_ONLY, WORKSPACE_WRITE, decide
from agentsession.tools import ToolContext
from agentsession.tools.builtin import read_file, write_file

from ..conftest import MakeRuntime
from ..scenario import make_project, tool_results

Make = MakeRuntime

PROTECTED = [
    ".mcp.json",
    ".git/hooks/pre-commit",
    ".git/config",
    ".agentsession/settings.json",
    "sub/.mcp.json",
    "sub/.git/hooks/post-checkout",
]


@pytest.fixture(autouse=True)
def _user_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    return root


@pytest.mark.parametrize("path", PROTECTED)
@pytest.mark.parametrize("preset", [WORKSPACE_WRITE, FULL_ACCESS])
def test_a_write_to_a_protected_path_asks_under_every_preset_that_writes(
    project: Path, path: str, preset: ags.PermissionPreset
) -> None:
    decision = decide(preset, write_file, {"path": path, "content": "x"}, project)
    assert decision.kind == "ask"
    assert "protected" in decision.reason
    assert decision.protected == (str(project / path),)


def test_the_question_reads_as_a_sentence(project: Path) -> None:
    decision = decide(WORKSPACE_WRITE, write_file, {"path": ".mcp.json", "content": "x"}, project)
    assert decision.reason.startswith(
        "Approval needed for a protected path: write_file would change it — .mcp.json is"
        " protected: it can start programs"
    )


@pytest.mark.parametrize("path", PROTECTED)
def test_read_only_still_denies_and_reading_a_protected_file_needs_nothing(
    project: Path, path: str
) -> None:
    assert decide(READ_ONLY, write_file, {"path": path, "content": "x"}, project).kind == "deny"
    assert decide(FULL_ACCESS, read_file, {"path": path}, project).kind == "allow"


def test_ordinary_files_and_lookalike_names_stay_allowed(project: Path) -> None:
    for path in ["src/main.py", ".gitignore", ".github/workflows/ci.yml", "mcp.json", "x.git"]:
        decision = decide(FULL_ACCESS, write_file, {"path": path, "content": "x"}, project)
        assert decision.kind == "allow", path
        assert decision.protected == ()


def test_a_symlink_into_git_is_judged_by_where_it_leads(project: Path) -> None:
    (project / "innocent.txt").symlink_to(project / ".git" / "config")
    decision = decide(FULL_ACCESS, write_file, {"path": "innocent.txt", "content": "x"}, project)
    assert decision.kind == "ask"
    assert ".git/ is protected" in decision.reason


def test_the_users_agentsession_folders_are_protected_under_full_access(
    project: Path, tmp_path: Path
) -> None:
    for folder in ["xdg-config", "xdg-data"]:
        target = tmp_path / folder / "agentsession" / "trust.json"
        decision = decide(FULL_ACCESS, write_file, {"path": str(target), "content": "{}"}, project)
        assert decision.kind == "ask", folder
        assert "user's agentsession folder" in decision.reason


async def test_a_direct_call_without_an_approval_is_refused_and_changes_nothing(
    project: Path,
) -> None:
    context = ToolContext(project, allow_outside=True)
    for path in PROTECTED:
        outcome = await write_file.invoke({"path": path, "content": "evil"}, context=context)
        assert outcome.is_error, path
        assert "protected" in outcome.content and "approval" in outcome.content
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert not (project / ".mcp.json").exists()
    assert not (project / ".agentsession").exists()
    approved = ToolContext(project, approved_protected=frozenset({str(project / ".mcp.json")}))
    done = await write_file.invoke({"path": ".mcp.json", "content": "{}"}, context=approved)
    assert not done.is_error
    assert (project / ".mcp.json").read_text() == "{}"


def _write(path: str, content: str = "{}") -> list[ags.ToolCall]:
    return [ags.ToolCall("write_file", {"path": path, "content": content})]


async def _session(make_runtime: Make, project: Path, replies: list[Any]) -> ags.Session:
    runtime = make_runtime(
        model=ags.ScriptedModel(replies),
        project_dir=project,
        tools=ags.builtin_tools(),
        config=ags.Config(retry_base_delay=0, permission_preset="full-access"),
    )
    return await runtime.create_session()


async def test_full_access_pauses_for_each_protected_write_and_always_never_covers_one(
    make_runtime: Make, project: Path
) -> None:
    session = await _session(
        make_runtime,
        project,
        [_write(".mcp.json"), "wrote it", _write(".git/hooks/pre-commit", "#!/bin/sh\n"), "done"],
    )
    first = await session.prompt("configure mcp")
    assert first.stop_reason == "approval_required"
    (request,) = first.approvals
    assert ".mcp.json is protected" in request.reason
    assert not (project / ".mcp.json").exists()
    await session.approve(request.call_id, always=True)
    assert (await session.retry()).text == "wrote it"
    assert (project / ".mcp.json").read_text() == "{}"

    second = await session.prompt("add a hook")
    assert second.stop_reason == "approval_required", "an 'always' must not cover a protected path"
    (hook,) = second.approvals
    assert ".git/ is protected" in hook.reason
    await session.deny(hook.call_id)
    assert (await session.retry()).text == "done"
    assert not (project / ".git" / "hooks" / "pre-commit").exists()


async def test_an_always_for_ordinary_writes_does_not_reach_protected_ones(
    make_runtime: Make, project: Path
) -> None:
    runtime = make_runtime(
        model=ags.ScriptedModel([_write(".agentsession/x.json"), "ok"]),
        project_dir=project,
        tools=ags.builtin_tools(),
        config=ags.Config(
            retry_base_delay=0,
            permission_preset="careful",
            permission_presets={"careful": {"read": "allow", "write_project": "ask"}},
        ),
    )
    session = await runtime.create_session()
    ordinary = ags.ScriptedModel([_write("notes.txt"), "noted"])
    await session.switch_model(ordinary)
    paused = await session.prompt("take a note")
    await session.approve(paused.approvals[0].call_id, always=True)
    assert (await session.retry()).text == "noted"
    await session.switch_model(ags.ScriptedModel([_write(".agentsession/x.json"), "ok"]))
    again = await session.prompt("change settings")
    assert again.stop_reason == "approval_required"
    assert ".agentsession/ is protected" in again.approvals[0].reason
    assert not (project / ".agentsession").exists()


async def test_read_only_refuses_with_the_reason_the_model_reads(
    make_runtime: Make, project: Path
) -> None:
    model = ags.ScriptedModel([_write(".git/config", "[core]\nhooksPath=/tmp\n"), "ok"])
    runtime = make_runtime(
        model=model,
        project_dir=project,
        tools=ags.builtin_tools(),
        config=ags.Config(retry_base_delay=0, permission_preset="read-only"),
    )
    session = await runtime.create_session()
    await session.prompt("tweak git")
    (result,) = tool_results(model.requests[-1])
    assert "Permission denied" in str(result.content)
    assert (project / ".git" / "config").read_text() == "[core]\n"
