"""Explicit skill selection: ``$name`` mentions, ``skills=[…]``, and the ``<skill>`` blocks.

A user selects skills with ``prompt(text, skills=["pdf"])`` or by writing ``$pdf``. Only names of
available skills count; a mention is a ``$`` not preceded by a word character or ``$``, followed
by a whole name token (letters, digits, ``_`` and ``-``), matched exactly, so ``$5``, ``$PATH``
and ``$pdf-tools`` select nothing unless a skill has exactly that name. Requested names come
first, then mentions in text order, without repeats.

What was read is rendered as ``<skill name="…" location="…">`` blocks placed in front of the user
message in the model view only. Tags are presentation, not a parser: attribute values are
escaped, and any ``<skill``, ``</skill`` or ``<available_skills`` look-alike inside a body has its
``<`` written as ``&lt;``, so a body cannot close its block early or open another. The user's own
text follows the closed blocks and is never rewritten; tag-like text there selects nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..errors import UsageError
from ..log import RuntimeContextSnapshot
from ..request import ContentPart, TextPart, text_of
from .skill import SkillText

PYTHON_LOCATION = "python:"
"""The location prefix of a skill written in Python (``python:pdf``): no file, no folder."""

__all__ = [
    "PYTHON_LOCATION",
    "escape_attribute",
    "mentioned_skills",
    "neutralize",
    "prepend_skill_blocks",
    "render_skill_block",
    "render_skill_blocks",
    "select_skills",
    "selection_snapshot",
]

_MENTION = re.compile(r"(?<![\w$])\$([\w-]+)")
_TAG_LIKE = re.compile(r"<(?=\s*/?\s*(?:skill|available_skills)\b)", re.IGNORECASE)
_ATTRIBUTE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})


def escape_attribute(value: str) -> str:
    """``value`` safe inside a double-quoted tag attribute (on one line)."""
    return " ".join(value.translate(_ATTRIBUTE).splitlines())


def neutralize(text: str) -> str:
    """``text`` with every skill-tag look-alike disarmed (its ``<`` written as ``&lt;``)."""
    return _TAG_LIKE.sub("&lt;", text)


def mentioned_skills(
    text: str | Sequence[ContentPart], available: Iterable[str]
) -> tuple[str, ...]:
    """Names of available skills mentioned as ``$name`` in ``text``, in order, without repeats."""
    names = set(available)
    plain = text if isinstance(text, str) else text_of(tuple(text))
    found: dict[str, None] = {}
    for match in _MENTION.finditer(plain):
        if match.group(1) in names:
            found.setdefault(match.group(1))
    return tuple(found)


def select_skills(
    text: str | Sequence[ContentPart],
    requested: Iterable[str] | None,
    available: Iterable[str],
) -> tuple[str, ...]:
    """The skills one prompt selects: ``requested`` names, then ``$name`` mentions, no repeats.

    A requested name that is not available raises ``UsageError`` listing the available ones.
    """
    names = tuple(available)
    chosen: dict[str, None] = {}
    if requested is not None:
        if isinstance(requested, str) or not isinstance(requested, Iterable):
            raise UsageError(f"skills must be a list of skill names, got {requested!r}")
        for name in requested:
            if not isinstance(name, str) or name not in names:
                offered = ", ".join(sorted(names)) or "none"
                raise UsageError(f"unknown skill {name!r}; available skills: {offered}")
            chosen.setdefault(name)
    for name in mentioned_skills(text, names):
        chosen.setdefault(name)
    return tuple(chosen)


def render_skill_block(read: SkillText, *, python_location: bool = False) -> str:
    """One ``<skill name="…" location="…">`` block holding what was read, as data.

    A skill written in Python has no file; with ``python_location`` (an explicit selection)
    its location reads ``python:<name>``, so every selected block says where it came from.
    A loaded skill's component keeps the form it always had (changing it would resend it).
    """
    location = read.location or (f"{PYTHON_LOCATION}{read.name}" if python_location else "")
    attributes = f'name="{escape_attribute(read.name)}"'
    if location:
        attributes += f' location="{escape_attribute(location)}"'
    body = neutralize(read.text.strip("\n"))
    return f"<skill {attributes}>\n{body}\n</skill>" if body else f"<skill {attributes}>\n</skill>"


def render_skill_blocks(reads: Iterable[SkillText]) -> str:
    """The blocks of one selection, in order, separated by a blank line (``""`` for none)."""
    return "\n\n".join(render_skill_block(read, python_location=True) for read in reads)


def prepend_skill_blocks(
    content: str | tuple[ContentPart, ...], blocks: str
) -> str | tuple[ContentPart, ...]:
    """A user message's model-view content with ``blocks`` in front.

    A string stays a string (blocks, a blank line, the text); block input gets one text part
    before its existing text and images. Empty ``blocks`` leave ``content`` as it is.
    """
    if not blocks:
        return content
    if isinstance(content, str):
        return f"{blocks}\n\n{content}" if content else blocks
    return (TextPart(blocks), *content)


def selection_snapshot(
    reads: Sequence[SkillText], user_turn: int, timestamp: str
) -> RuntimeContextSnapshot | None:
    """The ``RuntimeContextSnapshot`` saving one prompt's selection (``None`` for none)."""
    if not reads:
        return None
    return RuntimeContextSnapshot(
        user_turn=user_turn,
        content=render_skill_blocks(reads),
        timestamp=timestamp,
        skills=tuple(read.record for read in reads),
        placement="user",
    )
