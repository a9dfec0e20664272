"""``lower()``: a neutral request to one wire format's body, checked before anything is sent.

Lowering is pure: the same request, format, profile and model give the same dict, byte for byte
once serialised, so the provider's prompt cache sees a stable prefix. ``Request.sources`` never
reaches the output. Tool-call ids are mapped to the format's id rules (``call_ids``). Every body
passes the neutral pairing check and the format's validator (id rules included); a breach raises
``RequestValidationError`` at the neutral message position. Text that cannot be encoded (a lone
surrogate in a log written before replies were repaired on arrival) leaves as U+FFFD: the log is
never rewritten, and the request it holds still goes out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..codec import canonical_json
from ..errors import RequestValidationError
from ..hygiene import has_surrogates, repaired
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

__all__ = ["LOWERINGS", "encodable", "lower", "lower_traced"]

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
    lowered = LOWERINGS[fmt](map_call_ids(encodable(request), fmt), effective, model)
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


def encodable(request: Request) -> Request:
    """``request`` with every lone surrogate as U+FFFD (the same object when it holds none).

    The memoised canonical text of each part (the digest's) is scanned, so a clean request
    costs one check per message.
    """
    messages = request.messages
    dirty = [i for i, m in enumerate(messages) if has_surrogates(canonical_json(m))]
    system_dirty = has_surrogates(canonical_json(request.system))
    tools_dirty = has_surrogates(canonical_json(request.tools))
    if not dirty and not system_dirty and not tools_dirty:
        return request
    fixed = list(messages)
    for index in dirty:
        fixed[index] = repaired(fixed[index])[0]
    return replace(
        request,
        messages=tuple(fixed),
        system=repaired(request.system)[0],
        tools=repaired(request.tools)[0],
    )


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
