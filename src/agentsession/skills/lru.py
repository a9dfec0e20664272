"""Which skills are loaded: a pure least-recently-used state machine.

At most ``max_loaded`` skills are loaded. Reading a skill that is not loaded loads it and, when
that exceeds the limit, unloads the least recently read ones; reading a loaded skill again only
makes it active. The active skill is the one read last. Every change comes out as ``SkillEvent``
values (``loaded``, ``unloaded``, ``activated``); the session records them, and ``replay`` turns
a recorded sequence back into the same state, so a reopened session continues exactly where the
last one stopped. Replay is forgiving about events that no longer make sense (an unload of a skill
that is not loaded changes nothing) and never raises on recorded data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from .._frozen import frozen
from ..errors import UsageError

__all__ = ["LoadChange", "LoadedSkills", "SkillEvent"]


@frozen
class SkillEvent:
    """One step of the loaded set: ``name`` was loaded, unloaded or made active again."""

    action: Literal["loaded", "unloaded", "activated"]
    name: str
    kind: Literal["skill_event"] = "skill_event"


@frozen
class LoadChange:
    """What one operation did: the events in order, and the active skill afterwards."""

    events: tuple[SkillEvent, ...]
    active: str | None

    @property
    def loaded(self) -> tuple[str, ...]:
        """Names loaded by this operation."""
        return tuple(e.name for e in self.events if e.action == "loaded")

    @property
    def unloaded(self) -> tuple[str, ...]:
        """Names unloaded by this operation, least recently used first."""
        return tuple(e.name for e in self.events if e.action == "unloaded")


class LoadedSkills:
    """The loaded skills, least recently read first; the last one is active."""

    def __init__(self, max_loaded: int = 3) -> None:
        if isinstance(max_loaded, bool) or not isinstance(max_loaded, int) or max_loaded < 1:
            raise UsageError(f"max_loaded must be a positive integer, got {max_loaded!r}")
        self.max_loaded = max_loaded
        self._order: list[str] = []

    @classmethod
    def replay(cls, events: Iterable[SkillEvent], max_loaded: int = 3) -> LoadedSkills:
        """The state a recorded sequence of events leaves behind.

        The result may hold more than ``max_loaded`` skills when the limit was lowered since the
        events were recorded; ``shrink()`` then unloads the excess as new, recordable events.
        """
        state = cls(max_loaded)
        for event in events:
            state._apply(event)
        return state

    @property
    def loaded(self) -> tuple[str, ...]:
        """The loaded skill names, least recently read first."""
        return tuple(self._order)

    @property
    def active(self) -> str | None:
        """The skill read last, or ``None`` when nothing is loaded."""
        return self._order[-1] if self._order else None

    def __contains__(self, name: object) -> bool:
        return name in self._order

    def __len__(self) -> int:
        return len(self._order)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LoadedSkills):
            return NotImplemented
        return self._order == other._order and self.max_loaded == other.max_loaded

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"LoadedSkills({self._order!r}, max_loaded={self.max_loaded})"

    def read(self, name: str) -> LoadChange:
        """Read ``name``: load it, or make it active when it is loaded already.

        Loading beyond ``max_loaded`` unloads the least recently read skills first.
        """
        if not isinstance(name, str) or not name:
            raise UsageError(f"skill name must be a non-empty string, got {name!r}")
        if name in self._order:
            events = [SkillEvent("activated", name)]
        else:
            overflow = len(self._order) + 1 - self.max_loaded
            events = [SkillEvent("unloaded", old) for old in self._order[: max(overflow, 0)]]
            events.append(SkillEvent("loaded", name))
        return self._commit(events)

    def unload(self, name: str) -> LoadChange:
        """Unload ``name`` (nothing happens when it is not loaded)."""
        events = [SkillEvent("unloaded", name)] if name in self._order else []
        return self._commit(events)

    def shrink(self) -> LoadChange:
        """Unload the least recently used skills beyond ``max_loaded`` (after a replay)."""
        overflow = len(self._order) - self.max_loaded
        return self._commit([SkillEvent("unloaded", n) for n in self._order[: max(overflow, 0)]])

    def _commit(self, events: list[SkillEvent]) -> LoadChange:
        for event in events:
            self._apply(event)
        return LoadChange(tuple(events), self.active)

    def _apply(self, event: SkillEvent) -> None:
        if event.name in self._order:
            self._order.remove(event.name)
        if event.action != "unloaded":
            self._order.append(event.name)
