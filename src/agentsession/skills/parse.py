"""Reading one SKILL.md folder into a ``Skill``, with diagnostics instead of exceptions.

The format is the Agent Skills specification (agentskills.io/specification, maintained in the
agentskills/agentskills repository): YAML front matter between ``---`` lines, then Markdown
instructions. Required ``name`` (1-64 characters, lowercase letters, digits and single hyphens,
not at either end, equal to the folder name) and ``description`` (non-empty, at most 1,024
characters); optional ``license``, ``compatibility`` (at most 500 characters), ``metadata`` (a
map of strings to strings) and ``allowed-tools`` (a space-separated string or a list). The
project's client-implementation guide (agentskills.io, "adding skills support") adds the
practical rules followed here: trim the body, read unquoted ``key: a: b`` values leniently, and
report problems as diagnostics rather than failing.

Choices beyond the text, each deliberate:
- Structural problems are errors and the skill is skipped: unreadable, over ``MAX_SKILL_BYTES``,
  binary (a NUL byte), not UTF-8, no or unterminated front matter, YAML that cannot be read,
  duplicate keys, a missing or invalid name, a name that differs from its folder, no description.
- Over-long descriptions and compatibility texts are kept, truncated, with a warning: published
  skills exceed the limits. Optional fields of the wrong type and unknown fields are warnings.
- Scalars are read as written (YAML's implicit typing is off), so ``version: 1.10`` stays
  ``"1.10"`` and ``on: yes`` stays ``"yes"``.
- ``MAX_SKILL_BYTES`` is 256 KiB: fifty times the spec's recommended instruction size, and a
  loaded file past it would take a large share of any context window.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Hashable
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

from .._frozen import frozen
from .skill import (
    MAX_DESCRIPTION_CHARS,
    Skill,
    name_problem,
    text_revision,
)

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_COMPATIBILITY_CHARS",
    "MAX_SKILL_BYTES",
    "ParsedSkill",
    "SkillDiagnostic",
    "parse_skill_file",
]

MAX_SKILL_BYTES = 256 * 1024
MAX_COMPATIBILITY_CHARS = 500
_KNOWN = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")


@frozen
class SkillDiagnostic:
    """One problem found with a skill: where, how bad, and what exactly."""

    path: str
    severity: Literal["error", "warning"]
    message: str
    kind: Literal["skill_diagnostic"] = "skill_diagnostic"

    def __str__(self) -> str:
        return f"{self.path}: {self.severity}: {self.message}"


@frozen
class ParsedSkill:
    """The outcome of reading one SKILL.md: the skill (``None`` when skipped) and diagnostics."""

    skill: Skill | None
    diagnostics: tuple[SkillDiagnostic, ...] = field(default=())


class _Problem(Exception):
    """A structural problem: the skill is skipped with this message."""


@functools.cache
def _loader() -> type[yaml.BaseLoader]:
    """The loader class, made at first use: PyYAML takes a while to import."""
    import yaml

    class Loader(yaml.BaseLoader):
        """YAML without implicit typing (every scalar is a string), refusing duplicate keys."""

        def construct_mapping(
            self, node: yaml.MappingNode, deep: bool = False
        ) -> dict[Hashable, Any]:
            seen: set[str] = set()
            for key_node, _ in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if isinstance(key, str) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                if isinstance(key, str):
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return Loader


def parse_skill_file(path: str | os.PathLike[str]) -> ParsedSkill:
    """Read the SKILL.md at ``path``; never raises for anything the file holds."""
    location = os.path.abspath(path)
    warnings: list[str] = []
    try:
        raw = _read_bounded(location)
        text = _decode(raw)
        front, body, front_line = _split(text)
        data = _load_front(front, front_line, warnings)
        skill = _build(data, body, raw, location, warnings)
    except _Problem as problem:
        return ParsedSkill(None, (SkillDiagnostic(location, "error", str(problem)),))
    notes = tuple(SkillDiagnostic(location, "warning", w) for w in warnings)
    return ParsedSkill(skill, notes)


def _read_bounded(location: str) -> bytes:
    try:
        info = os.stat(location)
        if not stat.S_ISREG(info.st_mode):
            raise _Problem("SKILL.md is not a regular file")
        if info.st_size > MAX_SKILL_BYTES:
            raise _Problem(_too_big(info.st_size))
        with open(location, "rb") as handle:
            raw = handle.read(MAX_SKILL_BYTES + 1)
    except OSError as exc:
        raise _Problem(f"cannot read SKILL.md: {exc.strerror or exc}") from exc
    if len(raw) > MAX_SKILL_BYTES:  # it grew between stat and read
        raise _Problem(_too_big(len(raw)))
    return raw


def _too_big(size: int) -> str:
    return f"SKILL.md is {size:,} bytes, over the limit of {MAX_SKILL_BYTES:,} bytes (256 KiB)"


def _decode(raw: bytes) -> str:
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise _Problem(f"SKILL.md is a binary file (NUL byte at offset {nul})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        raise _Problem(f"SKILL.md is not valid UTF-8 (byte 0x{bad} at offset {exc.start})") from exc
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _split(text: str) -> tuple[str, str, int]:
    """Split into front matter, body, and the file line where the front matter starts."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise _Problem("SKILL.md has no front matter: it must start with a line '---'")
    for index in range(1, len(lines)):
        if lines[index].rstrip() == "---":
            front = "\n".join(lines[1:index])
            body = "\n".join(lines[index + 1 :]).strip()
            return front, body, 2
    raise _Problem("SKILL.md front matter is not terminated: no closing line '---'")


