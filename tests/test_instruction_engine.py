"""Instruction files through the real context engine: one change per edit, one removal."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentsession.context.component import ContextComponent
from agentsession.context.engine import ComponentState, diff, fresh_baseline, render_update
from agentsession.instructions import GLOBAL_KEY, InstructionService
from agentsession.log import ComponentChange


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    return repo


def service(project: Path, home: Path) -> InstructionService:
    return InstructionService(project, environ={}, home=home)


def admit(
    state: dict[str, ComponentState], components: Sequence[ContextComponent]
) -> list[ComponentChange]:
    samples = {c.key: asyncio.run(c.sample()) for c in components}
    changes = diff(state, components, samples)
    for change in changes:
        if change.update is None or change.hash is None:
            state.pop(change.key, None)
        else:
            state[change.key] = ComponentState(change.baseline or change.update, change.hash)
    return changes


def test_engine_sees_one_change_per_edit_and_one_removal(home: Path, repo: Path) -> None:
    write(home / ".config/agentsession/AGENTS.md", "global")
    agents = write(repo / "AGENTS.md", "v1")
    nested = write(repo / "pkg/AGENTS.md", "nested v1")
    svc = service(repo, home)
    comps = svc.components()
    baseline, checkpoint, removed = fresh_baseline(
        {}, comps, {c.key: asyncio.run(c.sample()) for c in comps}
    )
    assert [key for key, _ in baseline] == [GLOBAL_KEY, "core.instructions:AGENTS.md"]
    assert removed == ()
    hashes = dict(checkpoint)
    state = {key: ComponentState(text, hashes[key]) for key, text in baseline}
    assert admit(state, svc.components()) == []

    agents.write_text("v2 in full", encoding="utf-8")
    [change] = admit(state, svc.components())
    assert change.key == "core.instructions:AGENTS.md"
    assert change.update is not None and "v2 in full" in change.update
    assert admit(state, svc.components()) == []

    svc.note_read(repo / "pkg/mod.py")
    [joined] = admit(state, svc.components())
    assert joined.key == "core.instructions:pkg/AGENTS.md"
    assert joined.update is not None and "nested v1" in joined.update
    assert admit(state, svc.components()) == []

    # Folding after compaction: a fresh baseline holds every effective file, nested included.
    comps = svc.components()
    folded, _, _ = fresh_baseline(state, comps, {c.key: asyncio.run(c.sample()) for c in comps})
    assert [key for key, _ in folded] == [
        GLOBAL_KEY,
        "core.instructions:AGENTS.md",
        "core.instructions:pkg/AGENTS.md",
    ]

    agents.unlink()
    nested.unlink()
    removals = admit(state, svc.components())
    assert [(c.key, c.update) for c in removals] == [
        ("core.instructions:AGENTS.md", None),
        ("core.instructions:pkg/AGENTS.md", None),
    ]
    texts = {c.key: c.removal_text() for c in comps}
    message = render_update(removals, texts)
    assert message.count("no longer apply") == 2
    assert admit(state, svc.components()) == []
    assert [f.key for f in svc.files()] == [GLOBAL_KEY, "core.instructions:AGENTS.md"]


def test_unreadable_file_keeps_the_admitted_state(home: Path, repo: Path) -> None:
    agents = write(repo / "AGENTS.md", "v1")
    svc = service(repo, home)
    state: dict[str, ComponentState] = {}
    [first] = admit(state, svc.components())
    agents.unlink()
    agents.mkdir()

    assert admit(state, svc.components()) == []
    comps = svc.components()
    folded, _, removed = fresh_baseline(
        state, comps, {c.key: asyncio.run(c.sample()) for c in comps}
    )
    assert folded == ((first.key, first.baseline),)
    assert removed == ()
