"""What one step of a turn ended with, as a value the turn loop matches exhaustively.

A step — the model's answer committed and its calls settled, or the calls of a stored response
settled when a turn starts from ``tools`` — yields its events and then exactly one outcome, its
last item. The loop decides from the outcome alone: ask the model again, end the turn with a
result, or stop it because the store refused a write. Nothing is passed back through lists
handed in or flags left on the turn.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .._frozen import frozen
from ..events import PromptResult
from ..request import Usage

__all__ = [
    "STEP_OUTCOMES",
    "StepContinue",
    "StepFinished",
    "StepHeld",
    "StepOutcome",
    "StepPaused",
]


@frozen
class StepContinue:
    """Every call of the step ran and its result is settled: the model is asked again."""

    usage: Usage  # the turn's usage so far
    kind: Literal["continue"] = "continue"


@frozen
class StepFinished:
    """The model answered without calls, or the output limit cut its reply: the turn ends."""

    result: PromptResult
    kind: Literal["finished"] = "finished"


@frozen
class StepPaused:
    """A call waits for the user's approval: the turn ends until it is answered."""

    result: PromptResult  # stop reason ``approval_required``, with the waiting approval
    kind: Literal["paused"] = "paused"


@frozen
class StepHeld:
    """The store refused a write: the turn stops, the refused entries kept in memory.

    ``calls_wait`` when the refused write is a response with calls: write-ahead keeps them from
    running until the response is durable (flush, then retry runs them).
    """

    calls_wait: bool
    kind: Literal["held"] = "held"


StepOutcome: TypeAlias = StepContinue | StepFinished | StepPaused | StepHeld
STEP_OUTCOMES = (StepContinue, StepFinished, StepPaused, StepHeld)
