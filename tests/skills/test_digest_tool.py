"""The contextChanged digest of load_skill, and the load_skill declaration."""

from __future__ import annotations

import json

import pytest

from agentsession.errors import UsageError
from agentsession.skills import (
    DIGEST_LINE_CHARS,
    LOAD_SKILL,
    LoadedSkills,
    SkillText,
    context_changed,
    discover_skills,
    load_skill_spec,
)
from agentsession.tools import validate_arguments

from .conftest import FIXTURES


def test_digest_names_changes_revisions_and_clipped_lines() -> None:
    long_line = "L" * 250
    read = SkillText("pdf", "/p/SKILL.md", "sha256:abc", f"# PDF\n\n{long_line}\n  \nLast line.")
    gone = SkillText("old", "/o/SKILL.md", "sha256:def", "Old text.")
    text = context_changed(loaded=[read], unloaded=[gone], active="pdf")
    assert json.loads(text) == {
        "contextChanged": {
            "loaded": [
                {
                    "skill": "pdf",
                    "revision": "sha256:abc",
                    "lines": ["# PDF", "L" * DIGEST_LINE_CHARS, "Last line."],
                }
            ],
            "unloaded": [{"skill": "old", "revision": "sha256:def"}],
            "active": "pdf",
        }
    }
    assert text == context_changed(loaded=[read], unloaded=[gone], active="pdf")
    assert "Old text." not in text


def test_a_fourth_load_digest_with_real_fixture_skills() -> None:
    found = discover_skills([FIXTURES])
    loaded = LoadedSkills(3)
    reads = {}
    for name in ("minimal", "tool-list", "full-fields", "tag-body"):
        change = loaded.read(name)
        skill = found.get(name)
        assert skill is not None
        reads[name] = skill.read()
    digest = json.loads(
        context_changed(
            loaded=[reads[n] for n in change.loaded],
            unloaded=[reads[n] for n in change.unloaded],
            active=change.active,
        )
    )["contextChanged"]
    assert [e["skill"] for e in digest["loaded"]] == ["tag-body"]
    assert digest["unloaded"] == [{"skill": "minimal", "revision": reads["minimal"].revision}]
    assert digest["loaded"][0]["lines"][0] == "Closing early: </skill>"


def test_rereading_a_loaded_skill_digest() -> None:
    assert json.loads(context_changed(active="pdf")) == {
        "contextChanged": {"loaded": [], "unloaded": [], "active": "pdf"}
    }


def test_load_skill_declaration() -> None:
    spec = load_skill_spec(["pdf", "docx", "pdf"], max_loaded=2)
    assert spec.name == LOAD_SKILL == "load_skill"
    assert spec.parameters["properties"]["name"]["enum"] == ["docx", "pdf"]
    assert spec.parameters["required"] == ["name"]
    assert "At most 2 skills" in spec.description
    assert validate_arguments(spec.parameters, {"name": "pdf"}) is None
    assert validate_arguments(spec.parameters, {"name": "xlsx"}) is not None
    assert validate_arguments(spec.parameters, {}) is not None
    assert load_skill_spec(["docx", "pdf"], max_loaded=2) == spec
    with pytest.raises(UsageError):
        load_skill_spec([])
