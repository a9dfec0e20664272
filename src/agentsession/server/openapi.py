"""The OpenAPI document of the server (``GET /openapi.json``).

The paths are written out by hand, so the document says exactly what the server promises (SSE
ids are log seqs, errors have a stable ``type``); the bodies' and events' schemas are made from
the package's own types (``body_schemas``, ``event_schemas``). The tests check every response
and every event they get against this document.
"""

from __future__ import annotations

from typing import Any

from .body_schemas import SEARCH, body_schemas
from .event_schemas import EVENT_TYPES, entry_schemas, event_schemas

__all__ = ["openapi_document"]

_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
_ERROR = {"$ref": "#/components/schemas/Error"}
_SESSION = {"$ref": "#/components/schemas/Session"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


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
        "403": _json(
            _ERROR,
            "a host name the server does not serve, another page's Origin, or a permission"
            " preset the server does not let clients choose (allowed_presets names those it does)",
        ),
        "404": _json(_ERROR, "no such session (or not the caller's)"),
        "409": _json(_ERROR, "the session is busy or driven by another process"),
        "413": _json(_ERROR, "the request body is too large"),
        "415": _json(_ERROR, "a state-changing request must say Content-Type: application/json"),
        "422": _json(_ERROR, "over the session's budget or context window"),
        "500": _json(_ERROR, "an internal error"),
        "502": _json(_ERROR, "the model's provider failed"),
        "503": {
            "description": "the store or the provider is unavailable for now (retryable); past"
            " the process's connection cap, before any route, a plain-text Service Unavailable",
            "content": {
                "application/json": {"schema": _ERROR},
                "text/plain": {"schema": {"type": "string"}},
            },
        },
    }
    return {"summary": summary, "responses": {**responses, **errors}, **more}


def _body(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    # A field the route does not take is refused (400), so a misspelt one is never ignored.
    closed = {**schema, "additionalProperties": False}
    return {"required": required, "content": {"application/json": {"schema": closed}}}


_DECISION = {
    "type": "object",
    "additionalProperties": False,
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
                "List sessions, most recently updated first, one page at a time",
                {"200": _json(_ref("SessionPage"))},
                parameters=[
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 500},
                    },
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
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
                            "model": {
                                "type": "string",
                                "description": "a model the server's configuration offers",
                            },
                            "preset": {
                                "type": "string",
                                "description": "a permission preset the server lets clients"
                                " choose (403 otherwise)",
                            },
                            "skills": {
                                "type": "array",
                                "items": {"type": "string"},
                                "description": "skills a prompt that names none takes",
                            },
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
                "Rename, or change the model or the permission preset (idle only: 409 during"
                " a turn; recorded in the log, the next request tells the model)",
                {"200": _json(_SESSION)},
                requestBody=_body(
                    {
                        "type": "object",
                        "minProperties": 1,
                        "properties": {
                            "title": {"type": "string"},
                            "preset": {"type": "string"},
                            "model": {"type": "string"},
                        },
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
                            "after": {"type": "integer", "minimum": -1},
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
                {
                    "200": _sse(
                        "log entries as event 'entry', each with its seq as the SSE id;"
                        " turn_finished after each turn's answer; while a turn runs on this"
                        " process, its live events (no id) and turn_cancelled; on PostgreSQL"
                        " its text_delta events (no id) from any process; turn_abandoned"
                        " when the process running a step is gone; error when the store fails"
                    )
                },
            ),
        },
        "/sessions/{id}/approvals": {
            "parameters": [_ID],
            "get": _op("Tool calls waiting for approval", {"200": _json(_ref("Approvals"))}),
        },
        "/sessions/{id}/approvals/{call_id}": {
            "parameters": [
                _ID,
                {"name": "call_id", "in": "path", "required": True, "schema": {"type": "string"}},
            ],
            "post": _op(
                "Approve or deny one waiting call (kept until resume)",
                {"200": _json(_ref("Answered"))},
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
                    "200": _json(_ref("Cancelled"), "cancelled here"),
                    "202": _json(
                        _ref("Cancelled"), "the process running it was asked to cancel it"
                    ),
                },
            ),
        },
        "/sessions/{id}/input": {
            "parameters": [_ID],
            "post": _op(
                "Steer the running turn or queue a prompt after it (idle: starts the turn)",
                {"202": _json({"$ref": "#/components/schemas/InputAccepted"}, "accepted")},
                requestBody=_body(
                    {
                        "type": "object",
                        "required": ["text", "mode"],
                        "properties": {
                            "text": {"type": "string"},
                            "mode": {"type": "string", "enum": ["steer", "queue"]},
                        },
                    }
                ),
            ),
        },
        "/sessions/{id}/context": {
            "parameters": [_ID],
            "get": _op("The next request annotated", {"200": _json(_ref("Context"))}),
        },
        "/sessions/{id}/request": {
            "parameters": [
                _ID,
                {"name": "format", "in": "query", "schema": {"type": "string"}},
                {"name": "step", "in": "query", "schema": {"type": "integer"}},
            ],
            "get": _op(
                "The exact request, neutral or in a wire format",
                {"200": _json(_ref("RequestBody"))},
            ),
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
                {"200": _json(_ref("Cost"))},
            ),
        },
    }


