"""Every response and event of the HTTP tests checked against the server's OpenAPI document.

``check_response`` finds the documented operation of a response (its path template and
method), requires its status to be documented, and validates a JSON body against the schema
the document gives for that status; an event stream's frames are validated one by one against
``Event.<type>``. The conftest wraps every httpx client's ``send`` in tests/server with it, so
no test can get an undocumented answer past it.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from typing import Any

import httpx

from agentsession.server.openapi import openapi_document

__all__ = ["check_event", "check_response"]


@functools.cache
def _document() -> dict[str, Any]:
    return openapi_document()


@functools.cache
def _templates() -> list[tuple[re.Pattern[str], str]]:
    found = []
    for template in _document()["paths"]:
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template))
        found.append((re.compile(pattern + r"\Z"), template))
    # A fixed segment beats a parameter (``/sessions/import`` before ``/sessions/{id}``).
    return sorted(found, key=lambda item: item[1].count("{"))


def _validate(value: object, schema: dict[str, Any], where: str) -> None:
    jsonschema: Any = importlib.import_module("jsonschema")
    root = {**schema, "components": _document()["components"]}
    try:
        jsonschema.validate(value, root)
    except jsonschema.ValidationError as exc:
        raise AssertionError(f"{where}: {exc.message} at {list(exc.absolute_path)}") from None


def check_event(event: str, data: dict[str, Any]) -> None:
    """One SSE frame's data against the schema of its type."""
    schemas = _document()["components"]["schemas"]
    assert f"Event.{event}" in schemas, f"undocumented event type {event!r}"
    assert data.get("type") == event and isinstance(data.get("schema_version"), int), data
    _validate(data, schemas[f"Event.{event}"], f"event {event}")


def _sse_frames(text: str) -> None:
    for block in text.split("\n\n"):
        event, data = "message", ""
        for line in block.splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].removeprefix(" ")
        if data:
            check_event(event, json.loads(data))


def check_response(response: httpx.Response, *, read: bool) -> None:
    """``response`` against its documented operation (``read``: its body is at hand)."""
    path, method = response.request.url.path, response.request.method.lower()
    template = next((t for pattern, t in _templates() if pattern.match(path)), None)
    if template is None or method not in _document()["paths"][template]:
        return  # not one of the server's routes (another service of a test)
    where = f"{method.upper()} {template} -> {response.status_code}"
    operation = _document()["paths"][template][method]
    documented = operation["responses"].get(str(response.status_code))
    assert documented is not None, f"{where}: status not in the OpenAPI document"
    if not read:
        return
    kind = response.headers.get("content-type", "").split(";")[0]
    content = documented.get("content", {})
    assert kind in content or not response.content, f"{where}: {kind} not documented"
    if kind == "application/json":
        _validate(response.json(), content[kind]["schema"], where)
    elif kind == "text/event-stream":
        _sse_frames(response.text)
