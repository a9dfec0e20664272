"""A tool function's docstring split into its description and its ``Args:`` entries."""

from __future__ import annotations

import re

__all__ = ["parse_docstring"]


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and the ``Args:`` entries."""
    lines = doc.splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in lines:
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            if stripped.endswith(":") and " " not in stripped:  # next section (Returns:, …)
                in_args = False
                continue
            match = re.match(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", stripped)
            if match and line.startswith((" ", "\t")) and len(line) - len(line.lstrip()) <= 4:
                current = match.group(1)
                args[current] = match.group(2)
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
            continue
        summary.append(line)
    return "\n".join(summary).strip(), args
