"""Models and wire formats: the scripted model, profiles, lowering, real SDK clients."""

from __future__ import annotations

from .base import (
    Model,
    ModelDone,
    ModelEvent,
    ModelProfile,
    ModelTextDelta,
    ModelToolCall,
    complete,
)
from .scripted import ScriptedModel

__all__ = [
    "Model",
    "ModelDone",
    "ModelEvent",
    "ModelProfile",
    "ModelTextDelta",
    "ModelToolCall",
    "ScriptedModel",
    "complete",
]
