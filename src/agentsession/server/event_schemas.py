"""The public form of every Server-Sent Event, and a JSON Schema for each event type.

Every event's data is a JSON object whose ``type`` names the event (the SSE ``event:`` field
says the same) and whose ``schema_version`` is the version of this public form
(``SCHEMA_VERSION``): a client checks the version before it relies on a field. Live turn events
carry their fields as ``session.stream()`` gives them (``kind`` too, for older clients); a log
entry travels as ``entry`` with its ``seq``, ``kind``, stored ``version`` and the entry's
fields. The schemas are made from the package's own event types, so they cannot drift from
what is sent; ``GET /openapi.json`` holds them under ``components.schemas`` as ``Event.<type>``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from ..events import (
    ApprovalNeeded,
    ContextAdmitted,
    ProviderRetry,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    TurnFinished,
)

__all__ = ["EVENT_TYPES", "SCHEMA_VERSION", "event_schemas"]

#: The version of the public event form; it grows when a field changes meaning or goes away.
SCHEMA_VERSION = 1

_LIVE = (
    ApprovalNeeded,
    ContextAdmitted,
    ProviderRetry,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    TurnFinished,
)


def _of(annotation: Any) -> dict[str, Any]:
    """A JSON Schema for a field's type (loose where the type is a nested value)."""
    origin = typing.get_origin(annotation)
    if annotation is str:
        return {"type": "string"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if origin in (tuple, list):
        return {"type": "array"}
    if origin is dict:
        return {"type": "object"}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(annotation))}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_of(arg) for arg in typing.get_args(annotation)]}
    if annotation is type(None):
        return {"type": "null"}
    if dataclasses.is_dataclass(annotation):
        return {"type": "object"}
    return {}


def _envelope(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["type", "schema_version", *required],
        "properties": {
            "type": {"const": name},
            "schema_version": {"type": "integer", "minimum": 1},
            **properties,
        },
    }


def _live(cls: type) -> tuple[str, dict[str, Any]]:
    hints = typing.get_type_hints(cls)
    fields = {f.name: _of(hints[f.name]) for f in dataclasses.fields(cls)}
    name = str(fields["kind"]["enum"][0])
    return name, _envelope(name, fields, sorted(fields))


_ERROR = {
    "type": "object",
    "required": ["type", "message", "retryable"],
    "properties": {
        "type": {"type": "string"},
        "message": {"type": "string"},
        "retryable": {"type": "boolean"},
    },
}


def event_schemas() -> dict[str, dict[str, Any]]:
    """Event type → the JSON Schema of its data."""
    found = dict(_live(cls) for cls in _LIVE)
    found["entry"] = _envelope(
        "entry",
        {
            "seq": {"type": "integer", "minimum": 0},
            "kind": {"type": "string"},
            "version": {"type": "integer"},
            "entry": {"type": "object"},
        },
        ["seq", "kind", "version", "entry"],
    )
    found["turn_cancelled"] = _envelope("turn_cancelled", {"kind": {"const": "turn_cancelled"}}, [])
    found["turn_abandoned"] = _envelope(
        "turn_abandoned",
        {"dispatch_seq": {"type": "integer"}, "message": {"type": "string"}},
        ["dispatch_seq", "message"],
    )
    found["error"] = _envelope("error", {"error": _ERROR}, ["error"])
    return found


#: Every event type a stream may carry.
EVENT_TYPES = tuple(sorted(event_schemas()))
