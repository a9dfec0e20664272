"""Shared fixtures: runtimes on a real SQLite file with a scripted model and a settable clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags


class Clock:
    """A settable clock for the date component."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 1, 1, 12, 0))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
async def make_runtime(
    tmp_path: Path, db_path: Path, clock: Clock
) -> AsyncIterator[Callable[..., ags.Runtime]]:
    """Build runtimes on one SQLite file in tmp_path (each with its own store); closed at the end.

    ``make_runtime(replies)`` uses a fresh ScriptedModel; pass ``model=`` for your own.
    """
    made: list[ags.Runtime] = []

    def make(replies: Any = (), **kwargs: Any) -> ags.Runtime:
        model = kwargs.pop("model", None) or ags.ScriptedModel(replies)
        kwargs.setdefault("store", ags.SQLiteStore(db_path))
        kwargs.setdefault("project_dir", tmp_path)
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("config", ags.Config(retry_base_delay=0))
        runtime = ags.Runtime(model=model, **kwargs)
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        await runtime.close()
