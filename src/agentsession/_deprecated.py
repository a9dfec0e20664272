"""Deprecated names of ``Session``, kept working for a while; each warns (``DeprecationWarning``).

``resume()`` did what ``retry()`` does (continue a stopped turn), and ``pending`` did not say what
it counts: the settled names are ``retry()`` and ``unflushed_entries``. docs/decisions.md
records each rename.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .events import PromptResult

__all__ = ["DeprecatedSessionNames"]


def _warn(old: str, new: str) -> None:
    warnings.warn(f"Session.{old} is deprecated; use Session.{new}", DeprecationWarning, 3)


class DeprecatedSessionNames:
    """The old names, each forwarding to the settled one."""

    @property
    def unflushed_entries(self) -> int:  # pragma: no cover - Session defines it
        raise NotImplementedError

    async def retry(self) -> PromptResult:  # pragma: no cover - Session defines it
        raise NotImplementedError

    @property
    def pending(self) -> int:
        """Deprecated alias of ``unflushed_entries``."""
        _warn("pending", "unflushed_entries")
        return self.unflushed_entries

    async def resume(self) -> PromptResult:
        """Deprecated alias of ``retry()``."""
        _warn("resume()", "retry()")
        return await self.retry()
