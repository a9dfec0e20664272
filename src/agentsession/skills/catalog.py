"""The skill catalog: the text of the ``core.skills.catalog`` component.

Tier one of the Agent Skills progressive disclosure: each available skill's name, description
and location, one line each, so the model knows what it can load. The text is a pure function of
the skills, the budget and the counter, in name order, so an unchanged skill set renders the
same bytes and never disturbs the prompt cache. When the lines do not all fit the token budget,
the first ones that fit are kept and a last line says how many more exist (their names stay in
the ``load_skill`` enum). Descriptions and locations come from files, so they are escaped and
kept to one line: nothing in them can forge or close a tag.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..budget import TokenCounter
from ..errors import UsageError
from .select import escape_attribute, neutralize
from .skill import Skill

__all__ = ["CATALOG_KEY", "render_catalog"]

#: The component key of the catalog.
CATALOG_KEY = "core.skills.catalog"

_HEADER = (
    "Skills hold specialised instructions (and sometimes tools) for particular tasks. When a"
    " task matches a skill's description, call the load_skill tool with its name before you"
    " proceed. Paths in a skill are relative to the folder of its location."
)


def _line(skill: Skill) -> str:
    description = neutralize(" ".join(skill.description.split()))
    attributes = f'name="{escape_attribute(skill.name)}"'
    if skill.location:
        attributes += f' location="{escape_attribute(skill.location)}"'
    return f"<skill {attributes}>{description}</skill>"


def _more(count: int) -> str:
    noun = "skill" if count == 1 else "skills"
    return f"… and {count} more {noun} (load_skill accepts every name)"


def render_catalog(
    skills: Iterable[Skill], *, budget: int, counter: TokenCounter | Callable[[str], int]
) -> str:
    """The catalog text within ``budget`` tokens as ``counter`` counts them.

    An empty skill set renders ``""`` (no catalog at all); so does a budget too small for even
    the header and the "… and N more skills" line.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise UsageError(f"catalog budget must be a non-negative int, got {budget!r}")
    ordered = sorted(skills, key=lambda s: s.name)
    if not ordered:
        return ""
    count = counter.count if isinstance(counter, TokenCounter) else counter
    lines = [_line(s) for s in ordered]
    kept = _fit(lines, budget, count)
    while kept >= 0:
        text = _assemble(lines[:kept], len(lines) - kept)
        if count(text) <= budget:
            return text
        kept -= 1  # counters are not exactly additive: step back until the whole fits
    return ""


def _fit(lines: list[str], budget: int, count: Callable[[str], int]) -> int:
    """How many lines fit by the sum of their own counts (the whole is checked afterwards)."""
    used = count(_assemble([], len(lines)))
    if count(_assemble(lines, 0)) <= budget:
        return len(lines)
    kept = 0
    for line in lines:
        used += count(line + "\n")
        if used > budget:
            break
        kept += 1
    return kept


def _assemble(lines: list[str], more: int) -> str:
    body = "\n".join([*lines, _more(more)] if more else lines)
    return f"{_HEADER}\n<available_skills>\n{body}\n</available_skills>"
