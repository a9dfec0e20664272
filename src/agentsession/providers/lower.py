"""``lower()``: a neutral request to one wire format's body, checked before anything is sent.

Lowering is pure: the same request, format, profile and model give the same dict, byte for byte
once serialised, so the provider's prompt cache sees a stable prefix. ``Request.sources`` never
reaches the output. Tool-call ids are mapped to the format's id rules (``call_ids``). Every body
passes the neutral pairing check and the format's validator (id rules included); a breach raises
``RequestValidationError`` at the neutral message position.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import RequestValidationError
from ..request import Request
from ._lowering import Lowered, WireViolation, check_history
from .anthropic_messages import lower_anthropic
from .base import ModelProfile
from .call_ids import map_call_ids
from .gemini import lower_gemini
from .openai_chat import lower_openai_chat
from .openai_responses import lower_openai_responses
from .profiles import default_profile
from .validate import VALIDATORS

__all__ = ["LOWERINGS", "lower", "lower_traced"]

LOWERINGS: dict[str, Callable[[Request, ModelProfile, str | None], Lowered]] = {
    "openai-chat": lower_openai_chat,
    "openai-responses": lower_openai_responses,
    "anthropic-messages": lower_anthropic,
    "gemini": lower_gemini,
}


def lower_traced(
    request: Request,
    fmt: str,
    *,
    profile: ModelProfile | None = None,
    model: str | None = None,
) -> Lowered:
    """Like ``lower()``, also returning which neutral message each wire message came from."""
    base = default_profile(fmt)  # raises UnknownFormatError
    effective = profile if profile is not None else base
    check_history(request, fmt)
    # ids are mapped to the format's rules here, never in the log: another provider's ids
    # (``functions.add:0``, 100 characters) must not refuse every later request
    lowered = LOWERINGS[fmt](map_call_ids(request, fmt), effective, model)
    try:
        VALIDATORS[fmt](lowered.body, effective)
    except WireViolation as exc:
        wire = exc.position
        if wire is None or not 0 <= wire < len(lowered.origins):
            raise
        origin = lowered.origins[wire]
        where = "the baseline" if origin < 0 else f"request message {origin}"
        raise RequestValidationError(
            f"{exc.detail} (wire message {wire}, from {where})",
            fmt=fmt,
            position=origin if origin >= 0 else None,
        ) from exc
    return lowered


def lower(
    request: Request,
    fmt: str,
    *,
    profile: ModelProfile | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """Lower ``request`` into the body of wire format ``fmt``.

    The result is the keyword arguments of the official SDK's create call, minus streaming
    flags; it is validated before it is returned.

    Args:
        request: The neutral request (``session.preview_request()``, an inspected request).
        fmt: ``"openai-chat"``, ``"openai-responses"``, ``"anthropic-messages"`` or
            ``"gemini"``.
        profile: Shapes the lowering (default: the format's conservative profile).
        model: The model name to include in the body, when given.

    Raises:
        UnknownFormatError: ``fmt`` is not a known wire format.
        RequestValidationError: The lowered body breaks the format's rules.
    """
    return lower_traced(request, fmt, profile=profile, model=model).body
