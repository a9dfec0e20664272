"""Paths shared by the skill tests: the project's own test skills and the real published ones."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).absolute().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "skills"
# Real skills from a public collection, read in place beside the repository (absent in some CI).
REAL_SKILLS = REPO.parent / "shared" / "testdata" / "skills"


@pytest.fixture
def real_skills_dir() -> Path:
    if not REAL_SKILLS.is_dir():
        pytest.skip(f"real skills not present at {REAL_SKILLS} (test data beside the repository)")
    return REAL_SKILLS


def write_skill(root: Path, folder: str, text: str | bytes) -> Path:
    """Write ``root/folder/SKILL.md`` and return its path."""
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def skill_md(
    name: str, description: str = "Does a thing. Use it for tests.", body: str = "Body."
) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"
