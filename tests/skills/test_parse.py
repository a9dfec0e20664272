"""Reading SKILL.md files: real published skills, the project's edge cases, a broken set."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from agentsession.skills import (
    MAX_SKILL_BYTES,
    discover_skills,
    parse_skill_file,
    render_catalog,
)

from .conftest import FIXTURES, skill_md, write_skill


def chars(text: str) -> int:
    return len(text)


def test_every_real_skill_parses_cleanly_and_is_in_the_catalog(real_skills_dir: Path) -> None:
    folders = sorted(p for p in real_skills_dir.iterdir() if (p / "SKILL.md").is_file())
    assert folders, "the real skills folder holds no skills"
    found = discover_skills([real_skills_dir])
    assert found.errors == ()
    assert found.names() == tuple(p.name for p in folders)
    catalog = render_catalog(found, budget=100_000, counter=chars)
    for folder in folders:
        skill = found.get(folder.name)
        assert skill is not None
        raw = (folder / "SKILL.md").read_bytes()
        assert skill.revision == "sha256:" + hashlib.sha256(raw).hexdigest()
        assert skill.location == str(folder / "SKILL.md")
        assert skill.source == "file"
        assert skill.description and skill.description in raw.decode()
        assert isinstance(skill.instructions, str)
        assert not skill.instructions.startswith("---")
        assert skill.instructions.splitlines()[0].strip() in raw.decode()
        assert f'name="{skill.name}"' in catalog and str(folder / "SKILL.md") in catalog


def test_minimal_skill_needs_only_name_and_description() -> None:
    parsed = parse_skill_file(FIXTURES / "minimal" / "SKILL.md")
    assert parsed.diagnostics == ()
    skill = parsed.skill
    assert skill is not None
    assert skill.name == "minimal"
    assert skill.instructions == "# Minimal\n\nAnswer in one sentence."
    assert (skill.license, skill.compatibility, skill.allowed_tools) == (None, None, None)
    assert dict(skill.metadata) == {}


def test_optional_fields_are_read_as_written() -> None:
    parsed = parse_skill_file(FIXTURES / "full-fields" / "SKILL.md")
    assert parsed.diagnostics == ()
    skill = parsed.skill
    assert skill is not None
    assert skill.license == "Apache-2.0"
    assert skill.compatibility == "Requires Python 3.11+ and network access to nothing at all"
    # Scalars stay strings as written: YAML would have made 1.10 the float 1.1.
    assert dict(skill.metadata) == {
        "author": "agentsession-tests",
        "version": "1.10",
        "revision": "1.10",
    }
    assert skill.allowed_tools == ("read_file", "list_files", "Bash(git:*)")


def test_allowed_tools_as_a_yaml_list() -> None:
    skill = parse_skill_file(FIXTURES / "tool-list" / "SKILL.md").skill
    assert skill is not None
    assert skill.allowed_tools == ("read_file", "write_file")


def test_blank_allowed_tools_restricts_nothing_and_is_reported(tmp_path: Path) -> None:
    text = "---\nname: blank\ndescription: Blank allowed-tools.\nallowed-tools:\n---\nBody.\n"
    parsed = parse_skill_file(write_skill(tmp_path, "blank", text))
    assert parsed.skill is not None and parsed.skill.allowed_tools is None
    assert [d.severity for d in parsed.diagnostics] == ["warning"]


def test_long_description_is_kept_truncated_with_a_warning() -> None:
    path = FIXTURES / "long-description" / "SKILL.md"
    parsed = parse_skill_file(path)
    skill = parsed.skill
    assert skill is not None
    assert len(skill.description) == 1024
    assert skill.description.endswith("…")
    assert skill.description.startswith("Sentence 01 of a description")
    assert [d.severity for d in parsed.diagnostics] == ["warning"]
    assert "1,024" in parsed.diagnostics[0].message
    assert parsed.diagnostics[0].path == str(path)


def test_unquoted_colon_value_is_read_leniently_with_a_warning() -> None:
    parsed = parse_skill_file(FIXTURES / "colon-value" / "SKILL.md")
    skill = parsed.skill
    assert skill is not None
    assert skill.description == (
        "Use this skill when: the user asks about colons in unquoted YAML values"
    )
    assert [d.severity for d in parsed.diagnostics] == ["warning"]
    assert "not valid YAML" in parsed.diagnostics[0].message


def test_fields_beyond_the_specification_are_named_in_a_warning() -> None:
    parsed = parse_skill_file(FIXTURES / "extra-fields" / "SKILL.md")
    assert parsed.skill is not None
    assert len(parsed.diagnostics) == 1
    assert "argument-hint" in parsed.diagnostics[0].message
    assert "user-invocable" in parsed.diagnostics[0].message


def test_crlf_and_byte_order_mark_are_accepted(tmp_path: Path) -> None:
    text = skill_md("crlf", body="Line one.\nLine two.").replace("\n", "\r\n")
    path = write_skill(tmp_path, "crlf", b"\xef\xbb\xbf" + text.encode())
    parsed = parse_skill_file(path)
    assert parsed.diagnostics == ()
    assert parsed.skill is not None
    assert parsed.skill.instructions == "Line one.\nLine two."


def test_revision_follows_the_bytes(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "changing", skill_md("changing", body="First."))
    first = parse_skill_file(path).skill
    path.write_text(skill_md("changing", body="Second."), encoding="utf-8")
    second = parse_skill_file(path).skill
    assert first is not None and second is not None
    assert first.revision != second.revision
    assert second.revision == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_optional_fields_of_the_wrong_shape_are_warnings(tmp_path: Path) -> None:
    text = (
        "---\nname: odd\ndescription: Odd optional fields.\nlicense: [a, b]\n"
        f"compatibility: {'c' * 600}\nmetadata: just text\nallowed-tools: {{a: b}}\n---\nBody.\n"
    )
    parsed = parse_skill_file(write_skill(tmp_path, "odd", text))
    skill = parsed.skill
    assert skill is not None
    assert skill.license is None and skill.allowed_tools is None and dict(skill.metadata) == {}
    assert skill.compatibility is not None and len(skill.compatibility) == 500
    messages = [d.message for d in parsed.diagnostics]
    assert all(d.severity == "warning" for d in parsed.diagnostics)
    assert len(messages) == 4
    assert any("'license'" in m for m in messages)
    assert any("compatibility" in m and "500" in m for m in messages)
    assert any("'metadata'" in m for m in messages)
    assert any("'allowed-tools'" in m for m in messages)


BROKEN: dict[str, tuple[str | bytes, str]] = {
    # folder: (SKILL.md content, a phrase the one error must contain)
    "no-front-matter": ("# Just Markdown\n\nNo front matter here.\n", "no front matter"),
    "unterminated": ("---\nname: unterminated\ndescription: Never closed.\n", "not terminated"),
    "Bad_Name": (skill_md("Bad_Name"), "lowercase letters"),
    "-leading": (skill_md("-leading"), "start or end with a hyphen"),
    "double--hyphen": (skill_md("double--hyphen"), "consecutive hyphens"),
    "n" * 65: (skill_md("n" * 65), "limit is 64"),
    "folder-name": (skill_md("other-name"), "does not match its folder name 'folder-name'"),
    "big-body": (skill_md("big-body", body="x" * 2_000_000), "over the limit"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8, "binary"),
    "latin-one": (
        skill_md("latin-one", description="Caf\u00e9 skill.").encode("latin-1"),
        "not valid UTF-8 (byte 0xe9",
    ),
    "dup-keys": (
        "---\nname: dup-keys\ndescription: One.\ndescription: Two.\n---\nBody.\n",
        "duplicate key 'description' (line 4",
    ),
    "no-description": ("---\nname: no-description\n---\nBody.\n", "'description'"),
    "empty-front": ("---\n---\nBody.\n", "front matter is empty"),
    "not-a-mapping": ("---\n- name\n- description\n---\nBody.\n", "YAML mapping"),
    "bad-yaml": ("---\nname: bad-yaml\ndescription: [unclosed\n---\nBody.\n", "not valid YAML"),
    "deep-yaml": ("---\nname: " + "[" * 5000 + "\n---\n", "nested too deeply"),
}


@pytest.mark.parametrize("folder", sorted(BROKEN))
def test_each_broken_skill_gives_exactly_one_clear_error(tmp_path: Path, folder: str) -> None:
    content, phrase = BROKEN[folder]
    path = write_skill(tmp_path, folder, content)
    parsed = parse_skill_file(path)
    assert parsed.skill is None
    assert len(parsed.diagnostics) == 1
    diagnostic = parsed.diagnostics[0]
    assert diagnostic.severity == "error"
    assert diagnostic.path == str(path)
    assert phrase in diagnostic.message
    assert str(path) in str(diagnostic)


def test_the_broken_set_together_leaves_the_good_skill_standing(tmp_path: Path) -> None:
    for folder, (content, _) in BROKEN.items():
        write_skill(tmp_path, folder, content)
    write_skill(tmp_path, "good", skill_md("good"))
    found = discover_skills([tmp_path])
    assert found.names() == ("good",)
    assert len(found.diagnostics) == len(BROKEN)
    assert all(d.severity == "error" for d in found.diagnostics)
    assert {Path(d.path).parent.name for d in found.diagnostics} == set(BROKEN)


def test_size_limit_is_exact(tmp_path: Path) -> None:
    head = skill_md("edge", body="")
    at_limit = head + "y" * (MAX_SKILL_BYTES - len(head.encode()))
    path = write_skill(tmp_path, "edge", at_limit)
    assert path.stat().st_size == MAX_SKILL_BYTES
    assert parse_skill_file(path).skill is not None
    path.write_text(at_limit + "y", encoding="utf-8")
    assert parse_skill_file(path).skill is None


def test_a_folder_named_skill_md_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "weird" / "SKILL.md").mkdir(parents=True)
    parsed = parse_skill_file(tmp_path / "weird" / "SKILL.md")
    assert parsed.skill is None
    assert "not a regular file" in parsed.diagnostics[0].message


def test_a_missing_file_is_a_diagnostic(tmp_path: Path) -> None:
    parsed = parse_skill_file(tmp_path / "gone" / "SKILL.md")
    assert parsed.skill is None
    assert "cannot read SKILL.md" in parsed.diagnostics[0].message
