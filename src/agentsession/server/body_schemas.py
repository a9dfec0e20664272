"""The JSON Schemas of the server's response bodies, for the OpenAPI document.

They go under ``components.schemas``, made from the package's own types where a body is one.

A session's row (``Session``), a page of sessions, approvals, a cancel's answer, the context
view, a request body, a cost summary: each is typed, so a client (and the tests, which check
every response against these) knows every field it gets.
"""

from __future__ import annotations

from typing import Any

from ..events import ApprovalRequest
from ..inspection.annotate import ContextView
from .json_schema import schema_of

__all__ = ["SEARCH", "body_schemas"]

_STRING = {"type": "string"}
_STRINGS = {"type": "array", "items": _STRING}
_MONEY = {"type": ["number", "null"]}

_HIT = {
    "type": "object",
    "required": ["session_id", "title", "seq", "role", "snippet"],
    "properties": {
        "session_id": {"type": "string"},
        "title": {"type": ["string", "null"]},
        "seq": {"type": "integer"},
        "role": {"enum": ["user", "assistant", "tool"]},
        "snippet": {"type": "string"},
    },
}
#: ``GET /search``'s answer.
SEARCH = {
    "type": "object",
    "required": ["query", "hits"],
    "properties": {"query": {"type": "string"}, "hits": {"type": "array", "items": _HIT}},
}


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_SESSION = _object(
    ["id"],
    id=_STRING,
    title={"type": ["string", "null"]},
    created_at=_STRING,
    updated_at=_STRING,
    entries={"type": "integer"},
    message_count={"type": "integer"},
    last_model={"type": ["string", "null"]},
    model={"type": "string", "description": "the model the session talks to"},
    preset={"type": "string", "description": "its permission preset"},
    permission_preset={"type": "string", "description": "the same (earlier releases' name)"},
    skills={**_STRINGS, "description": "skills a prompt that names none takes"},
    workspace={"type": ["string", "null"], "description": "its named workspace, if any"},
    running_here={"type": "boolean"},
    waiting_approvals={"type": "array", "items": _ref("ApprovalRequest")},
)

_COST = _object(
    ["session_id", "total_usd", "requests", "no_price"],
    session_id=_STRING,
    total_usd=_MONEY,
    uncached_usd=_MONEY,
    saved_usd=_MONEY,
    requests={"type": "integer"},
    estimated={"type": "integer", "description": "requests whose usage is a guess"},
    unexplained_misses={"type": "integer"},
    cached_share={"type": ["number", "null"]},
    no_price=_STRINGS,
    misses={"type": "array", "items": {"type": "object"}},
    idle_calls={"type": "array", "items": {"type": "object"}},
    by_model={"type": "object", "additionalProperties": {"type": "object"}},
)


def body_schemas() -> dict[str, dict[str, Any]]:
    """Name → schema of every response body the routes send."""
    return {
        "Session": _SESSION,
        "SessionPage": _object(
            ["sessions", "next_cursor"],
            sessions={"type": "array", "items": _ref("Session")},
            next_cursor={
                "type": ["string", "null"],
                "description": "pass as ?cursor= for the next page; null on the last",
            },
        ),
        "ApprovalRequest": schema_of(ApprovalRequest),
        "Approvals": _object(
            ["waiting", "answered"],
            waiting={"type": "array", "items": _ref("ApprovalRequest")},
            answered=_STRINGS,
        ),
        "Answered": _object(["waiting", "answered"], waiting=_STRINGS, answered=_STRINGS),
        "Cancelled": _object(
            ["cancelled"], cancelled={"const": True}, requested={"type": "boolean"}
        ),
        "Context": _object(
            ["session_id", "context"], session_id=_STRING, context=schema_of(ContextView)
        ),
        "RequestBody": _object(
            ["session_id", "format", "request"],
            session_id=_STRING,
            format=_STRING,
            request={"type": "object"},
        ),
        "Cost": _COST,
        "Status": _object(["status"], status=_STRING),
        "NotReady": _object(["status", "reason"], status={"const": "not_ready"}, reason=_STRING),
    }
