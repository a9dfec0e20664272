"""Interim budget policy (replaced by ``budget.BudgetPolicy``)."""

from __future__ import annotations

from .budget import Measurement, TokenCounter, calibrate, preflight
from .request import Request

__all__ = ["BudgetPolicy"]


class BudgetPolicy:
    """The token budget of one runtime: limits, preflight and calibration."""

    def __init__(self, counter: TokenCounter, *, context_window: int) -> None:
        self.counter = counter
        self._window = context_window

    def budget(self, model_window: int) -> int:
        """The budget of one request to a model with ``model_window`` tokens."""
        return min(self._window, model_window)

    def check(
        self, request: Request, *, model_window: int, max_output_tokens: int, text: str | None
    ) -> Measurement:
        """Measure ``request``; ``BudgetExceededError`` when it does not fit."""
        return preflight(request, self.counter, self.budget(model_window), text=text)

    def observe(self, request: Request, reported_input_tokens: int) -> None:
        """Calibrate the estimate from a provider's figure."""
        if reported_input_tokens > 0:
            calibrate(self.counter, request, reported_input_tokens)
