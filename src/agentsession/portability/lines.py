"""Reading another tool's files as untrusted data: bounded lines, JSON objects, typed fields.

A foreign file can be truncated (a tool killed mid-write), hold a line of any length, nest
arbitrarily or carry a value of the wrong type anywhere. Reading never trusts it: a line is read
at most ``max_line_bytes`` at a time (a longer line is skipped without being held in memory),
a line that is not one JSON object is reported, not raised, and every field is read through the
typed getters below, which give a default for a missing or mistyped value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._frozen import frozen
from ..errors import SessionFileError

__all__ = ["Line", "as_dict", "as_int", "as_list", "as_str", "read_json", "read_lines"]

_CHUNK = 1 << 20


@frozen
class Line:
    """One line of a JSON Lines file: its number and its object, or why it has none."""

    number: int
    value: dict[str, Any] | None
    problem: str = ""


def _parse(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except RecursionError:
        return None, "nested too deep"
    except ValueError:
        return None, "not valid JSON (truncated?)"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    return value, ""


def _skip_rest(handle: Any) -> None:
    """Read on to the end of the current line, a chunk at a time, keeping nothing."""
    while True:
        chunk = handle.readline(_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return


def read_lines(path: Path, max_line_bytes: int) -> Iterator[Line]:
    """Every non-blank line of ``path`` as a ``Line``; ``SessionFileError`` if unreadable."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise SessionFileError(f"cannot read the file: {exc}", path=str(path)) from exc
    with handle:
        number = 0
        while True:
            raw = handle.readline(max_line_bytes + 1)
            if not raw:
                return
            number += 1
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                _skip_rest(handle)
                yield Line(number, None, f"longer than the limit of {max_line_bytes} bytes")
                continue
            if not raw.strip():
                continue
            value, problem = _parse(raw)
            yield Line(number, value, problem)


def read_json(path: Path, max_bytes: int) -> dict[str, Any] | None:
    """The JSON object in the file ``path``, or ``None`` when it is missing, too long or not one."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError:
        return None
    if len(raw) > max_bytes:
        return None
    return _parse(raw)[0]


def as_str(value: Any, default: str = "") -> str:
    """``value`` when it is text, else ``default``."""
    return value if isinstance(value, str) else default


def as_int(value: Any, default: int = 0) -> int:
    """``value`` when it is a whole number (not a bool), else ``default``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return default


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []
