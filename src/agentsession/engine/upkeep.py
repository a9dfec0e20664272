"""What a session does between turns: the idle decision and a summary prepared ahead.

``SessionUpkeep`` is a part of ``Session`` (mixed in), beside ``SessionCosts``: both act only
while no turn runs (under the session's guard) and bill what they call as side calls.
``Runtime.tend_idle`` and ``Runtime.prepare_compactions`` call these for each session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..ledger.idle import IdleOutcome
from .background import prepare_summary
from .idle import Decide
from .idle import tend as tend_idle_session

if TYPE_CHECKING:
    from ..ledger import Charge
    from ..providers.base import Model
    from .admission import Admitter
    from .deps import SessionDeps
    from .guard import Guard

__all__ = ["SessionUpkeep"]


class SessionUpkeep:
    """``prepare_compaction()`` and the idle decision of a ``Session``."""

    _deps: SessionDeps
    _admitter: Admitter
    _guard: Guard
    _model: Model | None

    if TYPE_CHECKING:

        @property
        def id(self) -> str:
            """The session's id (``Session.id``)."""

        @property
        def model(self) -> Model:
            """The session's model (``Session.model``)."""

        _charges: Callable[[], list[Charge]]

    async def prepare_compaction(self, *, min_tokens: int | None = None) -> bool:
        """Write a summary now, while idle; the next prompt adopts it if nothing changed since.

        Only past ``min_tokens`` in the live request (default: 80% of where a prompt compacts
        by itself). The call is billed at once (a ``side_call``, reason ``"background"``). A
        prompt that arrives meanwhile waits for the summary and adopts it.

        Args:
            min_tokens: The live request's size below which nothing is prepared.

        Returns:
            Whether a summary was prepared.
        """
        return await prepare_summary(
            self._deps, self._guard, self._admitter, self.model, min_tokens
        )

    async def _tend_idle(
        self,
        decide: Decide | None = None,
        pooled: Sequence[float] | None = None,
        *,
        skip_closed: bool = False,
    ) -> IdleOutcome:
        """One idle decision for this session, acted on (``Runtime.tend_idle``).

        ``pooled``: other sessions' gaps, weighed beside this one's own (``None``: those the
        runtime's sessions recorded in its ``GapPool``). ``skip_closed``: do nothing for a
        session the application closed and has not used since (a runtime-wide pass).
        """
        if skip_closed and self._guard.closed:
            return IdleOutcome(self.id, "nothing", "the session was closed")
        await self._guard.settle_dropped()
        args = (self._deps, self._admitter, self._guard, self._model, self._charges)
        if decide is None:
            return await tend_idle_session(self.id, *args, pooled=pooled)
        return await tend_idle_session(self.id, *args, decide, pooled=pooled)
