"""The OpenAPI document of the server (``GET /openapi.json``), written out by hand.

The routes are few and their bodies small; a hand-written document says exactly what the
server promises (SSE ids are log seqs, errors have a stable ``type``) without a schema library.
"""

from __future__ import annotations

from typing import Any

from .event_schemas import EVENT_TYPES, event_schemas

__all__ = ["openapi_document"]

_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
_ERROR = {"$ref": "#/components/schemas/Error"}
_SESSION = {"$ref": "#/components/schemas/Session"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _sse(description: str) -> dict[str, Any]:
    """An event stream: each event's data is one of the ``Event.<type>`` schemas."""
    events = [{"$ref": f"#/components/schemas/Event.{name}"} for name in EVENT_TYPES]
    return {
        "description": description,
        "content": {
            "text/event-stream": {
                "schema": {"type": "string"},
                "x-event-data": {"oneOf": events},
            }
        },
    }


def _op(summary: str, responses: dict[str, Any], **more: Any) -> dict[str, Any]:
    errors = {
        "400": _json(_ERROR, "bad request"),
        "401": _json(_ERROR, "no accepted bearer token"),
        "403": _json(_ERROR, "a host name the server does not serve, or another page's Origin"),
        "404": _json(_ERROR, "no such session (or not the caller's)"),
        "409": _json(_ERROR, "the session is busy or driven by another process"),
        "415": _json(_ERROR, "a state-changing request must say Content-Type: application/json"),
    }
    return {"summary": summary, "responses": {**responses, **errors}, **more}


def _body(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


_OBJECT: dict[str, Any] = {"type": "object"}
_DECISION = {
    "type": "object",
    "required": ["approved"],
    "properties": {
        "call_id": {"type": "string"},
        "approved": {"type": "boolean"},
        "always": {"type": "boolean"},
        "note": {"type": "string"},
    },
}
_TURN_STREAM = (
    "The turn's events: live ones (text_delta, tool_call_started, tool_result, approval_needed,"
    " …) without an id; every log entry as event 'entry' with its seq as the SSE id; the last"
    " event is turn_finished (carrying the answer), turn_cancelled or error."
)


def _session_paths() -> dict[str, Any]:
    return {
        "/sessions": {
            "get": _op(
                "List sessions, most recent first (paged)",
                {"200": _json(_OBJECT)},
                parameters=[
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"name": "offset", "in": "query", "schema": {"type": "integer"}},
                ],
            ),
            "post": _op(
                "Create a session",
                {"201": _json(_SESSION, "created")},
                requestBody=_body(
                    {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string"},
                            "workspace": {"type": "string", "description": "a named workspace"},
                        },
                    },
                    False,
                ),
            ),
        },
        "/sessions/import": {
            "post": _op(
                "Import a JSON Lines session file",
                {"201": _json(_SESSION, "imported")},
                requestBody={
                    "required": True,
                    "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                },
            )
        },
        "/sessions/{id}": {
            "parameters": [_ID],
            "get": _op("A session, its waiting approvals", {"200": _json(_SESSION)}),
            "patch": _op(
                "Rename, or change the permission preset (idle only: 409 during a turn;"
                " the next request tells the model)",
                {"200": _json(_SESSION)},
                requestBody=_body(
                    {
                        "type": "object",
                        "minProperties": 1,
                        "properties": {"title": {"type": "string"}, "preset": {"type": "string"}},
                    }
                ),
            ),
            "delete": _op("Delete the session and its log", {"204": {"description": "deleted"}}),
        },
        "/sessions/{id}/fork": {
            "parameters": [_ID],
            "post": _op(
                "Fork at a log seq (default: all)",
                {"201": _json(_SESSION, "forked")},
                requestBody=_body(
                    {"type": "object", "properties": {"at": {"type": "integer"}}}, False
                ),
            ),
        },
        "/sessions/{id}/export": {
            "parameters": [_ID],
            "get": _op(
                "The session file (JSON Lines)",
                {"200": {"description": "OK", "content": {"application/x-ndjson": {}}}},
            ),
        },
    }


def _turn_paths() -> dict[str, Any]:
    return {
        "/sessions/{id}/prompt": {
            "parameters": [_ID],
            "post": _op(
                "Run one prompt; the response is the turn's event stream",
                {"200": _sse(_TURN_STREAM)},
                requestBody=_body(
                    {
                        "type": "object",
                        "required": ["text"],
                        "properties": {
                            "text": {"type": "string"},
                            "skills": {"type": "array", "items": {"type": "string"}},
                        },
                    }
                ),
            ),
        },
        "/sessions/{id}/events": {
            "parameters": [
                _ID,
                {"name": "after", "in": "query", "schema": {"type": "integer"}},
                {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer"}},
            ],
            "get": _op(
                "Replay the log after a seq, then follow it live (never ends by itself)",
                {"200": _sse("log entries as event 'entry', each with its seq as the SSE id")},
            ),
        },
        "/sessions/{id}/approvals": {
            "parameters": [_ID],
            "get": _op("Tool calls waiting for approval", {"200": _json(_OBJECT)}),
        },
        "/sessions/{id}/approvals/{call_id}": {
            "parameters": [
                _ID,
                {"name": "call_id", "in": "path", "required": True, "schema": {"type": "string"}},
            ],
            "post": _op(
                "Approve or deny one waiting call (kept until resume)",
                {"200": _json(_OBJECT)},
                requestBody=_body(_DECISION),
            ),
        },
        "/sessions/{id}/resume": {
            "parameters": [_ID],
            "post": _op(
                "Run a paused turn on, with the decisions given here or answered before",
                {"200": _sse(_TURN_STREAM)},
                requestBody=_body(
                    {
                        "type": "object",
                        "properties": {"decisions": {"type": "array", "items": _DECISION}},
                    },
                    False,
                ),
            ),
        },
        "/sessions/{id}/retry": {
            "parameters": [_ID],
            "post": _op("Finish a turn that did not finish", {"200": _sse(_TURN_STREAM)}),
        },
        "/sessions/{id}/cancel": {
            "parameters": [_ID],
            "post": _op(
                "Cancel the running turn wherever it runs (recorded as cancelled); 409: none",
                {
                    "200": _json(_OBJECT, "cancelled here"),
                    "202": _json(_OBJECT, "the process running it was asked to cancel it"),
                },
            ),
        },
        "/sessions/{id}/context": {
            "parameters": [_ID],
            "get": _op("The next request annotated", {"200": _json(_OBJECT)}),
        },
        "/sessions/{id}/request": {
            "parameters": [
                _ID,
                {"name": "format", "in": "query", "schema": {"type": "string"}},
                {"name": "step", "in": "query", "schema": {"type": "integer"}},
            ],
            "get": _op("The exact request, neutral or in a wire format", {"200": _json(_OBJECT)}),
        },
        "/sessions/{id}/report": {
            "parameters": [_ID],
            "get": _op(
                "The self-contained HTML report",
                {"200": {"description": "OK", "content": {"text/html": {}}}},
            ),
        },
        "/sessions/{id}/cost": {
            "parameters": [_ID],
            "get": _op(
                "What the session cost in USD, from the provider-reported usage",
                {"200": _json(_OBJECT)},
            ),
        },
    }


def _health_paths() -> dict[str, Any]:
    status = {
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"type": "string"}},
    }
    not_ready = {
        "type": "object",
        "required": ["status", "reason"],
        "properties": {"status": {"const": "not_ready"}, "reason": {"type": "string"}},
    }
    page = {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}}
    return {
        "/healthz": {
            "get": {"summary": "The process answers", "responses": {"200": _json(status)}}
        },
        "/readyz": {
            "get": {
                "summary": "The store answers and its schema is current",
                "responses": {"200": _json(status), "503": _json(not_ready, "not ready")},
            }
        },
        "/docs": {"get": {"summary": "This reference as an HTML page", "responses": {"200": page}}},
        "/search": {
            "parameters": [
                {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                {"name": "limit", "in": "query", "schema": {"type": "integer"}},
            ],
            "get": {
                "summary": "The caller's messages holding every word, newest first",
                "responses": {"200": _json(_SEARCH)},
            },
        },
    }


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
_SEARCH = {
    "type": "object",
    "required": ["query", "hits"],
    "properties": {"query": {"type": "string"}, "hits": {"type": "array", "items": _HIT}},
}


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of every route."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "agentsession", "version": "1"},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["type", "message", "retryable"],
                            "properties": {
                                "type": {"type": "string"},
                                "message": {"type": "string"},
                                "retryable": {"type": "boolean"},
                                "lease_expires_at": {"type": "number"},
                            },
                        }
                    },
                },
                **{f"Event.{name}": schema for name, schema in event_schemas().items()},
                "Session": {
                    "type": "object",
                    "required": ["id"],
                    "properties": {
                        "id": {"type": "string"},
                        "title": {"type": ["string", "null"]},
                        "created_at": {"type": "string"},
                        "updated_at": {"type": "string"},
                        "entries": {"type": "integer"},
                        "message_count": {"type": "integer"},
                        "last_model": {"type": ["string", "null"]},
                    },
                },
            },
        },
        "security": [{"bearer": []}, {}],
        "paths": {**_session_paths(), **_turn_paths(), **_health_paths()},
    }
