"""Discovery: sources in precedence order, first name wins, file-system trouble as diagnostics."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentsession.errors import UsageError
from agentsession.skills import Skill, discover_skills, project_skill_dirs

from .conftest import FIXTURES, skill_md, write_skill


def test_project_folders_are_found(tmp_path: Path) -> None:
    agents, claude = project_skill_dirs(tmp_path)
    write_skill(Path(agents), "alpha", skill_md("alpha"))
    write_skill(Path(claude), "beta", skill_md("beta"))
    found = discover_skills(project_dir=tmp_path)
    assert found.names() == ("alpha", "beta")
    assert found.diagnostics == ()
    beta = found.get("beta")
    assert beta is not None and beta.location == str(Path(claude) / "beta" / "SKILL.md")


def test_missing_project_folders_are_not_a_problem(tmp_path: Path) -> None:
    found = discover_skills(project_dir=tmp_path)
    assert (found.skills, found.diagnostics) == ((), ())


def test_first_source_wins_and_the_shadowed_path_is_named(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    kept = write_skill(first, "same", skill_md("same", description="From the first folder."))
    shadowed = write_skill(second, "same", skill_md("same", description="From the second."))
    write_skill(Path(project_skill_dirs(tmp_path)[0]), "same", skill_md("same"))
    found = discover_skills([first, second], tmp_path)
    same = found.get("same")
    assert same is not None and same.description == "From the first folder."
    assert len(found.diagnostics) == 2
    diagnostic = found.diagnostics[0]
    assert diagnostic.severity == "warning"
    assert diagnostic.path == str(shadowed)
    assert str(kept) in diagnostic.message and str(shadowed) in diagnostic.message


def test_python_skills_come_first(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf", skill_md("pdf", description="From a file."))
    python = Skill(name="pdf", description="From Python.", instructions="Use pypdf.")
    found = discover_skills([tmp_path], skills=[python])
    assert found.get("pdf") is python
    assert "Python code" in found.diagnostics[0].message


def test_agents_folder_comes_before_claude_folder(tmp_path: Path) -> None:
    agents, claude = (Path(p) for p in project_skill_dirs(tmp_path))
    write_skill(claude, "tie", skill_md("tie", description="Claude folder."))
    write_skill(agents, "tie", skill_md("tie", description="Agents folder."))
    tie = discover_skills(project_dir=tmp_path).get("tie")
    assert tie is not None and tie.description == "Agents folder."


def test_the_same_file_reached_twice_counts_once(tmp_path: Path) -> None:
    agents, claude = (Path(p) for p in project_skill_dirs(tmp_path))
    write_skill(agents, "shared", skill_md("shared"))
    claude.parent.mkdir(parents=True)
    claude.symlink_to(agents, target_is_directory=True)
    found = discover_skills([agents], tmp_path)
    assert found.names() == ("shared",)
    assert found.diagnostics == ()


def test_order_is_sorted_whatever_the_listing_order(tmp_path: Path) -> None:
    for name in ("zeta", "alpha", "mid", "beta-2", "beta"):
        write_skill(tmp_path, name, skill_md(name))
    found = discover_skills([tmp_path])
    assert found.names() == ("alpha", "beta", "beta-2", "mid", "zeta")
    assert [s.name for s in found] == list(found.names())


def test_files_hidden_folders_and_folders_without_skill_md_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("not a skill", encoding="utf-8")
    write_skill(tmp_path, ".hidden", skill_md("hidden"))
    (tmp_path / "assets").mkdir()
    write_skill(tmp_path, "real", skill_md("real"))
    found = discover_skills([tmp_path])
    assert found.names() == ("real",)
    assert found.diagnostics == ()


def test_lowercase_skill_md_gets_a_hint(tmp_path: Path) -> None:
    (tmp_path / "quiet").mkdir()
    (tmp_path / "quiet" / "skill.md").write_text(skill_md("quiet"), encoding="utf-8")
    found = discover_skills([tmp_path])
    assert found.skills == ()
    assert len(found.diagnostics) == 1
    assert "must be named SKILL.md" in found.diagnostics[0].message


def test_a_skill_folder_given_as_skills_dir_gets_a_hint(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "solo", skill_md("solo")).parent
    found = discover_skills([folder])
    assert found.skills == ()
    assert "give its parent folder" in found.diagnostics[0].message
    assert discover_skills([tmp_path]).names() == ("solo",)


def test_missing_and_non_folder_skills_dirs(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    found = discover_skills([tmp_path / "nowhere", tmp_path / "file.txt"])
    assert [(d.severity, d.message) for d in found.diagnostics] == [
        ("warning", "skills folder does not exist"),
        ("error", "skills folder is not a folder"),
    ]


def test_symlink_loops_and_dangling_links_are_diagnostics(tmp_path: Path) -> None:
    write_skill(tmp_path, "fine", skill_md("fine"))
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    (tmp_path / "dangling").symlink_to(tmp_path / "no-such-folder")
    (tmp_path / "self").symlink_to(tmp_path, target_is_directory=True)
    inner = tmp_path / "file-loop"
    inner.mkdir()
    (inner / "SKILL.md").symlink_to(inner / "SKILL.md")
    found = discover_skills([tmp_path])
    assert found.names() == ("fine",)
    by_folder = {
        Path(d.path).name if Path(d.path).name != "SKILL.md" else Path(d.path).parent.name: d
        for d in found.diagnostics
    }
    assert set(by_folder) == {"loop-a", "loop-b", "dangling", "file-loop"}
    assert all(d.severity == "error" for d in found.diagnostics)
    assert "symbolic links" in by_folder["loop-a"].message
    assert "symbolic links" in by_folder["file-loop"].message


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not bind the superuser")
def test_unreadable_folders_are_diagnostics(tmp_path: Path) -> None:
    locked_root = tmp_path / "locked-root"
    locked_root.mkdir()
    open_root = tmp_path / "open-root"
    write_skill(open_root, "fine", skill_md("fine"))
    locked_skill = write_skill(open_root, "locked", skill_md("locked")).parent
    locked_root.chmod(0)
    locked_skill.chmod(0)
    try:
        found = discover_skills([locked_root, open_root])
    finally:
        locked_root.chmod(0o755)
        locked_skill.chmod(0o755)
    assert found.names() == ("fine",)
    assert len(found.diagnostics) == 2
    assert all(d.severity == "error" for d in found.diagnostics)


def test_argument_misuse_raises(tmp_path: Path) -> None:
    one = Skill(name="one", description="One.")
    with pytest.raises(UsageError, match="two Python skills"):
        discover_skills(skills=[one, Skill(name="one", description="Again.")])
    with pytest.raises(UsageError, match="list of folders"):
        discover_skills(str(tmp_path))
    with pytest.raises(UsageError, match="Skill values"):
        discover_skills(skills=["one"])  # type: ignore[list-item]


def test_fixture_skills_are_all_available() -> None:
    found = discover_skills([FIXTURES])
    assert found.errors == ()
    assert set(found.names()) == {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert "minimal" in found and "absent" not in found and len(found) == len(found.names())
