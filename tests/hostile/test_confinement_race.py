"""The check-then-open race: a project folder swapped for a symlink to outside, 1,000 times per
file tool, never leads a built-in tool outside the project.

Two ways, each asserting zero escapes (never a proportion, so machine load cannot decide it):
- the swap is made deterministically right after the path check of every call (the worst
  moment, every time), by a ``ToolContext`` whose ``resolve`` swaps once it has resolved;
- a second, real process swaps the folder back and forth as fast as it can while the tools run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentsession.tools import Tool, ToolContext
from agentsession.tools.builtin import list_files, read_file, write_file

from ..scenario import make_project

TRIES = 1000
SECRET = "SECRET-OUTSIDE-CONTENT"
MARKER = "outside-only-marker.txt"


@dataclass(frozen=True)
class Layout:
    project: Path
    outside: Path

    @property
    def sub(self) -> Path:
        return self.project / "sub"

    def outside_untouched(self) -> bool:
        names = sorted(p.name for p in self.outside.iterdir())
        return names == sorted(["file.txt", MARKER]) and (
            (self.outside / "file.txt").read_text() == SECRET
        )


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    project = make_project(tmp_path)
    (project / "sub").mkdir()
    (project / "sub" / "file.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file.txt").write_text(SECRET)
    (outside / MARKER).write_text(SECRET)
    return Layout(project, outside)


def swap_in_link(layout: Layout) -> None:
    """``sub`` becomes a symlink to the outside folder (the real one is kept as ``held``)."""
    held = layout.project / "held"
    if held.exists():
        shutil.rmtree(held)
    layout.sub.rename(held)
    layout.sub.symlink_to(layout.outside, target_is_directory=True)


def swap_back(layout: Layout) -> None:
    held = layout.project / "held"
    if layout.sub.is_symlink():
        layout.sub.unlink()
    elif layout.sub.exists():
        shutil.rmtree(layout.sub)
    if held.exists():
        held.rename(layout.sub)
    else:
        layout.sub.mkdir()
        (layout.sub / "file.txt").write_text("inside\n")


@dataclass(frozen=True)
class SwapAfterCheck(ToolContext):
    """Swaps ``sub`` for a symlink to outside right after each path check."""

    layout: Layout | None = None

    def resolve(self, path: str) -> Path:
        target = super().resolve(path)
        assert self.layout is not None
        swap_in_link(self.layout)
        return target


CALLS: list[tuple[Tool, dict[str, object]]] = [
    (read_file, {"path": "sub/file.txt"}),
    (list_files, {"path": "sub"}),
    (write_file, {"path": "sub/file.txt", "content": "written by the tool\n"}),
]


def escaped(layout: Layout, content: str) -> bool:
    return SECRET in content or MARKER in content or not layout.outside_untouched()


@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=[t.name for t, _ in CALLS])
async def test_a_swap_right_after_the_check_never_leads_outside(
    layout: Layout, tool: Tool, arguments: dict[str, object]
) -> None:
    context = SwapAfterCheck(layout.project, layout=layout)
    escapes = 0
    refused = 0
    for _ in range(TRIES):
        outcome = await tool.invoke(dict(arguments), context=context)
        escapes += escaped(layout, outcome.content)
        refused += "replaced by a symlink" in outcome.content
        swap_back(layout)
    assert escapes == 0
    # Every call met the swap after its check, so every one was refused: the race was real.
    assert refused == TRIES


SWAPPER = textwrap.dedent(
    """
    import os, shutil, sys
    project, outside, stop = sys.argv[1:4]
    sub, held = os.path.join(project, "sub"), os.path.join(project, "held")
    print("ready", flush=True)
    while not os.path.exists(stop):
        for step in range(4):
            try:
                if step == 0:
                    os.rename(sub, held)
                elif step == 1:
                    os.symlink(outside, sub)
                elif step == 2:
                    os.unlink(sub) if os.path.islink(sub) else shutil.rmtree(sub)
                else:
                    os.rename(held, sub)
            except OSError:
                pass
    """
)


@pytest.fixture
def swapper(layout: Layout, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    stop = tmp_path / "stop"
    process = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(layout.project), str(layout.outside), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    yield process
    stop.touch()
    try:
        process.wait(timeout=60)
    finally:
        process.kill()
        process.wait()
        process.stdout.close()


@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=[t.name for t, _ in CALLS])
async def test_a_second_process_swapping_the_folder_never_leads_outside(
    layout: Layout, swapper: subprocess.Popen[str], tool: Tool, arguments: dict[str, object]
) -> None:
    context = ToolContext(layout.project)
    escapes = [
        escaped(layout, (await tool.invoke(dict(arguments), context=context)).content)
        for _ in range(TRIES)
    ]
    assert swapper.poll() is None, "the swapping process must still be running"
    assert sum(escapes) == 0


# -- hard links ---------------------------------------------------------------------------------


async def test_a_hard_link_is_read_as_the_file_and_a_write_replaces_only_the_projects_name(
    layout: Layout,
) -> None:
    link = layout.project / "linked.txt"
    try:
        os.link(layout.outside / "file.txt", link)
    except OSError as exc:  # e.g. a project on another file system
        pytest.skip(f"cannot make a hard link here: {exc}")
    context = ToolContext(layout.project)
    read = await read_file.invoke({"path": "linked.txt"}, context=context)
    assert read.content.startswith(SECRET)  # the decision: an existing hard link is the file
    written = await write_file.invoke({"path": "linked.txt", "content": "new\n"}, context=context)
    assert not written.is_error
    assert link.read_text() == "new\n"
    assert (layout.outside / "file.txt").read_text() == SECRET
    assert os.stat(link).st_ino != os.stat(layout.outside / "file.txt").st_ino