def _load_front(front: str, first_line: int, warnings: list[str]) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.load(front, Loader=_loader())
    except yaml.constructor.ConstructorError as exc:
        raise _Problem(f"front matter is invalid: {_yaml_error(exc, first_line)}") from exc
    except RecursionError as exc:
        raise _Problem("front matter is nested too deeply to read") from exc
    except yaml.YAMLError as exc:
        relaxed = _quote_colon_values(front)
        try:
            data = yaml.load(relaxed, Loader=_loader())
        except (yaml.YAMLError, RecursionError):
            raise _Problem(
                f"front matter is not valid YAML: {_yaml_error(exc, first_line)}"
            ) from exc
        warnings.append(
            f"front matter is not valid YAML ({_yaml_error(exc, first_line)}); read leniently"
            " by quoting values that contain ': ' — quote them in the file"
        )
    if data is None:
        raise _Problem("front matter is empty: 'name' and 'description' are required")
    if not isinstance(data, dict):
        raise _Problem("front matter must be a YAML mapping of fields")
    return data


def _yaml_error(exc: yaml.YAMLError, first_line: int) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return str(problem)
    return f"{problem} (line {mark.line + first_line}, column {mark.column + 1})"


_PLAIN_VALUE = re.compile(r"^([A-Za-z0-9_-]+):[ \t]+([^'\"|>\[{&*!#\s].*: .*)$")


def _quote_colon_values(front: str) -> str:
    """Single-quote top-level plain values holding ': ' (valid for other clients' parsers)."""
    out = []
    for line in front.split("\n"):
        match = _PLAIN_VALUE.match(line)
        if match:
            value = match.group(2).rstrip().replace("'", "''")
            line = f"{match.group(1)}: '{value}'"
        out.append(line)
    return "\n".join(out)


def _build(
    data: dict[str, Any], body: str, raw: bytes, location: str, warnings: list[str]
) -> Skill:
    name = data.get("name")
    if name is None:
        raise _Problem("front matter has no 'name'")
    problem = name_problem(name)
    if problem:
        raise _Problem(problem)
    folder = os.path.basename(os.path.dirname(location))
    if name != folder:
        raise _Problem(f"name {name!r} does not match its folder name {folder!r}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _Problem("front matter needs a non-empty string 'description'")
    description = _clip(description.strip(), MAX_DESCRIPTION_CHARS, "description", warnings)
    unknown = sorted(str(k) for k in data if k not in _KNOWN)
    if unknown:
        warnings.append(f"fields not in the Agent Skills specification are ignored: {unknown}")
    compatibility = _optional_text(data, "compatibility", warnings)
    if compatibility is not None:
        compatibility = _clip(compatibility, MAX_COMPATIBILITY_CHARS, "compatibility", warnings)
    return Skill(
        name=name,
        description=description,
        instructions=body,
        allowed_tools=_allowed_tools(data.get("allowed-tools"), warnings),
        location=location,
        revision=text_revision(raw),
        license=_optional_text(data, "license", warnings),
        compatibility=compatibility,
        metadata=_metadata(data.get("metadata"), warnings),
        source="file",
    )


def _clip(text: str, limit: int, what: str, warnings: list[str]) -> str:
    if len(text) <= limit:
        return text
    warnings.append(
        f"{what} is {len(text):,} characters long, over the specification's {limit:,};"
        f" kept, truncated to {limit:,}"
    )
    return text[: limit - 1] + "…"


def _optional_text(data: dict[str, Any], key: str, warnings: list[str]) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        warnings.append(f"'{key}' must be a non-empty string; ignored")
        return None
    return value.strip()


def _allowed_tools(value: Any, warnings: list[str]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip():
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(v.strip() for v in value)
    warnings.append(
        "'allowed-tools' must be a space-separated string or a list of strings; ignored"
    )
    return None


def _metadata(value: Any, warnings: list[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        warnings.append("'metadata' must be a mapping of strings to strings; ignored")
        return {}
    kept = {k: v for k, v in value.items() if isinstance(v, str)}
    dropped = sorted(str(k) for k in value if k not in kept)
    if dropped:
        warnings.append(f"'metadata' values must be strings; ignored keys {dropped}")
    return kept
