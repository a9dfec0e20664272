"""mkdocs hook: pages that show a file kept elsewhere in the repository, so it has one source.

Two kinds of line in a page under ``docs/`` are replaced when the site is built, each naming a
file relative to the repository root:

- ``<!-- include: PATH -->`` inserts a Markdown file as part of the page, with its links
  written for the site: ``docs/X`` becomes ``X`` (relative to the including page) and
  ``CHANGELOG.md`` the changelog page. So the README is the site's home.
- ``<!-- show: PATH -->`` shows a file as a fenced code block in the language its suffix
  names. So every example script is shown as CI runs it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DIRECTIVE = re.compile(r"^<!-- (?P<how>include|show): (?P<path>[^ ]+) -->$", re.MULTILINE)
# A Markdown link or image target that points into docs/ or at the changelog.
LINK = re.compile(r"\]\((?P<target>docs/[^)#\s]*|CHANGELOG\.md)(?P<anchor>#[^)\s]*)?\)")
FENCES = {".py": "python", ".md": "markdown", ".toml": "toml", ".sh": "sh", ".json": "json"}


def site_link(target: str, page: str) -> str:
    """The target of a repository link as seen from the site page ``page`` (under docs/)."""
    if target == "CHANGELOG.md":
        target = "docs/changelog.md"
    depth = page.count("/")
    return "../" * depth + target.removeprefix("docs/")


def include(markdown: str, page: str, root: Path = ROOT) -> str:
    """``markdown`` with each directive line replaced by the file it names."""

    def insert(match: re.Match[str]) -> str:
        path = match["path"]
        text = (root / path).read_text(encoding="utf-8")
        if match["how"] == "include":
            return LINK.sub(
                lambda m: f"]({site_link(m['target'], page)}{m['anchor'] or ''})", text
            )
        fence = FENCES.get(Path(path).suffix, "text")
        return f"```{fence}\n{text.rstrip()}\n```"

    return DIRECTIVE.sub(insert, markdown)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """mkdocs calls this for every page before rendering its Markdown."""
    return include(markdown, page.file.src_uri)
