"""The docs site: every page under docs/ is in the nav, and pages that show another file show it.

``make docs`` (``mkdocs build --strict``, in CI's release check) fails on a broken link or a
page missing from the nav as a warning; these tests say which page, without building the site.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import yaml

import agentsession

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
HOOK = DOCS / "hooks" / "include.py"


def nav_pages(entries: object) -> Iterator[str]:
    if isinstance(entries, str):
        yield entries
    elif isinstance(entries, list):
        for entry in entries:
            yield from nav_pages(entry)
    elif isinstance(entries, dict):
        for value in entries.values():
            yield from nav_pages(value)


def site_pages() -> set[str]:
    return {
        path.relative_to(DOCS).as_posix()
        for path in DOCS.rglob("*.md")
        if "hooks" not in path.relative_to(DOCS).parts
    }


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_include_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mkdocs_config() -> dict[str, object]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert isinstance(config, dict)
    return config


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    listed = list(nav_pages(mkdocs_config()["nav"]))
    assert len(listed) == len(set(listed)), "a page is in the nav twice"
    pages = site_pages()
    assert not pages - set(listed), f"pages missing from the nav: {sorted(pages - set(listed))}"
    assert not set(listed) - pages, f"nav entries with no page: {sorted(set(listed) - pages)}"
    assert {"cli.md", "security.md", "server.md", "quickstart.md"} <= pages


def test_the_hook_is_the_one_mkdocs_runs() -> None:
    assert mkdocs_config()["hooks"] == ["docs/hooks/include.py"]


def _links(markdown: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", markdown)


def test_the_home_is_the_readme_with_its_links_written_for_the_site() -> None:
    hook = load_hook()
    home = hook.include((DOCS / "index.md").read_text(encoding="utf-8"), "index.md")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # The README whole, after the page's own comment lines; only link targets differ.
    untargeted = re.compile(r"\]\([^)\s]+\)")
    shown = home[home.index("# agentsession") :]
    assert untargeted.sub("]()", shown).rstrip() == untargeted.sub("]()", readme).rstrip()
    local = [link for link in _links(home) if not re.match(r"[a-z]+:", link)]
    assert local, "the README links to no page of the site"
    for link in local:
        target = link.split("#", 1)[0]
        assert (DOCS / target).is_file(), f"the home links to {link}, not a page of the site"


def test_links_from_a_page_in_a_folder_climb_out_of_it() -> None:
    hook = load_hook()
    assert hook.site_link("docs/security.md", "guides/tools.md") == "../security.md"
    assert hook.site_link("CHANGELOG.md", "index.md") == "changelog.md"


def test_a_script_is_shown_fenced_and_whole(tmp_path: Path) -> None:
    hook = load_hook()
    (tmp_path / "demo.py").write_text("print('hi')\n", encoding="utf-8")
    page = "Before.\n<!-- show: demo.py -->\nAfter.\n"
    assert hook.include(page, "x.md", tmp_path) == "Before.\n```python\nprint('hi')\n```\nAfter.\n"


def test_the_reference_index_names_every_public_name() -> None:
    index = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(?:ags\.)?(\w+)`", index))
    missing = [name for name in agentsession.__all__ if name not in named]
    assert not missing, f"docs/reference/api.md's table does not name {missing}"
