"""The public form of every Server-Sent Event, and a JSON Schema for each event type.

Every event's data is a JSON object whose ``type`` names the event (the SSE ``event:`` field
says the same) and whose ``schema_version`` is the version of this public form
(``SCHEMA_VERSION``): a client checks the version before it relies on a field. Live turn events
carry their fields as ``session.stream()`` gives them (``kind`` too); a log entry travels as
``entry`` with its ``seq`` and ``kind`` and the entry itself in its public form: every field of
its dataclass by name (``codec.encode``), never the stored form a database or session file
holds (which packs some kinds and leaves defaults out). The schemas are made from the package's
own types (``json_schema``), so they cannot drift from what is sent; ``GET /openapi.json``
holds them under ``components.schemas`` as ``Event.<type>``, and each entry kind as
``Entry.<kind>``.

Version 2: ``entry`` holds the public form of the entry (version 1 sent the stored form and
its stored ``version``).
"""

from __future__ import annotations

import functools
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
from ..log import LogEntry
from .json_schema import schema_of

__all__ = ["EVENT_TYPES", "SCHEMA_VERSION", "entry_schemas", "event_schemas"]

#: The version of the public event form; it grows when a field changes meaning or goes away.
SCHEMA_VERSION = 2

_LIVE = (
    ApprovalNeeded,
    ContextAdmitted,
    ProviderRetry,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    TurnFinished,
)


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


def _kind(schema: dict[str, Any]) -> str:
    return str(schema["properties"]["kind"]["enum"][0])


def _live(cls: type) -> tuple[str, dict[str, Any]]:
    fields = schema_of(cls)
    return _kind(fields), _envelope(_kind(fields), fields["properties"], fields["required"])


@functools.cache
def entry_schemas() -> dict[str, dict[str, Any]]:
    """Entry kind → the JSON Schema of its public form (every log entry kind)."""
    found = (schema_of(cls) for cls in typing.get_args(LogEntry))
    return {_kind(schema): schema for schema in found}


_ERROR = {
    "type": "object",
    "required": ["type", "message", "retryable"],
    "properties": {
        "type": {"type": "string"},
        "message": {"type": "string"},
        "retryable": {"type": "boolean"},
    },
}


@functools.cache
def event_schemas() -> dict[str, dict[str, Any]]:
    """Event type → the JSON Schema of its data."""
    found = dict(_live(cls) for cls in _LIVE)
    kinds = entry_schemas()
    found["entry"] = _envelope(
        "entry",
        {
            "seq": {"type": "integer", "minimum": 0},
            "kind": {"enum": sorted(kinds)},
            "entry": {"oneOf": [kinds[kind] for kind in sorted(kinds)]},
        },
        ["seq", "kind", "entry"],
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
