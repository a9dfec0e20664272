"""Built-in components: ``core.agent``, ``core.date`` and ``core.environment``.

``core.agent`` is the application's own instructions (who the agent is), first in every baseline.
``core.date`` keeps host-local calendar-date behaviour (the clock is injectable); a configured
IANA time zone replaces the host zone. ``core.environment`` states the facts the configuration
lists: the working directory (its path goes to the provider), the platform, and whether the
directory is inside a git repository. Each states the full current value so an update never
needs the old one.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from ..errors import UsageError
from .component import ContextComponent, Rendered

__all__ = ["agent_component", "date_component", "environment_component", "is_git_repository"]

AgentInstructions = str | Callable[[], str]


def agent_component(instructions: AgentInstructions) -> ContextComponent:
    """``core.agent``: the application's own instructions, a string or a loader of one."""
    if isinstance(instructions, str):
        text = instructions
        return ContextComponent("core.agent", lambda: text)
    if not callable(instructions):
        raise UsageError("instructions must be a string or a callable returning one")
    return ContextComponent("core.agent", instructions)


Clock = Callable[[], datetime]


def date_component(clock: Clock, timezone: str | None = None) -> ContextComponent:
    """``core.date``: today's date in the host zone, or in ``timezone`` when configured."""
    zone = None
    if timezone is not None:
        # Imported here: only a configured time zone needs the zone database.
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise UsageError(f"unknown time zone {timezone!r}") from exc

    # Sampled before every request: the day's value is kept, so the same object comes back
    # (and is checked once) until the date changes.
    kept: dict[str, Rendered] = {}

    def load() -> Rendered:
        moment = clock()
        if zone is not None:
            moment = moment.astimezone(zone) if moment.tzinfo else moment.replace(tzinfo=zone)
        day = moment.strftime("%A, %Y-%m-%d")
        found = kept.get(day)
        if found is None:
            kept.clear()
            found = Rendered(baseline=f"Today's date: {day}.", update=f"Today's date is now {day}.")
            kept[day] = found
        return found

    return ContextComponent("core.date", load)


def is_git_repository(path: Path) -> bool:
    """Whether ``path`` or one of its parents holds a ``.git`` entry."""
    return any(os.path.exists(place) for place in _git_places(path))


def _exists(place: str) -> bool:
    """``os.path.exists(place)`` without an exception for a missing entry.

    Sampled before every request, and outside a repository each place is missing: ``exists``
    builds and drops a ``FileNotFoundError`` for each, where ``access`` answers ``False``.
    Both follow symlinks and say ``False`` for an entry that cannot be looked up.
    """
    try:
        return os.access(place, os.F_OK)
    except ValueError:  # a NUL in the path: no such entry (``exists`` says so too)
        return False


def _git_places(path: Path) -> list[str]:
    """Where a ``.git`` entry would make ``path`` part of a repository, nearest first."""
    return [os.path.join(p, ".git") for p in (path, *path.parents)]


def environment_component(
    project_dir: Path, facts: Sequence[str] = ("cwd", "platform", "git")
) -> ContextComponent:
    """``core.environment``: the listed facts of working directory, platform, git repository."""
    places = _git_places(project_dir)  # sampled before every request: the paths are made once
    # Only the git answer can change (it is looked up at every sample): one text for each.
    rendered: dict[str, Rendered] = {}

    def load() -> Rendered:
        git = ""
        if "git" in facts:
            git = "yes" if any(map(_exists, places)) else "no"
        found = rendered.get(git)
        if found is not None:
            return found
        lines = []
        if "cwd" in facts:
            lines.append(f"Working directory: {project_dir}")
        if "platform" in facts:
            lines.append(f"Platform: {platform.system().lower()}")
        if git:
            lines.append(f"Is the directory a git repository: {git}")
        text = "\n".join(lines)
        found = rendered[git] = Rendered(f"<environment>\n{text}\n</environment>", text)
        return found

    return ContextComponent("core.environment", load)
