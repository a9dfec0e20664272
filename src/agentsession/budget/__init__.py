"""Budget policy: how many tokens a request takes, whether it fits, and how the count learns.

`measure` counts a neutral request part by part (each baseline section, each message, each tool
declaration) plus fixed framing overheads, so the parts always add up to the total and a
rejection can name its biggest contributors. `preflight` rejects a request over budget before
anything is admitted. `BudgetPolicy` holds one runtime's rules: the budget is the smaller of the
configured and the model's window, room is kept for the reply, and provider usage reports
calibrate the counter. Everything here takes plain numbers; which model has which window,
output limit or encoding is the providers' knowledge, passed in by the caller.

Counting is exact where an OpenAI encoding can be built offline (`exact_counter`; the rank files
are found and verified in `_tiktoken`); every other case uses `EstimateCounter`, which prices
text piece by piece the way BPE tokenizers split it, starts on the safe side for prose and code,
and scales itself toward the input-token figures providers report.
"""

from __future__ import annotations

from ..config import Config
from ..errors import BudgetExceededError, UsageError
from ..log.usage_check import MAX_TOKENS
from ..request import Request
from . import _tiktoken
from ._estimate import EstimateCounter
from ._tiktoken import TiktokenCounter, exact_counter
from .measuring import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    SECTION_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    TOOL_OVERHEAD,
    Calibratable,
    Measurement,
    TokenCounter,
    measure,
    total_tokens,
)

__all__ = [
    "EXACT_ENCODINGS",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "REQUEST_OVERHEAD",
    "SECTION_OVERHEAD",
    "TOOL_CALL_OVERHEAD",
    "TOOL_OVERHEAD",
    "BudgetPolicy",
    "Calibratable",
    "EstimateCounter",
    "Measurement",
    "TiktokenCounter",
    "TokenCounter",
    "calibrate",
    "counter_for_encoding",
    "default_counter",
    "exact_counter",
    "measure",
    "preflight",
    "total_tokens",
]


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "positive" if minimum > 0 else "non-negative"
        raise UsageError(f"{name} must be a {kind} integer, got {value!r}")
    return value


def preflight(
    request: Request,
    counter: TokenCounter,
    budget: int,
    *,
    reserve: int = 0,
    text: str | None = None,
) -> Measurement:
    """Measure ``request`` and raise `BudgetExceededError` when it exceeds ``budget - reserve``.

    ``reserve`` keeps room for the reply (and for an estimate's error); ``text`` is the user
    input the error carries back. The error names the five biggest contributors, largest first.
    Returns the measurement when the request fits (a total equal to the limit fits).
    """
    _check_int("token budget", budget, 1)
    _check_int("token reserve", reserve, 0)
    measurement = measure(request, counter)
    limit = budget - reserve
    if measurement.total <= limit:
        return measurement
    top = measurement.largest(5)
    named = ", ".join(f"{label} ({tokens:,})" for label, tokens in top)
    room = f"{max(limit, 0):,} tokens"
    if reserve:
        room += f" (budget {budget:,} less reserve {reserve:,} for the reply)"
    raise BudgetExceededError(
        f"the request needs {measurement.total:,} tokens but only {room} are available; "
        f"largest parts: {named}",
        text=text,
        tokens=measurement.total,
        budget=budget,
        contributors=top,
    )


def default_counter() -> EstimateCounter:
    """A fresh calibratable estimate: the counter to use when the model is not known yet."""
    return EstimateCounter()


def calibrate(counter: TokenCounter, request: Request, reported_input_tokens: int) -> None:
    """Calibrate ``counter`` from a provider's input-token figure for ``request``.

    Only the counted text takes part: the fixed overheads and images are taken off both the
    measurement and the report first, so the scale describes text alone. Counters that are not
    `Calibratable` (exact ones) are left alone.
    """
    if not isinstance(counter, Calibratable):
        return
    measurement = measure(request, counter)
    text_estimate = measurement.total - measurement.fixed
    text_reported = reported_input_tokens - measurement.fixed
    if text_estimate > 0 and text_reported > 0:
        counter.calibrate(text_estimate, text_reported)


# --- exact counting with OpenAI's encodings -------------------------------------------------