def _open(summary: str, ok: dict[str, Any], **more: dict[str, Any]) -> dict[str, Any]:
    """A route that needs no token: still refused for a host name or page it does not serve."""
    refused = _json(_ERROR, "a host name the server does not serve, or another page's Origin")
    return {"get": {"summary": summary, "responses": {"200": ok, **more, "403": refused}}}


def _health_paths() -> dict[str, Any]:
    status, not_ready = _ref("Status"), _ref("NotReady")
    page = {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}}
    asset = {
        "description": "the file",
        "content": {"text/javascript": {}, "text/css": {}, "text/markdown": {}},
    }
    return {
        # The probes answer whatever the Host (a load balancer names a process by its address).
        "/healthz": {
            "get": {"summary": "The process answers", "responses": {"200": _json(status)}}
        },
        "/readyz": {
            "get": {
                "summary": "The store answers and its schema is current",
                "responses": {"200": _json(status), "503": _json(not_ready, "not ready")},
            }
        },
        "/docs": _open("This reference as an HTML page", page),
        "/": _open("The web UI", page),
        "/ui/{file}": {
            "parameters": [
                {"name": "file", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
            **_open(
                "A file of the web UI (no token needed: it holds nothing of any session)",
                asset,
                **{
                    "304": {"description": "the file is the one the If-None-Match ETag names"},
                    "404": _json(_ERROR, "no such file"),
                },
            ),
        },
        "/openapi.json": _open(
            "This document", _json({"type": "object", "required": ["openapi", "paths"]})
        ),
        "/search": {
            "parameters": [
                {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                {"name": "limit", "in": "query", "schema": {"type": "integer"}},
            ],
            "get": _op(
                "The caller's messages holding every word, newest first",
                {"200": _json(SEARCH)},
            ),
        },
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
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["type", "message", "retryable"],
                            "properties": {
                                "type": {"type": "string"},
                                "message": {"type": "string"},
                                "retryable": {"type": "boolean"},
                                "lease_expires_at": {"type": "number"},
                                "lease_seconds_left": {"type": "number"},
                                "allowed_presets": {
                                    "type": "array",
                                    "items": {"type": "string"},
                                },
                                "entries": {
                                    "description": "a prompt's 'after' refused: the log's"
                                    " entries after it, as the stream sends them (when few)",
                                    "type": "array",
                                    "items": {"type": "object"},
                                },
                            },
                        }
                    },
                },
                **body_schemas(),
                **{f"Event.{name}": schema for name, schema in event_schemas().items()},
                **{f"Entry.{kind}": schema for kind, schema in entry_schemas().items()},
                "InputAccepted": {
                    "type": "object",
                    "required": ["id", "mode", "state", "turn"],
                    "properties": {
                        "id": {"type": "string", "description": "the input's id"},
                        "mode": {"type": "string", "enum": ["steer", "queue"]},
                        "state": {"type": "string", "enum": ["pending", "delivering"]},
                        "turn": {
                            "type": "string",
                            "enum": ["running", "started", "elsewhere"],
                            "description": (
                                "joins the turn running here, started one here, or was added"
                                " for the process that drives the session"
                            ),
                        },
                    },
                },
            },
        },
        "security": [{"bearer": []}, {}],
        "paths": {**_session_paths(), **_turn_paths(), **_health_paths()},
    }
