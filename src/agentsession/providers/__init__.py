"""Models and wire formats: the scripted model, profiles, lowering, real SDK clients."""

from __future__ import annotations

from .anthropic_client import AnthropicModel
from .base import (
    Model,
    ModelDone,
    ModelEvent,
    ModelProfile,
    ModelTextDelta,
    ModelToolCall,
    complete,
)
from .gemini_client import GeminiModel
from .lower import lower, lower_traced
from .openai_client import OpenAIChatModel, OpenAIResponsesModel
from .profiles import FORMATS, default_profile, profile_for
from .registry import get_model
from .scripted import ScriptedModel
from .validate import validate

__all__ = [
    "FORMATS",
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
    "ScriptedModel",
    "complete",
    "default_profile",
    "get_model",
    "lower",
    "lower_traced",
    "profile_for",
    "validate",
]
