"""JSON text from the standard library's C encoder, built once per thread instead of per call.

``JSONEncoder.encode`` builds a C encoder for every value it encodes, which costs more than
encoding a small value; the package encodes several at every step (``one_shot``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["one_shot"]


#: The C encoder ``json`` builds afresh inside every ``JSONEncoder.encode`` (absent: none).
_C_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)


class _Prepared(threading.local):
    """One thread's C encoder for one set of ``JSONEncoder`` settings, and its circle check."""

    def __init__(self, settings: json.JSONEncoder) -> None:
        self.markers: dict[int, Any] = {}
        self.run = _C_MAKE_ENCODER(
            self.markers if settings.check_circular else None,
            settings.default,
            _text_encoder(settings),
            settings.indent,
            settings.key_separator,
            settings.item_separator,
            settings.sort_keys,
            settings.skipkeys,
            settings.allow_nan,
        )


def _text_encoder(settings: json.JSONEncoder) -> Callable[[str], str]:
    if settings.ensure_ascii:
        return json.encoder.encode_basestring_ascii
    return json.encoder.encode_basestring


def one_shot(settings: json.JSONEncoder) -> Callable[[Any], str]:
    """``settings.encode``, with its C encoder built once per thread instead of at every call.

    ``JSONEncoder.encode`` builds a C encoder for every value it encodes, which costs more than
    encoding a small value; the package encodes several at every step. The text is the same:
    this is the C encoder ``encode`` would build, with the same settings. Its circle check keeps
    the containers being encoded and leaves none behind, also after an error (cleared here).
    """
    if _C_MAKE_ENCODER is None or settings.indent is not None:
        return settings.encode
    prepared = _Prepared(settings)
    text = _text_encoder(settings)

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return text(value)  # what ``encode`` answers for a string
        state = prepared
        try:
            return "".join(state.run(value, 0))
        except BaseException:
            state.markers.clear()
            raise

    return encode
