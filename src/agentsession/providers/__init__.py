"""Models and wire formats: the model protocol, profiles, lowering, real SDK clients.

The offline fake is re-exported for the public API only; nothing here treats it specially.
"""

from __future__ import annotations

from .anthropic_client import AnthropicModel
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
from .gemini_client import GeminiModel
from .lower import lower, lower_traced
from .openai_client import OpenAIChatModel, OpenAIResponsesModel
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
