"""Models and wire formats: the model protocol, profiles, lowering, real SDK clients.

The offline fake is re-exported for the public API only; nothing here treats it specially.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import (
    STOP_REASONS,
    Model,
    ModelDone,
    ModelEvent,
    ModelProfile,
    ModelTextDelta,
    ModelToolCall,
    Preparable,
    ReplyStopReason,
    complete,
    provider_failure,
)
from .lower import lower, lower_traced
from .profiles import (
    FORMATS,
    OPENAI_ENCODINGS,
    default_profile,
    openai_tokenizer,
    profile_for,
)
from .registry import get_model
from .scripted import ScriptedModel
from .validate import validate

if TYPE_CHECKING:
    from .anthropic_client import AnthropicModel
    from .gemini_client import GeminiModel
    from .openai_client import OpenAIChatModel, OpenAIResponsesModel

#: The SDK clients' modules load with their first use (``get_model`` or the name), not with the
#: package: a program on the scripted model never needs them.
_LAZY = {
    "AnthropicModel": "anthropic_client",
    "GeminiModel": "gemini_client",
    "OpenAIChatModel": "openai_client",
    "OpenAIResponsesModel": "openai_client",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "FORMATS",
    "OPENAI_ENCODINGS",
    "STOP_REASONS",
    "AnthropicModel",
    "GeminiModel",
    "Model",
    "ModelDone",
    "ModelEvent",
    "ModelProfile",
    "ModelTextDelta",
    "ModelToolCall",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "Preparable",
    "ReplyStopReason",
    "ScriptedModel",
    "complete",
    "default_profile",
    "get_model",
    "lower",
    "lower_traced",
    "openai_tokenizer",
    "profile_for",
    "provider_failure",
    "validate",
]
