"""A ``--skills-dir`` skill lives outside the project; once loaded (or selected), its own folder is
readable — read only — under every preset, so its SKILL.md can point at bundled files. Nothing else
outside the project becomes readable, and nothing there becomes writable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import agentsession as ags

from ..conftest import MakeRuntime
from ..scenario import make_project, tool_results
from .test_sandbox_run_command import needs_bwrap

Make = MakeRuntime
BUNDLED = "print('bundled helper')\n"


@pytest.fixture(autouse=True)
def _no_global_instructions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "my-skills"
    folder = root / "helper"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: helper\ndescription: Helps. Read scripts/run.py first.\n---\n"
        "Read scripts/run.py in this skill's folder.\n"
    )
    (folder / "scripts" / "run.py").write_text(BUNDLED)
    other = root / "other"
    other.mkdir()
    (other / "SKILL.md").write_text("---\nname: other\ndescription: Unused.\n---\nNothing.\n")
    (other / "notes.txt").write_text("not loaded\n")
    (tmp_path / "secret.txt").write_text("SECRET\n")
    return root


def read(path: Path | str) -> ags.ToolCall:
    return ags.ToolCall("read_file", {"path": str(path)})


async def results(
    make_runtime: Make,
    project: Path,
    skills: Path,
    preset: str,
    replies: list[Any],
    select: tuple[str, ...] = (),
) -> list[str]:
    model = ags.ScriptedModel(replies)
    runtime = make_runtime(
        model=model,
        project_dir=project,
        tools=ags.builtin_tools(),
        skills_dirs=[skills],
        config=ags.Config(retry_base_delay=0, permission_preset=preset),
    )
    session = await runtime.create_session()
    result = await session.prompt("go", skills=list(select))
    assert result.stop_reason == "end_turn"
    return [  # the last request carries every result of the turn, in order
        str(message.content)
        for message in tool_results(model.requests[-1])
        if "contextChanged" not in str(message.content)
    ]


@pytest.mark.parametrize("preset", ["read-only", "workspace-write", "full-access"])
async def test_a_loaded_skills_bundled_files_are_readable_under_every_preset(
    make_runtime: Make, tmp_path: Path, skills: Path, preset: str
) -> None:
    project = make_project(tmp_path)
    script = skills / "helper" / "scripts" / "run.py"
    replies: list[Any] = [
        [ags.ToolCall("load_skill", {"name": "helper"})],
        [read(script)],
        [ags.ToolCall("list_files", {"path": str(skills / "helper"), "recursive": True})],
        "done",
    ]
    texts = await results(make_runtime, project, skills, preset, replies)
    assert any(BUNDLED in text for text in texts), texts
    assert any("scripts/run.py" in text for text in texts), texts


@pytest.mark.parametrize("preset", ["read-only", "workspace-write"])
async def test_nothing_else_outside_becomes_readable_and_the_folder_stays_read_only(
    make_runtime: Make, tmp_path: Path, skills: Path, preset: str
) -> None:
    project = make_project(tmp_path)
    script = skills / "helper" / "scripts" / "run.py"
    replies: list[Any] = [
        [read(script)],  # before the skill is loaded: outside the project
        [ags.ToolCall("load_skill", {"name": "helper"})],
        [read(skills / "other" / "notes.txt")],  # another skill's folder, not loaded
        [read(tmp_path / "secret.txt")],  # beside the skills folder
        [read(skills / "helper" / ".." / ".." / "secret.txt")],  # out of it by ..
        [ags.ToolCall("write_file", {"path": str(script), "content": "changed"})],
        "done",
    ]
    texts = await results(make_runtime, project, skills, preset, replies)
    assert len(texts) == 5, [t[:60] for t in texts]
    for text in texts:
        assert "Permission denied" in text, text
    assert "SECRET" not in "".join(texts)
    assert script.read_text() == BUNDLED


async def test_an_explicitly_selected_skills_folder_is_readable(
    make_runtime: Make, tmp_path: Path, skills: Path
) -> None:
    project = make_project(tmp_path)
    script = skills / "helper" / "scripts" / "run.py"
    texts = await results(
        make_runtime,
        project,
        skills,
        "workspace-write",
        [[read(script)], "done"],
        ("helper",),
    )
    assert texts == [BUNDLED]


async def test_a_symlink_inside_the_skill_folder_does_not_lead_elsewhere(
    make_runtime: Make, tmp_path: Path, skills: Path
) -> None:
    project = make_project(tmp_path)
    link = skills / "helper" / "scripts" / "leak.txt"
    link.symlink_to(tmp_path / "secret.txt")
    replies: list[Any] = [[ags.ToolCall("load_skill", {"name": "helper"})], [read(link)], "done"]
    texts = await results(make_runtime, project, skills, "workspace-write", replies)
    assert len(texts) == 1 and "Permission denied" in texts[0]


@needs_bwrap
async def test_a_sandboxed_command_reads_a_loaded_skills_files_but_cannot_change_them(
    make_runtime: Make, tmp_path: Path, skills: Path
) -> None:
    project = make_project(tmp_path)
    script = skills / "helper" / "scripts" / "run.py"
    command = f"cat {script}; echo changed > {script}; cat {tmp_path / 'secret.txt'}"
    model = ags.ScriptedModel(
        [
            [ags.ToolCall("load_skill", {"name": "helper"})],
            [ags.ToolCall("run_command", {"command": command})],
            "done",
        ]
    )
    runtime = make_runtime(
        model=model, project_dir=project, tools=ags.builtin_tools(), skills_dirs=[skills]
    )
    session = await runtime.create_session()
    paused = await session.prompt("go")
    await session.approve(paused.approvals[0].call_id)
    assert (await session.retry()).text == "done"
    output = str(tool_results(model.requests[-1])[-1].content)
    assert BUNDLED in output  # under the private /tmp, yet visible: bound read-only
    assert "Read-only file system" in output
    assert "SECRET" not in output  # beside it, under /tmp: hidden by the private /tmp
    assert script.read_text() == BUNDLED


async def test_a_log_naming_a_loaded_skill_grants_nothing_without_the_skill(
    make_runtime: Make, tmp_path: Path, skills: Path
) -> None:
    project = make_project(tmp_path)
    script = skills / "helper" / "scripts" / "run.py"
    loading = make_runtime(
        model=ags.ScriptedModel([[ags.ToolCall("load_skill", {"name": "helper"})], "loaded"]),
        project_dir=project,
        tools=ags.builtin_tools(),
        skills_dirs=[skills],
    )
    session = await loading.create_session()
    await session.prompt("load it")
    exported = tmp_path / "session.jsonl"
    await session.export(exported)

    model = ags.ScriptedModel([[read(script)], "done"])
    importing = make_runtime(
        model=model, project_dir=project, tools=ags.builtin_tools(), store=ags.MemoryStore()
    )
    imported = await importing.import_session(exported)
    await imported.prompt("read the skill's script")
    result = str(tool_results(model.requests[-1])[-1].content)  # the read, the last call
    assert "Permission denied" in result
    assert BUNDLED not in result
