"""The instruction service on real folders: discovery, nested files, edits, removals."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentsession.config import Config
from agentsession.context.component import (
    ABSENT,
    ContextComponent,
    LoadResult,
    Rendered,
    Unavailable,
)
from agentsession.instructions import (
    GLOBAL_KEY,
    InstructionService,
    instruction_key,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def sample(component: ContextComponent) -> LoadResult:
    return asyncio.run(component.sample())


def rendered(component: ContextComponent) -> Rendered:
    result = sample(component)
    assert isinstance(result, Rendered), result
    return result


def by_key(service: InstructionService) -> dict[str, ContextComponent]:
    return {c.key: c for c in service.components()}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    return repo


def service(project: Path, home: Path, **kwargs: Any) -> InstructionService:
    return InstructionService(project, environ={}, home=home, **kwargs)


# -- discovery ------------------------------------------------------------------------------


def test_global_then_repository_root_down_to_project(
    tmp_path: Path, home: Path, repo: Path
) -> None:
    write(home / ".config/agentsession/AGENTS.md", "global rules")
    write(tmp_path / "AGENTS.md", "above the repository: never loaded")
    write(repo / "AGENTS.md", "root rules")
    write(repo / "app/CLAUDE.md", "app rules (claude name)")
    write(repo / "app/web/AGENTS.md", "web rules")
    write(repo / "app/web/deeper/AGENTS.md", "below the project: only on a read")
    write(repo / "other/AGENTS.md", "a sibling of the project: never loaded")

    svc = service(repo / "app/web", home)

    assert svc.repository_root == repo.resolve()
    assert [c.key for c in svc.components()] == [
        GLOBAL_KEY,
        "core.instructions:AGENTS.md",
        "core.instructions:app/CLAUDE.md",
        "core.instructions:app/web/AGENTS.md",
    ]
    texts = [rendered(c).baseline for c in svc.components()]
    for text, body in zip(
        texts, ["global rules", "root rules", "app rules (claude name)", "web rules"], strict=True
    ):
        assert body in text
    assert 'path="~/.config/agentsession/AGENTS.md"' in texts[0]
    assert 'path="app/CLAUDE.md"' in texts[2]
    assert svc.diagnostics == ()


def test_claude_md_is_only_a_fallback(home: Path, repo: Path) -> None:
    write(repo / "AGENTS.md", "agents")
    write(repo / "CLAUDE.md", "claude")
    write(repo / "sub/CLAUDE.md", "claude only")

    svc = service(repo / "sub", home)

    assert [c.key for c in svc.components()] == [
        "core.instructions:AGENTS.md",
        "core.instructions:sub/CLAUDE.md",
    ]
    assert "claude" not in rendered(svc.components()[0]).baseline


def test_real_git_repository_root(tmp_path: Path, home: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "checkout"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write(repo / "AGENTS.md", "root")
    write(repo / "src/pkg/AGENTS.md", "pkg")

    svc = service(repo / "src/pkg", home)

    assert svc.repository_root == repo.resolve()
    assert [c.key for c in svc.components()] == [
        "core.instructions:AGENTS.md",
        "core.instructions:src/pkg/AGENTS.md",
    ]


def test_without_repository_only_the_project_folder(tmp_path: Path, home: Path) -> None:
    if any(os.path.lexists(p / ".git") for p in tmp_path.parents):
        pytest.skip("the temporary folder lies inside a repository")
    write(tmp_path / "AGENTS.md", "parent of the project")
    project = tmp_path / "project"
    write(project / "AGENTS.md", "project")

    svc = service(project, home)

    assert svc.repository_root == project.resolve()
    assert [c.key for c in svc.components()] == ["core.instructions:AGENTS.md"]
    assert "project" in rendered(svc.components()[0]).baseline


def test_switch_off_project_files_keeps_the_global_file(home: Path, repo: Path) -> None:
    write(home / ".config/agentsession/AGENTS.md", "global")
    write(repo / "AGENTS.md", "root")
    write(repo / "pkg/AGENTS.md", "nested")

    svc = service(repo, home, config=Config(load_project_instructions=False))

    assert [c.key for c in svc.components()] == [GLOBAL_KEY]
    assert svc.note_read(repo / "pkg/file.py") == []
    assert svc.restore(["pkg/AGENTS.md"]) == []
    assert [c.key for c in svc.components()] == [GLOBAL_KEY]
    assert Config().load_project_instructions is True


def test_xdg_config_home_wins_and_a_relative_value_is_ignored(tmp_path: Path, home: Path) -> None:
    write(tmp_path / "xdg/agentsession/AGENTS.md", "from xdg")
    write(home / ".config/agentsession/AGENTS.md", "from home")
    project = tmp_path / "empty"
    project.mkdir()

    xdg = InstructionService(project, environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")}, home=home)
    relative = InstructionService(project, environ={"XDG_CONFIG_HOME": "xdg"}, home=home)

    assert "from xdg" in rendered(xdg.components()[0]).baseline
    assert "from home" in rendered(relative.components()[0]).baseline


def test_no_global_file_and_no_project_files(tmp_path: Path, home: Path, repo: Path) -> None:
    svc = service(repo, home)
    assert svc.components() == []
    assert svc.diagnostics == ()


def test_another_project_dir_re_resolves_everything(tmp_path: Path, home: Path) -> None:
    first = tmp_path / "first"
    second = tmp_path / "second"
    for repo, name in ((first, "one"), (second, "two")):
        (repo / ".git").mkdir(parents=True)
        write(repo / "AGENTS.md", f"rules of {name}")
        write(repo / "pkg/AGENTS.md", f"pkg of {name}")
    old = service(first, home)
    assert old.note_read(first / "pkg/x.py") == ["pkg/AGENTS.md"]

    moved = service(second, home, nested=old.nested)

    assert [c.key for c in moved.components()] == [
        "core.instructions:AGENTS.md",
        "core.instructions:pkg/AGENTS.md",
    ]
    texts = [rendered(c).baseline for c in moved.components()]
    assert "rules of two" in texts[0] and "pkg of two" in texts[1]
    assert not any("of one" in text for text in texts)
    # A nested path recorded in the old place does not apply below another project folder.
    deeper = service(second / "pkg", home, nested=old.nested)
    assert deeper.nested == ()


# -- nested discovery -----------------------------------------------------------------------


def test_nested_file_found_on_read_but_not_for_a_sibling(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    project = repo / "app"
    write(project / "AGENTS.md", "app")
    write(project / "pkg/AGENTS.md", "pkg rules")
    write(project / "pkg/sub/AGENTS.md", "sub rules")
    write(project / "pkg/sub/file.py", "print()")
    write(project / "sibling/file.py", "print()")
    write(repo / "elsewhere/AGENTS.md", "in the repository, outside the project")
    write(tmp_path / "outside/AGENTS.md", "outside everything")
    svc = service(project, home)

    assert svc.note_read(project / "sibling/file.py") == []
    assert svc.note_read(project / "file_in_project_dir.py") == []
    assert svc.note_read(repo / "elsewhere/x.py") == []
    assert svc.note_read(tmp_path / "outside/x.py") == []
    assert svc.note_read("bad\x00name") == []
    assert svc.nested == ()

    joined = svc.note_read("pkg/sub/file.py")

    assert joined == ["app/pkg/AGENTS.md", "app/pkg/sub/AGENTS.md"]
    assert svc.note_read(project / "pkg/sub/file.py") == []  # once
    assert svc.note_read(project / "pkg/other.py") == []
    nested: tuple[str, ...] = svc.nested  # un-narrowed: mypy kept `== ()` from above
    assert nested == ("app/pkg/AGENTS.md", "app/pkg/sub/AGENTS.md")
    components = svc.components()
    assert [c.key for c in components] == [
        "core.instructions:app/AGENTS.md",
        "core.instructions:app/pkg/AGENTS.md",
        "core.instructions:app/pkg/sub/AGENTS.md",
    ]
    assert components == svc.components()  # the same objects at every call
    sub = rendered(components[2])
    assert "sub rules" in sub.update_text
    assert 'path="app/pkg/sub/AGENTS.md"' in sub.update_text
    assert "work under app/pkg/sub/" in sub.update_text


def test_nested_discovery_follows_the_real_location(tmp_path: Path, home: Path, repo: Path) -> None:
    write(repo / "pkg/AGENTS.md", "pkg")
    write(repo / "pkg/a.py", "")
    write(tmp_path / "outside/AGENTS.md", "outside")
    write(tmp_path / "outside/b.py", "")
    (repo / "link_in").symlink_to(repo / "pkg")
    (repo / "link_out").symlink_to(tmp_path / "outside")
    svc = service(repo, home)

    assert svc.note_read(repo / "link_out/b.py") == []
    assert svc.note_read(repo / "link_in/a.py") == ["pkg/AGENTS.md"]


def test_files_at_or_above_the_project_folder_never_join_on_read(home: Path, repo: Path) -> None:
    project = repo / "app"
    project.mkdir()
    svc = service(project, home)
    write(project / "AGENTS.md", "created after the session was")
    write(repo / "AGENTS.md", "root, created later too")

    assert svc.note_read(project / "main.py") == []
    assert svc.note_read(repo / "top.py") == []
    assert svc.restore(["app/AGENTS.md", "AGENTS.md"]) == []
    assert svc.components() == []


def test_restore_rejoins_recorded_files_and_ignores_foreign_paths(home: Path, repo: Path) -> None:
    write(repo / "AGENTS.md", "root")
    write(repo / "pkg/AGENTS.md", "pkg")
    write(repo / "lib/CLAUDE.md", "lib")
    svc = service(repo, home)

    accepted = svc.restore(
        [
            "lib/CLAUDE.md",
            "pkg/AGENTS.md",
            "pkg/AGENTS.md",
            "AGENTS.md",  # a project-level file, not a nested one
            "../AGENTS.md",
            "/etc/AGENTS.md",
            "pkg/notes.md",
            "",
        ]
    )

    assert accepted == ["lib/CLAUDE.md", "pkg/AGENTS.md"]
    assert [c.key for c in svc.components()] == [
        "core.instructions:AGENTS.md",
        "core.instructions:lib/CLAUDE.md",
        "core.instructions:pkg/AGENTS.md",
    ]
    reopened = service(repo, home, nested=["pkg/AGENTS.md"])
    assert reopened.nested == ("pkg/AGENTS.md",)


# -- edits, removals, unreadable files --------------------------------------------------------


def test_edited_file_is_sent_in_full_and_its_hash_changes_once(home: Path, repo: Path) -> None:
    agents = write(repo / "AGENTS.md", "first version")
    component = service(repo, home).components()[0]
    before = rendered(component)
    assert rendered(component) == before  # unchanged file, unchanged text

    agents.write_text("second version\nwith a second line", encoding="utf-8")
    after = rendered(component)

    assert "second version\nwith a second line" in after.update_text
    assert "first version" not in after.update_text
    assert "AGENTS.md" in after.update_text
    assert "replaces any earlier version" in after.update_text
    assert after.update_text != before.update_text
    assert rendered(component) == after


def test_deleted_project_file_is_absent_and_comes_back(home: Path, repo: Path) -> None:
    agents = write(repo / "AGENTS.md", "rules")
    component = service(repo, home).components()[0]
    agents.unlink()

    assert sample(component) is ABSENT
    assert "no longer apply" in component.removal_text()
    assert "AGENTS.md" in component.removal_text()
    write(agents, "rules again")
    assert "rules again" in rendered(component).update_text


def test_deleted_nested_file_is_absent_then_leaves_until_read_again(home: Path, repo: Path) -> None:
    nested = write(repo / "pkg/AGENTS.md", "nested")
    svc = service(repo, home)
    assert svc.note_read(repo / "pkg/x.py") == ["pkg/AGENTS.md"]
    [component] = svc.components()
    nested.unlink()

    assert sample(component) is ABSENT
    assert svc.nested == () and svc.files() == []
    # The component stays listed (absent), so the boundary sampling it renders its removal.
    assert svc.components() == [component]
    write(nested, "back again")
    assert sample(component) is ABSENT  # in place again, but not effective until read
    assert svc.note_read(repo / "pkg/x.py") == ["pkg/AGENTS.md"]
    assert svc.components() == [component]
    assert "back again" in rendered(component).update_text


def test_directory_in_place_of_the_file_is_unavailable(home: Path, repo: Path) -> None:
    agents = write(repo / "AGENTS.md", "rules")
    svc = service(repo, home)
    component = svc.components()[0]
    agents.unlink()
    (agents / "inner").mkdir(parents=True)

    assert isinstance(sample(component), Unavailable)
    assert [d.kind for d in svc.diagnostics] == ["not_a_file"]
    assert svc.diagnostics[0].key == "core.instructions:AGENTS.md"
    shutil.rmtree(agents)
    write(agents, "fine again")
    assert "fine again" in rendered(component).baseline
    assert svc.diagnostics == ()


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores file modes")
def test_file_without_read_permission_is_unavailable(home: Path, repo: Path) -> None:
    agents = write(repo / "AGENTS.md", "rules")
    svc = service(repo, home)
    agents.chmod(0)
    try:
        assert isinstance(sample(svc.components()[0]), Unavailable)
        assert [d.kind for d in svc.diagnostics] == ["unreadable"]
    finally:
        agents.chmod(0o644)


def test_key_for_a_folder_with_spaces(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "my repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / 'docs and "notes"/AGENTS.md', "odd folder")
    svc = service(repo / 'docs and "notes"', home)

    [component] = svc.components()

    assert component.key == instruction_key('docs and "notes"/AGENTS.md')
    assert component.key == 'core.instructions:docs%20and%20"notes"/AGENTS.md'
    assert 'path="docs and &quot;notes&quot;/AGENTS.md"' in rendered(component).baseline