EXACT_ENCODINGS: tuple[str, ...] = _tiktoken.ENCODINGS
"""The encodings `exact_counter` can build offline: ``o200k_base`` and ``cl100k_base``."""


def counter_for_encoding(
    encoding: str | None, *, fallback: TokenCounter | None = None
) -> TokenCounter:
    """The best counter for a model whose tokenizer is ``encoding``: exact offline, else fallback.

    ``encoding`` is the name of an OpenAI encoding (``"o200k_base"``), or None for a model
    without a published offline tokenizer. ``fallback`` defaults to a fresh `EstimateCounter`;
    pass a shared one to keep its calibration.
    """
    exact = exact_counter(encoding) if encoding else None
    if exact is not None:
        return exact
    return fallback if fallback is not None else EstimateCounter()


# --- the policy -----------------------------------------------------------------------------

_RESERVE_SHARE = 4
"""A derived reserve takes at most a quarter of the budget."""


class BudgetPolicy:
    """One runtime's budget rules over plain numbers: window, reply room, calibration.

    ``context_window`` is the configured budget of one request; a model's own window can only
    make it smaller. ``reserve_output_tokens`` is the room kept for the reply; None derives it
    from the model's output limit (see `reserve`), 0 lets a request fill the budget.
    """

    def __init__(
        self,
        counter: TokenCounter,
        *,
        context_window: int,
        reserve_output_tokens: int | None = None,
    ) -> None:
        self._counter = counter
        self._window = _check_int("context_window", context_window, 1)
        if reserve_output_tokens is not None:
            _check_int("reserve_output_tokens", reserve_output_tokens, 0)
        self._reserve = reserve_output_tokens

    @classmethod
    def from_config(cls, counter: TokenCounter, config: Config) -> BudgetPolicy:
        """The policy of ``config`` (its ``context_window`` and ``reserve_output_tokens``)."""
        return cls(
            counter,
            context_window=config.context_window,
            reserve_output_tokens=config.reserve_output_tokens,
        )

    @property
    def counter(self) -> TokenCounter:
        """The counter every measurement of this policy uses."""
        return self._counter

    def budget(self, model_window: int) -> int:
        """The token budget of one request: the configured window or the model's, if smaller."""
        return min(self._window, _check_int("model window", model_window, 1))

    def reserve(self, *, model_window: int, max_output_tokens: int) -> int:
        """The tokens kept free for the reply of a model with these limits.

        The configured reserve when there is one; otherwise the model's output limit, but at
        least one token and at most a quarter of the budget, so a small configured window
        (a local model's real context) still leaves room for the request.
        """
        if self._reserve is not None:
            return self._reserve
        cap = self.budget(model_window) // _RESERVE_SHARE
        return max(1, min(_check_int("max_output_tokens", max_output_tokens, 1), cap))

    def limit(self, *, model_window: int, max_output_tokens: int) -> int:
        """The tokens a request may take: the budget less the reserve (never below 0)."""
        budget = self.budget(model_window)
        reserve = self.reserve(model_window=model_window, max_output_tokens=max_output_tokens)
        return max(0, budget - reserve)

    def check(
        self,
        request: Request,
        *,
        model_window: int,
        max_output_tokens: int,
        text: str | None = None,
    ) -> Measurement:
        """Measure ``request``; `BudgetExceededError` (carrying ``text``) when it leaves no room.

        A request fits when its total plus the `reserve` is within the `budget`; the error names
        the five biggest contributors, largest first.
        """
        return preflight(
            request,
            self._counter,
            self.budget(model_window),
            reserve=self.reserve(model_window=model_window, max_output_tokens=max_output_tokens),
            text=text,
        )

    def observe(self, request: Request, reported_input_tokens: int) -> None:
        """Calibrate the counter from a provider's input-token figure for ``request``.

        Only a `Calibratable` counter moves; a figure of 0 (not reported) or beyond any real count
        is ignored. The caller skips figures that are not real (a scripted model's).
        """
        if 0 < reported_input_tokens <= MAX_TOKENS:
            calibrate(self._counter, request, reported_input_tokens)

    def __repr__(self) -> str:
        return (
            f"BudgetPolicy({self._counter!r}, context_window={self._window}, "
            f"reserve_output_tokens={self._reserve})"
        )
