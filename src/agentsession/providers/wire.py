"""The body a request goes out as: the JSON the official SDK puts on the wire, for display.

A session's provider call carries more than the lowered request: the cache controls its model's
profile supports (``prompt_cache_key``, breakpoints, a lifetime, diagnostics; see
``cache_controls``) and the SDK's streaming flags; the SDK then moves a few keys (Anthropic's
``betas`` become a header; Gemini's keyword arguments become its REST body). ``controlled`` is
the one function the SDK clients call to build what they pass; ``sent_body`` adds what the SDK
adds, so the request display (``agentsession request``, the server's ``/request``,
``session.preview_body``) shows the bytes that were sent, not an approximation of them.
"""

from __future__ import annotations

from typing import Any

from ..request import Request
from .base import ModelProfile
from .cache_controls import CacheControls, apply_cache_controls
from .lower import lower
from .validate import validate

__all__ = ["controlled", "sent_body"]


def controlled(
    request: Request,
    fmt: str,
    profile: ModelProfile,
    model: str | None,
    controls: CacheControls | None,
) -> dict[str, Any]:
    """The keyword arguments of the SDK call: the lowered body with ``controls`` added."""
    body = lower(request, fmt, profile=profile, model=model)
    if controls is None:
        return body
    body = apply_cache_controls(body, fmt, profile, controls, request)
    validate(body, fmt, profile)
    return body


def sent_body(
    request: Request,
    fmt: str,
    *,
    profile: ModelProfile,
    model: str | None,
    controls: CacheControls | None,
    streaming: bool = True,
) -> dict[str, Any]:
    """The JSON body the SDK sends for ``request`` (with ``controls``), as it is on the wire."""
    return on_the_wire(controlled(request, fmt, profile, model, controls), fmt, streaming)


def on_the_wire(body: dict[str, Any], fmt: str, streaming: bool = True) -> dict[str, Any]:
    """The HTTP body the SDK makes of the keyword arguments ``body`` (see the clients)."""
    match fmt:
        case "openai-chat":
            flags = {"stream": True, "stream_options": {"include_usage": True}}
            return {**body, **flags} if streaming else body
        case "openai-responses":
            return {**body, "stream": True} if streaming else body
        case "anthropic-messages":
            sent = {k: v for k, v in body.items() if k != "betas"}  # a header, not the body
            return {**sent, "stream": True} if streaming else sent
        case "gemini":
            return _gemini_rest(body)
        case _:
            return body


def _gemini_rest(body: dict[str, Any]) -> dict[str, Any]:
    """The REST body ``google-genai`` makes of ``generate_content`` arguments.

    ``model`` is part of the URL. Where the SDK is missing or its private converter changed,
    the arguments themselves.
    """
    try:
        from google.genai import Client, _common, types
        from google.genai.models import _GenerateContentParameters_to_mldev as to_rest
    except ImportError:
        return body
    try:
        client = Client(api_key="display-only")  # makes no call
        params = types._GenerateContentParameters(**body)
        rest: dict[str, Any] = to_rest(client._api_client, params, None, params)
    except Exception:  # a private converter: any change in the SDK shows the arguments
        return body
    for key in ("_url", "_query", "config"):
        rest.pop(key, None)
    converted: dict[str, Any] = _common.encode_unserializable_types(_common.convert_to_dict(rest))
    return converted
