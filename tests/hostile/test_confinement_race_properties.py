"""Property: whatever symlinks a project holds and whatever path the model names, the built-in
file tools never read, list or change anything outside the project (without permission)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.tools import ToolContext
from agentsession.tools.builtin import list_files, read_file, write_file

SECRET = "SECRET-OUTSIDE"
SEGMENTS = ["a", "b", "l1", "l2", "..", ".", "f.txt", "secret.txt", "d", "new.txt", ""]
LINK_TARGETS = ["OUT", "OUT/secret.txt", "OUT/d", "..", "../..", "a", "l1", "a/f.txt", "."]


def build(root: Path, links: list[tuple[str, str]]) -> tuple[Path, Path]:
    project = root / "project"
    outside = root / "outside"
    (project / "a").mkdir(parents=True)
    (project / "a" / "f.txt").write_text("inside\n")
    (outside / "d").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    (outside / "d" / "secret.txt").write_text(SECRET)
    for where, target in links:
        link = project / where
        if not os.path.lexists(link):
            link.symlink_to(target.replace("OUT", str(outside)))
    return project, outside


def outside_state(outside: Path) -> list[tuple[str, str]]:
    return sorted(
        (str(p.relative_to(outside)), p.read_text() if p.is_file() else "/")
        for p in outside.rglob("*")
    )


paths = st.one_of(
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5).map("/".join),
    st.sampled_from(["OUT/secret.txt", "OUT/d", "OUT", "~", "/"]),
)
links = st.lists(
    st.tuples(st.sampled_from(["l1", "l2", "a/l1", "a/b"]), st.sampled_from(LINK_TARGETS)),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(links=links, path=paths, recursive=st.booleans())
def test_no_path_and_no_symlink_leads_a_tool_outside(
    links: list[tuple[str, str]], path: str, recursive: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        project, outside = build(Path(folder), links)
        before = outside_state(outside)
        named = path.replace("OUT", str(outside))
        context = ToolContext(project)
        outputs = [
            read_file.fn(named, context=context),
            list_files.fn(named, recursive, context=context),
            write_file.fn(named, "written\n", context=context),
            write_file.fn(f"{named}/new.txt", "written\n", context=context),
        ]
        texts = [output if isinstance(output, str) else output.content for output in outputs]
        for text in texts:
            assert SECRET not in text
        listing = texts[1] if isinstance(outputs[1], str) else ""  # errors echo the path
        for line in listing.splitlines():  # an entry of the outside folder, not a link's text
            assert " -> " in line or line.split("/")[-1] != "secret.txt", texts[1]
        assert outside_state(outside) == before
