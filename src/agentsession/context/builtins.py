"""Built-in components: ``core.date`` and ``core.environment``.

``core.date`` keeps host-local calendar-date behaviour (the clock is injectable); a configured
IANA time zone replaces the host zone. ``core.environment`` states the working directory, the
platform and whether the directory is inside a git repository. Both state the full current value
so an update never needs the old one.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import UsageError
from .component import ContextComponent, Rendered

__all__ = ["date_component", "environment_component", "is_git_repository"]

Clock = Callable[[], datetime]


def date_component(clock: Clock, timezone: str | None = None) -> ContextComponent:
    """``core.date``: today's date in the host zone, or in ``timezone`` when configured."""
    zone = None
    if timezone is not None:
        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise UsageError(f"unknown time zone {timezone!r}") from exc

    def load() -> Rendered:
        moment = clock()
        if zone is not None:
            moment = moment.astimezone(zone) if moment.tzinfo else moment.replace(tzinfo=zone)
        day = moment.strftime("%A, %Y-%m-%d")
        return Rendered(baseline=f"Today's date: {day}.", update=f"Today's date is now {day}.")

    return ContextComponent("core.date", load)


def is_git_repository(path: Path) -> bool:
    """Whether ``path`` or one of its parents holds a ``.git`` entry."""
    return any((p / ".git").exists() for p in (path, *path.parents))


def environment_component(project_dir: Path) -> ContextComponent:
    """``core.environment``: working directory, platform, git repository or not."""

    def load() -> Rendered:
        git = "yes" if is_git_repository(project_dir) else "no"
        text = (
            f"Working directory: {project_dir}\n"
            f"Platform: {platform.system().lower()}\n"
            f"Is the directory a git repository: {git}"
        )
        return Rendered(baseline=f"<environment>\n{text}\n</environment>", update=text)

    return ContextComponent("core.environment", load)
